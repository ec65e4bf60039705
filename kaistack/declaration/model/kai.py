"""The KAI scheduler: version, GPU sharing, placement strategy, default queues, the pre-flight capacity check."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from kaistack.declaration import kai_api, versions
from kaistack.declaration.model.base import Model, Name, Text
from kaistack.declaration.model.queues import DefaultQueues

# The one sharing choice, and what each KAI version makes of it (KAI@v0.17.0 deployments/kai-scheduler/
# values.yaml global.gpuSharing; docs/gpu-sharing/hami/README.md binder.plugins.hamicore). Later KAI names
# them in its global.gpuSharingMode enum: Disabled, NonMemoryEnforced, HamiCore (and NvFractions, which no
# release kaistack can verify has).
SHARING_MODES = {
    "off": "no fractions: pods asking for part of a GPU are refused by KAI's admission (gpuSharing: false)",
    "fractions": "fractions and GPU memory shares, not enforced on the GPU (gpuSharing: true)",
    "isolated": "fractions with GPU memory enforced by HAMi-core (gpuSharing: true + binder hamicore, KAI >= v0.17.0)",
}
_REPLACED = {"gpuSharing": "true -> fractions, false -> off", "memoryIsolation": "true -> isolated"}


class KaiConfig(Model):
    version: Text = Field(default=versions.KAI_VERSION, description="KAI release tag, with the 'v' (e.g. v0.17.0)")
    namespace: Name = Field(default=kai_api.DEFAULT_NAMESPACE, description="Namespace of the KAI release")
    sharing: Literal["off", "fractions", "isolated"] = Field(
        default="fractions",
        description="GPU sharing: off | fractions (memory not enforced) | isolated (HAMi-core enforces GPU memory)",
    )
    placement_strategy: Literal["binpack", "spread"] = Field(default="binpack", description="Node placement strategy")
    # Injected into fractional pods without one; None disables (OpenShift + gpu-operator < v25.10).
    runtime_class_name: Text | None = Field(
        default="nvidia",
        description="RuntimeClass KAI injects into fractional pods (none disables, KAI >= v0.13.0; before v0.16.0 "
        "the binder's reservation pods keep 'nvidia' whatever this says)",
    )
    queue_label_key: Text = Field(default=kai_api.QUEUE_LABEL, description="Label that names a pod's queue")
    # KAI's deviceaccess admission plugin: NVIDIA_VISIBLE_DEVICES=void in containers that ask for no GPU (a
    # CUDA image's own ENV would otherwise hand them every GPU on nodes whose runtime reads it), any other
    # value refused. Pods that set the variable, running pods included, are refused on their next update,
    # and time-sliced `nvidia.com/gpu.shared` containers count as asking for no GPU. Unset, it is on where
    # tenants exist (StackConfig.blocks_nvidia_visible_devices): a tenant's pod is not to be trusted with it.
    block_nvidia_visible_devices: bool | None = Field(
        default=None,
        description="Let KAI set NVIDIA_VISIBLE_DEVICES=void in containers without a GPU request and refuse other "
        "values (KAI >= v0.16.0; default: on when the stack has tenants, unless time slices are renamed)",
    )
    default_queues: DefaultQueues = Field(default=DefaultQueues(), description="KAI's own default queue pair")
    # What `pulumi preview/up` does when the placement checker says declared work stays Pending:
    # fail before creating anything (enforce), log a warning (warn, e.g. an autoscaling cluster), or skip.
    capacity_check: Literal["enforce", "warn", "off"] = Field(
        default="enforce", description="What preview/up does when declared work would stay Pending"
    )
    # The checker has no clock of its own (KAI's are wall-clock budgets it cannot copy): on a large, busy
    # declaration the check can take minutes, and preview/up waits for it. A stopped check is no verdict, so
    # enforce fails and warn warns, saying it was the clock.
    capacity_check_max_seconds: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        allow_inf_nan=False,
        description="Stop the pre-flight capacity check after about this many seconds (unset: run it to the end); "
        "a stopped check is no fit",
    )

    @model_validator(mode="before")
    @classmethod
    def _one_sharing_knob(cls, data: Any) -> Any:
        """The two old knobs could contradict each other; name the one that replaced them."""
        if isinstance(data, dict):
            old = [key for key in _REPLACED if key in data]
            if old:
                how = "; ".join(f"{key}: {_REPLACED[key]}" for key in old)
                raise ValueError(f"{' and '.join(old)} replaced by sharing: off | fractions | isolated ({how})")
            mode = data.get("sharing")
            if isinstance(mode, str) and mode.lower() == "nvfractions":
                raise ValueError(
                    "sharing: NvFractions (global.gpuSharingMode) is in no KAI release kaistack has checked at "
                    "source (newest: v0.17.0); use off | fractions | isolated"
                )
        return data

    @property
    def gpu_sharing(self) -> bool:
        """KAI's global.gpuSharing: fractions and GPU memory requests are admitted."""
        return self.sharing != "off"

    @property
    def memory_isolation(self) -> bool:
        """HAMi-core enforces each pod's share of GPU memory (binder hamicore plugin + HAMi's isolator)."""
        return self.sharing == "isolated"

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        if not re.fullmatch(r"v[0-9]+\.[0-9]+\.[0-9]+", value):
            raise ValueError(f"must be a KAI release tag with the 'v' prefix, like {versions.KAI_VERSION!r}")
        if value in versions.KAI_RETRACTED:
            raise ValueError(f"{value} is retracted upstream; use {versions.KAI_VERSION!r}")
        if value not in versions.KAI_CHARTS:
            known = list(versions.KAI_CHARTS)
            raise ValueError(
                f"{value} is not a KAI release kaistack has checked at source; supported: {known[0]} to {known[-1]} "
                f"(default {versions.KAI_VERSION})"
            )
        return value

    @model_validator(mode="after")
    def _version_features(self) -> KaiConfig:
        """Settings older charts silently ignore (kai.md §1.1; HAMi integration needs v0.17)."""
        tag = versions.kai_tag(self.version)
        if self.memory_isolation and tag < (0, 17, 0):
            raise ValueError(f"sharing: isolated needs KAI >= v0.17.0 (binder hamicore plugin), got {self.version}")
        if self.block_nvidia_visible_devices and tag < (0, 16, 0):
            raise ValueError(
                f"blockNvidiaVisibleDevices needs KAI >= v0.16.0 (global.blockNvidiaVisibleDevices); {self.version} "
                "has no such admission plugin"
            )
        if self.runtime_class_name is None and tag < (0, 13, 0):
            # KAI@v0.12.23 deployments/kai-scheduler/templates/_helpers.tpl:133 `| default "nvidia"`: sprig's
            # default takes an empty string (or a null) as unset; v0.13.0 quotes the value instead.
            raise ValueError(
                f"runtimeClassName: null needs KAI >= v0.13.0; {self.version}'s chart replaces an empty "
                "admission.gpuPodRuntimeClassName with 'nvidia', so fractional pods would still get it"
            )
        if self.queue_label_key != kai_api.QUEUE_LABEL and tag < (0, 16, 0):
            raise ValueError(
                f"queueLabelKey {self.queue_label_key!r} needs KAI >= v0.16.0 (podgrouper.queueLabelKey); "
                f"{self.version} only reads 'kai.scheduler/queue'"
            )
        return self
