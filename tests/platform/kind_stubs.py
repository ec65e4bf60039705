"""Stub `kind`, `nvkind` and `kubectl` executables, and a run of components.cluster_kind's create script against
them as pulumi-command runs it (the kind config on stdin, stdout the kubeconfig)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from components.cluster_kind import create_script, kind_config_yaml

# kind logs to stderr and prints only `get clusters` and `get kubeconfig` results on stdout
# (kubernetes-sigs/kind@v0.31.0:pkg/cmd/logger.go:30-32, pkg/cmd/kind/get/clusters/clusters.go:56-63); it reads
# `--config -` from stdin (pkg/cmd/kind/create/cluster/createcluster.go:128-134).
STUB_KIND = """#!/bin/sh
state="$STUB_DIR/clusters"; touch "$state"; echo "kind $*" >> "$STUB_DIR/calls"
case "$1 $2" in
  "get clusters") [ -z "${KIND_GET_FAILS:-}" ] || exit 1; cat "$state" ;;
  "get kubeconfig")
    grep -qx "$4" "$state" || { echo "no cluster $4" >&2; exit 1; }
    echo "apiVersion: v1 # kubeconfig of $4" ;;
  "create cluster")
    [ "$5 $6" != "--config -" ] || cat > "$STUB_DIR/kind-config"
    echo "Creating cluster" >&2; echo "$4" >> "$state" ;;
  "delete cluster") grep -vx "$4" "$state" > "$state.new" || true; mv "$state.new" "$state" ;;
esac
"""
# nvkind prints its node setup and the cluster's info on stdout (NVIDIA/nvkind cmd/nvkind/cluster_create.go
# PrintClusterInfo, pkg/nvkind/node.go runScript), and makes the kind cluster before that setup can fail.
STUB_NVKIND = """#!/bin/sh
echo "nvkind $*" >> "$STUB_DIR/calls"; echo "$4" >> "$STUB_DIR/clusters"
[ "$5" != "--config-template" ] || cp "$6" "$STUB_DIR/nvkind-config"
echo "nvkind: cluster info"; exit "${NVKIND_RC:-0}"
"""
# `kubectl get` prints its table on stdout (kubernetes/kubectl pkg/cmd/get/get.go writes to o.Out).
STUB_KUBECTL = """#!/bin/sh
echo "kubectl $*" >> "$STUB_DIR/calls"; echo "NAME     HANDLER   AGE"; echo "nvidia   nvidia    1m"
exit "${KUBECTL_RC:-0}"
"""


def run_create(
    tmp_path: Path,
    config,
    *,
    existing: str = "",
    nvkind_rc: int = 0,
    kubectl_rc: int = 0,
    tools=("kind", "nvkind", "kubectl"),
    kind_get_fails: bool = False,
):
    """Run `config`'s create script with its kind config on stdin, as pulumi-command does: (result, calls)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool, body in (("kind", STUB_KIND), ("nvkind", STUB_NVKIND), ("kubectl", STUB_KUBECTL)):
        if tool in tools:
            (bin_dir / tool).write_text(body)
            (bin_dir / tool).chmod(0o755)
    for tool in ("sh", "mktemp", "cat", "grep", "rm", "mv", "touch", "cp"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (tmp_path / "clusters").write_text(existing)
    (tmp_path / "tmp").mkdir()
    env = {
        "PATH": str(bin_dir),
        "STUB_DIR": str(tmp_path),
        "NVKIND_RC": str(nvkind_rc),
        "KUBECTL_RC": str(kubectl_rc),
        "TMPDIR": str(tmp_path / "tmp"),
    }
    if kind_get_fails:
        env["KIND_GET_FAILS"] = "1"
    done = subprocess.run(
        ["sh", "-c", create_script(config)], input=kind_config_yaml(config), capture_output=True, text=True, env=env
    )
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return done, calls
