"""What NVML answers on a GPU machine, and what kaistack makes of it: the data behind
tests/workflows/test_local_gpus_recorded.py.

Run where NVIDIA's driver is, from the repository root, with kaistack's load path importable (pydantic,
pyyaml, nvidia-ml-py):

    python tests/data/nvml/probe.py tests/data/nvml/<gpu>.json

Per device it records what pynvml returns for the name (and its Python type, which the tests' stand-in
assumes) and for the memory (v1, the call GFD makes, and v2 where the driver has it), and nvidia-smi's own
view as an independent witness. Then what kaistack reads: `read_local_gpus`, and `kaistack check --json`
on STACK, a real-GPU kind stack whose declared GPU (30000 MiB) is too small for its two 40000 MiB pods, so
the verdict says whether the machine's GPUs were read.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
STACK = """\
config:
  kaistack:cluster:
    provider: kind
    nodePools:
      - {name: gpu, count: 1, gpus: 1, gpuProduct: declared, gpuMemoryMiB: 30000, cpu: "16", memory: 64Gi}
  kaistack:gpu:
    mode: device-plugin
  kaistack:queues:
    - name: q
  kaistack:workloads:
    - {name: half-a, kind: Pod, queue: q, image: "busybox:1.36", gpuMemoryMiB: 40000}
    - {name: half-b, kind: Pod, queue: q, image: "busybox:1.36", gpuMemoryMiB: 40000}
"""


def _devices(nvml: Any) -> list[dict[str, Any]]:
    devices = []
    for i in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        name = nvml.nvmlDeviceGetName(handle)
        device: dict[str, Any] = {
            "index": i,
            "name": name.decode() if isinstance(name, bytes) else name,
            "nameType": type(name).__name__,
            "memoryTotalBytes": int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        }
        try:
            v2 = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
            device["memoryV2"] = {"totalBytes": int(v2.total), "reservedBytes": int(v2.reserved)}
        except (AttributeError, TypeError, nvml.NVMLError) as err:
            device["memoryV2"] = f"not available: {err}"
        devices.append(device)
    return devices


def _nvidia_smi() -> list[str] | str:
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return f"not run: {err}"
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _check() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
        (project / "Pulumi.nvml.yaml").write_text(STACK)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        done = subprocess.run(
            [sys.executable, "-m", "kaistack", "check", "--stack", "nvml", "--json", "--project", tmp],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
    report = json.loads(done.stdout) if done.stdout.strip().startswith("{") else None
    return {
        "exitCode": done.returncode,
        "stderr": done.stderr.strip().splitlines(),
        "fits": report and report["fits"],
        "nodes": report and [{"name": n["name"], "gpuMemoryMiB": n["gpuMemoryMiB"]} for n in report["nodes"]],
        "workloads": report and {w["name"]: w["status"] for w in report["workloads"]},
    }


def main(out: str) -> int:
    sys.path.insert(0, str(ROOT))  # run as a script, its own folder is on the path, not the repository
    import pynvml

    from kaistack.stack.local_gpus import read_local_gpus

    pynvml.nvmlInit()
    try:
        record: dict[str, Any] = {
            "nvidiaMlPy": version("nvidia-ml-py"),
            "driver": pynvml.nvmlSystemGetDriverVersion(),
            "nvmlVersion": pynvml.nvmlSystemGetNVMLVersion(),
            "python": platform.python_version(),
            "devices": _devices(pynvml),
        }
    finally:
        pynvml.nvmlShutdown()
    record["nvidiaSmi"] = _nvidia_smi()
    found = read_local_gpus()
    if isinstance(found, str):
        record["readLocalGpus"] = found
    else:
        record["readLocalGpus"] = [{"name": g.name, "memoryMiB": g.memory_mib, "product": g.product} for g in found]
    record["stack"] = STACK
    record["check"] = _check()
    Path(out).write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/data/nvml/probe.py OUT.json")
    sys.exit(main(sys.argv[1]))
