"""Which of the target's workloads takes the source's image, and which pins the target gets (found by a review).

A name matched alone put one workload's image into another (a host Job running pytorch got a Deployment's busybox);
an image's release tag was never compared, so a newer one in the target was stepped back silently; a digest-pinned
reference was replaced by the same tag without it; and a pin the source sets was not written where the target runs
the same value as kaistack's default, which a later kaistack release may move.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaistack.cli import main
from kaistack.declaration.image_refs import ImageRef, image_ref
from kaistack.ops.promote import plan_promotion

DIGEST = "sha256:" + "ab" * 32


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new, 1))


def _skipped(project: Path, **kwargs: bool) -> dict[str, str]:
    return {s.key: s.reason for s in plan_promotion(project, "dev", "staging", **kwargs).skipped}


def _pins(project: Path, **kwargs: bool) -> dict[str, tuple[str, str]]:
    return {p.key: (p.old, p.new) for p in plan_promotion(project, "dev", "staging", **kwargs).pins}


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("      kind: Deployment\n      namespace: ml\n      queue: team-c\n", "      kind: Job\n      namespace: ml\n"
         "      queue: team-c\n", "kind 'Deployment' in dev, 'Job' here"),
        ("      namespace: ml\n      queue: team-c\n", "      namespace: serving\n      queue: team-c\n",
         "namespace 'ml' in dev, 'serving' here"),
        ("image: ghcr.io/acme/infer:1.4.0", "image: pytorch/pytorch:2.7.1",
         "repository ghcr.io/acme/infer in dev, docker.io/pytorch/pytorch here"),
    ],
    ids=["kind", "namespace", "repository"],
)  # fmt: skip
def test_a_workload_of_the_same_name_that_is_another_one_keeps_its_image(project, old, new, why) -> None:
    staging = project / "Pulumi.staging.yaml"
    _edit(staging, old, new)
    assert "kaistack:workloads[infer].image" not in _pins(project)
    assert _skipped(project)["kaistack:workloads[infer].image"] == (
        f"not the same workload ({why}); its image is left alone"
    )


def test_a_newer_release_tag_in_the_target_is_kept_unless_a_downgrade_is_allowed(project) -> None:
    _edit(project / "Pulumi.staging.yaml", "image: ghcr.io/acme/infer:1.4.0", "image: ghcr.io/acme/infer:1.5.0")
    assert _skipped(project)["kaistack:workloads[infer].image"] == (
        "runs ghcr.io/acme/infer:1.5.0, newer than dev's ghcr.io/acme/infer:1.4.2; kept (--allow-downgrade steps it "
        "back)"
    )
    [pin] = [p for p in plan_promotion(project, "dev", "staging", allow_downgrade=True).pins if "infer" in p.key]
    assert (pin.old, pin.new, pin.downgrade) == ("ghcr.io/acme/infer:1.5.0", "ghcr.io/acme/infer:1.4.2", True)


def test_a_digest_the_sources_reference_drops_is_kept(project) -> None:
    _edit(project / "Pulumi.staging.yaml", "infer:1.4.0", f"infer:1.4.2@{DIGEST}")
    assert _skipped(project)["kaistack:workloads[infer].image"] == (
        f"pins ghcr.io/acme/infer:1.4.2@{DIGEST} by digest, which dev's ghcr.io/acme/infer:1.4.2 drops; kept"
    )


def test_a_source_digest_is_promoted(project) -> None:
    _edit(project / "Pulumi.dev.yaml", "infer:1.4.2", f"infer:1.4.2@{DIGEST}")
    assert _pins(project)["kaistack:workloads[infer].image"] == (
        "ghcr.io/acme/infer:1.4.0",
        f"ghcr.io/acme/infer:1.4.2@{DIGEST}",
    )


def test_a_pin_the_source_sets_is_written_where_the_target_runs_it_as_the_default(project, passing, capsys) -> None:
    """dev sets team-a's vCluster to 0.36.1, staging declares none and runs the default (the same today)."""
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 0
    tenants = yaml.safe_load((project / "Pulumi.staging.yaml").read_text())["config"]["kaistack:tenants"]
    assert tenants[0] == {"name": "team-a", "queues": ["team-a"], "vcluster": {"version": "0.36.1"}}


def test_a_default_the_source_runs_without_setting_it_is_not_written(project) -> None:
    _edit(project / "Pulumi.dev.yaml", "      vcluster:\n        version: 0.36.1\n", "")
    assert "kaistack:tenants[team-a].vcluster.version" not in _pins(project)


@pytest.mark.parametrize(
    ("image", "ref"),
    [
        ("busybox:1.37.0", ImageRef("docker.io/library/busybox", "1.37.0", None)),
        ("docker.io/busybox", ImageRef("docker.io/library/busybox", None, None)),
        ("index.docker.io/library/busybox", ImageRef("docker.io/library/busybox", None, None)),
        ("vllm/vllm-openai:v0.11.0", ImageRef("docker.io/vllm/vllm-openai", "v0.11.0", None)),
        ("localhost:5000/x:1", ImageRef("localhost:5000/x", "1", None)),
        (f"ghcr.io/a/b@{DIGEST}", ImageRef("ghcr.io/a/b", None, DIGEST)),
        ("Busybox", None),
    ],
)
def test_an_image_reference_is_normalized_as_the_kubelet_reads_it(image: str, ref: ImageRef | None) -> None:
    """distribution/reference@v0.6.0 normalize.go splitDockerDomain: no domain is docker.io, one-part names under
    library/."""
    assert image_ref(image) == ref


def test_a_kept_digest_is_no_newer_release_whatever_the_stacks_are_called(project) -> None:
    """The flag comes from the reason's kind, not its words: a source stack named newer-dev once made it one."""
    (project / "Pulumi.newer-dev.yaml").write_text((project / "Pulumi.dev.yaml").read_text())
    _edit(project / "Pulumi.staging.yaml", "infer:1.4.0", f"infer:1.4.2@{DIGEST}")
    plan = plan_promotion(project, "newer-dev", "staging")
    [kept] = [s for s in plan.skipped if s.key == "kaistack:workloads[infer].image"]
    assert (kept.reason.startswith("pins "), kept.kept_newer) == (True, False)
