"""GPU enablement: fake GPUs (laptops), the NVIDIA device plugin, or the NVIDIA GPU Operator."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kaistack.declaration import versions
from kaistack.declaration.model.base import LabelValue, Model, Name, Text


class FakeGpuSettings(Model):
    version: Text = Field(default=versions.FAKE_GPU_OPERATOR_VERSION, description="fake-gpu-operator chart version")
    gpu_product: LabelValue = Field(
        default="Tesla-K80", description="GPU model the fake nodes report (their nvidia.com/gpu.product label)"
    )
    gpu_memory_mi_b: int = Field(
        default=11441, gt=0, le=2**31, alias="gpuMemoryMiB", description="Memory of one fake GPU, in MiB"
    )


class TimeSlicing(Model):
    replicas: int = Field(ge=2, le=1024, description="Time-sliced replicas of each GPU")
    rename_by_default: bool = Field(default=False, description="Advertise nvidia.com/gpu.shared instead")
    fail_requests_greater_than_one: bool = Field(default=False, description="Refuse requests for more than 1 replica")


class DevicePluginSettings(Model):
    version: Text = Field(default=versions.DEVICE_PLUGIN_VERSION, description="nvidia-device-plugin chart version")
    gfd: bool = Field(default=True, description="Run GPU feature discovery (the nvidia.com/gpu.* labels KAI reads)")
    time_slicing: TimeSlicing | None = Field(default=None, description="CUDA time-slicing")
    runtime_class_name: Text | None = Field(
        default="nvidia", description="RuntimeClass of the device plugin's pods (none = the runtime's default)"
    )


class GpuOperatorSettings(Model):
    version: Text = Field(default=versions.GPU_OPERATOR_VERSION, description="gpu-operator chart version")
    driver: bool = Field(default=True, description="Install the NVIDIA driver (off on kind and EKS)")
    toolkit: bool = Field(default=True, description="Install the container toolkit (off on kind and EKS)")
    dcgm_exporter: bool = Field(default=True, description="Run the DCGM exporter")
    time_slicing: TimeSlicing | None = Field(default=None, description="CUDA time-slicing")


class GpuConfig(Model):
    mode: Literal["fake", "device-plugin", "gpu-operator", "none"] = Field(description="How GPUs are enabled")
    namespace: Name | None = Field(default=None, description="Namespace of the GPU stack (default by mode)")
    fake: FakeGpuSettings = Field(default=FakeGpuSettings(), description="mode fake")
    device_plugin: DevicePluginSettings = Field(default=DevicePluginSettings(), description="mode device-plugin")
    gpu_operator: GpuOperatorSettings = Field(default=GpuOperatorSettings(), description="mode gpu-operator")

    @property
    def time_slicing(self) -> TimeSlicing | None:
        """The CUDA time-slicing the running mode applies (the other mode's block is ignored)."""
        if self.mode == "device-plugin":
            return self.device_plugin.time_slicing
        if self.mode == "gpu-operator":
            return self.gpu_operator.time_slicing
        return None

    @property
    def time_slicing_key(self) -> str:
        return "gpu.gpuOperator" if self.mode == "gpu-operator" else "gpu.devicePlugin"

    @property
    def release_namespace(self) -> str:
        defaults = {"fake": "gpu-operator", "device-plugin": "nvidia", "gpu-operator": "gpu-operator", "none": ""}
        return self.namespace or defaults[self.mode]
