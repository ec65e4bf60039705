"""`kaistack check`'s reports line by line: the text the README shows, the PR comment's tables, the JSON's fields.

The README's samples of `kaistack check --stack dev` and `--stack topology` are the text's specification; the
other cases are small stacks whose verdict follows from the declaration (a queue's limit, a pool without GPUs, a
Deployment of 0 replicas). Each test pins what a mutation of kaistack/capacity/report.py or check.py changed
without any other test noticing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kaistack.capacity.check import MOVING, CapacityReport, WorkloadVerdict, check
from kaistack.capacity.report import to_json, to_markdown, to_text
from kaistack.declaration.parse import parse_config
from kaistack.markdown import cell, code
from kaistack.stack.load import load_stack

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
ZONE, RACK = "topology.kubernetes.io/zone", "kaistack.io/rack"


def _readme_sample(command: str) -> list[str]:
    """The lines the README's first sample of `command` shows, less its elisions ("...")."""
    lines = README.splitlines()
    start = lines.index(f"$ {command}")
    end = lines.index("```", start)
    return [line for line in lines[start + 1 : end] if "..." not in line]


def _work(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "kind": "Pod", "image": "busybox:1.37.0", "queue": "team", **fields}


ON_CPU = {"nodeSelector": {"kaistack.io/node-pool": "cpu"}}


def _mixed() -> dict[str, Any]:
    """A node of 2 GPUs and two without; `team` (in `org`, unlimited) may take 2 GPUs and at most 3.

    `whole` takes a GPU, `half` and `quarter` share the other, `web` runs on a GPU-less node, `big` asks for 4 GPUs,
    over the queue's limit of 3, and `idle` is a Deployment of 0 replicas.
    """
    return {
        "cluster": {
            "provider": "kind",
            "nodePools": [
                {"name": "gpu", "gpus": 2, "gpuMemoryMiB": 10000, "cpu": "8", "memory": "32Gi"},
                {"name": "cpu", "count": 2, "gpus": 0, "cpu": "8", "memory": "32Gi"},
            ],
        },
        "gpu": {"mode": "fake"},
        "queues": [
            {"name": "org", "resources": {"gpu": {"quota": -1, "limit": -1}}},
            {"name": "team", "parent": "org", "resources": {"gpu": {"quota": 2, "limit": 3}}},
        ],
        "workloads": [
            _work("whole", gpu=1),
            _work("half", gpuFraction=0.5),
            _work("quarter", gpuFraction=0.25),
            _work("web", **ON_CPU),
            _work("big", gpu=4),
            _work("idle", kind="Deployment", gpu=1, replicas=0),
        ],
    }


@pytest.fixture(scope="module")
def mixed() -> CapacityReport:
    return check(parse_config(_mixed(), source="test"), "mixed")


@pytest.fixture(scope="module")
def topology() -> CapacityReport:
    """examples/Pulumi.topology.yaml, whose text report the README shows."""
    return check(load_stack(REPO / "examples", "topology").config, "topology")


def _racks() -> dict[str, Any]:
    """Racks r1 and r2 of zone z1, one node of 8 GPUs each; `small` asks for 2 GPUs, `huge` for 9, more than a
    node has; neither has a topology constraint."""
    pools = [
        {"name": rack, "gpus": 8, "cpu": "64", "memory": "512Gi", "labels": {ZONE: "z1", RACK: rack}}
        for rack in ("r1", "r2")
    ]
    return {
        "cluster": {"provider": "kind", "topology": {"levels": [ZONE, RACK]}, "nodePools": pools},
        "gpu": {"mode": "fake"},
        "queues": [{"name": "team"}],
        "workloads": [_work("small", gpu=2), _work("huge", gpu=9)],
    }


@pytest.fixture(scope="module")
def racks() -> CapacityReport:
    return check(parse_config(_racks(), source="test"), "racks")


def _gang(name: str, workers: int, **fields: Any) -> dict[str, Any]:
    pytorch = {"master": 0, "workers": workers, **fields.pop("pytorch", {})}
    return {"name": name, "kind": "PyTorchJob", "queue": "team", "image": "x", "gpu": 1, "pytorch": pytorch, **fields}


@pytest.fixture(scope="module")
def gangs() -> CapacityReport:
    """On the two racks: `segments`, 2 segments of 2 workers, each and the whole inside a rack; `both`, required
    inside a zone and preferred inside a rack; `refused`, 9 workers required inside a rack of 8 GPUs."""
    segments = {"segmentSize": 2, "segmentTopology": {"required": RACK}}
    raw = _racks()
    raw["workloads"] = [
        _gang("segments", 4, pytorch=segments, topology={"required": RACK}),
        _gang("both", 2, topology={"required": ZONE, "preferred": RACK}),
        _gang("refused", 9, topology={"required": RACK}),
    ]
    return check(parse_config(raw, source="test"), "gangs")


def _verdict(report: CapacityReport, name: str) -> WorkloadVerdict:
    return next(w for w in report.workloads if w.name == name)


def _with(report: CapacityReport, name: str, **changes: Any) -> CapacityReport:
    """The report with workload `name`'s verdict changed."""
    workloads = tuple(dataclasses.replace(w, **changes) if w.name == name else w for w in report.workloads)
    return dataclasses.replace(report, workloads=workloads)


# --- the summary ------------------------------------------------------------------------------------------------


def test_a_run_still_changing_at_its_last_cycle_does_not_settle_and_says_it_was_still_changing(
    mixed: CapacityReport,
) -> None:
    """placement.Unsettled: `period` is None when no state repeated before the cycle limit."""
    report = dataclasses.replace(_with(mixed, "whole", moving=True), unsettled=True, loop=None, cycles=50)
    assert report.summary() == (
        "does not settle: after 50 cycles KAI still moves 1 of 6 workloads again and again (still changing); "
        "1 other workload(s) would stay Pending"
    )


def test_a_stack_kai_never_settles_on_with_nothing_else_pending_names_no_other_workload(
    mixed: CapacityReport,
) -> None:
    """README: `does not settle: after 50 cycles KAI still moves 3 of 18 workloads again and again (every cycle
    ends as the one before did); 2 other workload(s) would stay Pending`, less the last part with none."""
    report = _with(mixed, "whole", moving=True)
    report = dataclasses.replace(
        report, workloads=tuple(w for w in report.workloads if not w.pending), unsettled=True, loop=1, cycles=50
    )
    assert report.summary() == (
        "does not settle: after 50 cycles KAI still moves 1 of 5 workloads again and again "
        "(every cycle ends as the one before did)"
    )


# --- text: the README's samples -------------------------------------------------------------------------------


def test_the_text_of_the_dev_stack_has_every_line_of_the_readmes_sample() -> None:
    sample = _readme_sample("kaistack check --stack dev")
    text = to_text(check(load_stack(REPO, "dev").config, "dev")).splitlines()
    assert sample[0] == text[0]
    assert [line for line in sample if line not in text] == []


def test_the_text_of_the_topology_example_has_every_line_of_the_readmes_sample(topology: CapacityReport) -> None:
    sample = _readme_sample("kaistack check --stack topology")
    text = to_text(topology).splitlines()
    assert [line for line in sample if line not in text] == []
    # The sample shows the workloads' section after a blank line, and ends as the report does: the topology
    # heading and its four racks.
    assert text[text.index("workloads:") - 1] == ""
    assert text[-5:] == sample[-5:]


# --- text: lines of a small stack -------------------------------------------------------------------------------


def test_the_text_without_a_stack_name_begins_with_the_summary() -> None:
    report = check(parse_config(_mixed(), source="test"))
    assert to_text(report).splitlines()[0] == f"capacity check: {report.summary()}"


def test_the_text_marks_a_pending_workload_fail_and_says_why_each_pod_waits(mixed: CapacityReport) -> None:
    text = to_text(mixed).splitlines()
    at = text.index("  FAIL big [Pod, host, queue team, train] Pending")
    [reason] = _verdict(mixed, "big").reasons
    assert "over its gpu limit" in reason
    assert text[at + 1 : at + 3] == ["       big-0: Pending", f"       why: {reason}"]


def test_the_text_says_a_workload_of_zero_replicas_has_no_pods(mixed: CapacityReport) -> None:
    text = to_text(mixed).splitlines()
    at = text.index("  ok   idle [Deployment, host, queue team, inference] Empty")
    assert text[at + 1] == "       no pods (0 replicas)"


def test_the_text_shows_a_pod_without_gpus_on_its_node_with_no_gpu_and_no_share(mixed: CapacityReport) -> None:
    text = to_text(mixed).splitlines()
    at = text.index("  ok   web [Pod, host, queue team, train] Running")
    assert text[at + 1] == "       web-0 -> cpu-0"


def test_the_text_marks_a_placed_workload_kai_keeps_moving_fail(mixed: CapacityReport) -> None:
    text = to_text(_with(mixed, "whole", moving=True)).splitlines()
    at = text.index("  FAIL whole [Pod, host, queue team, train] Running")
    assert text[at + 2] == f"       why: {MOVING}"


def test_the_text_gives_each_queue_its_parent_quota_limit_fair_share_and_allocation(mixed: CapacityReport) -> None:
    """-1 is unlimited (README, queues[].resources.gpu.*); `team` has 1.75 GPUs placed (`whole`, `half`, `quarter`)."""
    text = to_text(mixed).splitlines()
    at = text.index("queues (gpu: quota / limit / fair share / allocated):")
    assert text[at - 1] == ""
    shares = {q.name: q.fair_share["gpu"] for q in mixed.queues}
    assert f"  team (in org): 2 / 3 / {shares['team']:g} / 1.75" in text[at:]
    assert f"  org: unlimited / unlimited / {shares['org']:g} / 1.75" in text[at:]


def test_the_text_lists_a_node_without_gpus_with_its_pods_or_a_dash(mixed: CapacityReport) -> None:
    text = to_text(mixed).splitlines()
    at = text.index("GPUs:")
    assert text[at - 1] == ""
    assert text[at + 1 :] == [
        "  gpu-0/gpu0 [gpu] 100% used: whole-0 1",
        "  gpu-0/gpu1 [gpu] 75% used: half-0 0.5, quarter-0 0.25",
        "  cpu-0 [cpu] no GPUs; pods: web-0",
        "  cpu-1 [cpu] no GPUs; pods: -",
    ]


def test_the_text_gives_an_unconstrained_workload_the_domain_it_landed_in(racks: CapacityReport) -> None:
    text = to_text(racks).splitlines()
    at = text.index("  ok   small [Pod, host, queue team, train] Running")
    assert text[at + 2] == f"       topology: in {', '.join(_verdict(racks, 'small').domains)}"


def test_the_text_gives_a_pending_workload_without_a_constraint_no_topology_line(racks: CapacityReport) -> None:
    text = to_text(racks).splitlines()
    at = text.index("  FAIL huge [Pod, host, queue team, train] Pending")
    assert text[at + 1 : at + 3] == ["       huge-0: Pending", f"       why: {_verdict(racks, 'huge').reasons[0]}"]


def test_the_text_names_no_segment_of_a_gang_that_landed_in_one_domain(gangs: CapacityReport) -> None:
    """README: check "says which domain each workload landed in (with the subgroups when a workload spans
    several)"."""
    segments = _verdict(gangs, "segments")
    assert {p.sub_group for p in segments.pods} == {"worker-0", "worker-1"}
    text = to_text(gangs).splitlines()
    at = text.index("  ok   segments [PyTorchJob, host, queue team, train] Running")
    assert text[at + 2] == f"       topology: required {RACK}; in {segments.domains[0]}"


def test_the_text_gives_a_required_and_a_preferred_level_both(gangs: CapacityReport) -> None:
    text = to_text(gangs).splitlines()
    at = text.index("  ok   both [PyTorchJob, host, queue team, train] Running")
    domain = _verdict(gangs, "both").domains[0]
    assert text[at + 2] == f"       topology: required {ZONE}, preferred {RACK}; in {domain}"


def test_the_text_puts_the_topology_after_a_blank_line_at_the_end(gangs: CapacityReport) -> None:
    text = to_text(gangs).splitlines()
    at = text.index(f"topology cluster-topology ({ZONE} > {RACK}):")
    assert (text[at - 1], len(text) - at) == ("", 1 + len(_racks()["cluster"]["nodePools"]))


# --- markdown ---------------------------------------------------------------------------------------------------


def _rows(markdown: str, first_cell: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith(f"| {first_cell} ")]


def test_the_markdown_title_of_a_failing_stack_has_a_cross_the_stack_and_the_summary(mixed: CapacityReport) -> None:
    assert to_markdown(mixed).splitlines()[0] == f"### ❌ Capacity — stack `mixed`: {mixed.summary()}"


def test_the_markdown_title_of_a_fitting_stack_without_a_name_has_a_tick_and_the_summary() -> None:
    raw = _mixed()
    raw["workloads"] = [w for w in raw["workloads"] if w["name"] != "big"]
    report = check(parse_config(raw, source="test"))
    assert report.ok
    assert to_markdown(report).splitlines()[0] == f"### ✅ Capacity: {report.summary()}"


def test_the_markdown_has_a_row_per_workload_with_where_its_pods_run(mixed: CapacityReport) -> None:
    markdown = to_markdown(mixed)
    team = code("team")
    assert _rows(markdown, code("whole")) == [
        f"| {code('whole')} (Pod) | host | {team} | train | Running | {cell('whole-0 -> gpu-0 (1 GPU)')} |"
    ]
    assert _rows(markdown, code("half")) == [
        f"| {code('half')} (Pod) | host | {team} | train | Running | {cell('half-0 -> gpu-0/gpu1 (0.5 GPU)')} |"
    ]
    assert _rows(markdown, code("web")) == [
        f"| {code('web')} (Pod) | host | {team} | train | Running | {cell('web-0 -> cpu-0')} |"
    ]
    assert _rows(markdown, code("idle")) == [
        f"| {code('idle')} (Deployment) | host | {team} | inference | Empty | no pods (0 replicas) |"
    ]


def test_the_markdown_row_of_a_pending_workload_is_bold_and_gives_its_reasons(mixed: CapacityReport) -> None:
    report = _with(mixed, "big", reasons=("first reason", "second reason"))
    assert _rows(to_markdown(report), code("big")) == [
        f"| {code('big')} (Pod) | host | {code('team')} | train | **Pending** | first reason; second reason |"
    ]


def test_the_markdown_row_of_a_workload_kai_keeps_moving_says_so_after_its_placement(mixed: CapacityReport) -> None:
    [row] = _rows(to_markdown(_with(mixed, "whole", moving=True)), code("whole"))
    assert row.endswith(f"| Running | {cell(f'whole-0 -> gpu-0 (1 GPU); {MOVING}')} |")


def test_the_markdown_row_gives_the_domain_of_a_placed_workload_in_a_topology(racks: CapacityReport) -> None:
    markdown = to_markdown(racks)
    [small] = _rows(markdown, code("small"))
    assert small.endswith(f"| {cell('small-0 -> r1-0 (2 GPU) (topology: in z1/r1)')} |")
    [huge] = _rows(markdown, code("huge"))
    assert "topology" not in huge


def test_the_markdown_rows_of_queues_give_parent_quota_limit_fair_share_and_allocation(mixed: CapacityReport) -> None:
    markdown = to_markdown(mixed)
    shares = {q.name: q.fair_share["gpu"] for q in mixed.queues}
    assert _rows(markdown, code("team")) == [f"| {code('team')} | org | 2 | 3 | {shares['team']:g} | 1.75 |"]
    assert _rows(markdown, code("org")) == [f"| {code('org')} | — | unlimited | unlimited | {shares['org']:g} | 1.75 |"]


def test_the_markdown_rows_of_gpus_give_use_sharing_and_pods(mixed: CapacityReport, racks: CapacityReport) -> None:
    assert _rows(to_markdown(mixed), "gpu-0") == [
        f"| gpu-0 (gpu) | gpu0 | 100% | {code('whole-0')} 1 |",
        f"| gpu-0 (gpu) | gpu1 (shared) | 75% | {code('half-0')} 0.5, {code('quarter-0')} 0.25 |",
    ]
    assert _rows(to_markdown(racks), "r2-0")[0] == "| r2-0 (r2) | gpu0 | 0% | idle |"


def test_the_markdown_topology_table_has_a_row_per_domain(racks: CapacityReport) -> None:
    markdown = to_markdown(racks)
    assert _rows(markdown, "z1/r1") == [f"| z1/r1 | r1-0 | 2 of 8 | {code('small')} |"]
    assert _rows(markdown, "z1/r2") == ["| z1/r2 | r2-0 | 0 of 8 | — |"]


def test_the_markdown_row_of_a_refused_workload_gives_its_constraint(gangs: CapacityReport) -> None:
    [row] = _rows(to_markdown(gangs), code("refused"))
    reason = _verdict(gangs, "refused").reasons[0]
    assert row.endswith(f"| **Pending** | {cell(f'{reason} (topology: required {RACK})')} |")


def _block(lines: list[str], header: str) -> tuple[list[str], list[str], list[str]]:
    """The lines before a table (from the blank line before its section), its header and rule, and the lines after
    its rows (to the next blank line after them, included)."""
    at = lines.index(header)
    end = at + 2
    while lines[end].startswith("| "):
        end += 1
    return lines[at - 3 : at], lines[at : at + 2], lines[end : end + 2]


def test_the_markdown_tables_each_sit_in_a_details_block_that_renders(racks: CapacityReport) -> None:
    """A table in a <details> block renders only with a blank line after the <summary> HTML line (GFM ends an HTML
    block at a blank line), and the </details> needs one before it for the same reason."""
    lines = to_markdown(racks).splitlines()
    queues = "| Queue | Parent | Quota | Limit | Fair share | Allocated |"
    gpus = "| Node | GPU | Used | Pods |"
    domains = "| Domain | Nodes | GPUs used | Workloads |"
    levels = f"{ZONE} &gt; {RACK}"
    assert _block(lines, queues) == (
        ["", "<details><summary>Queues (GPUs)</summary>", ""],
        [queues, "|---|---|---|---|---|---|"],
        ["", "</details>"],
    )
    assert _block(lines, gpus) == (
        ["", "<details><summary>GPUs</summary>", ""],
        [gpus, "|---|---|---|---|"],
        ["", "</details>"],
    )
    assert _block(lines, domains) == (
        ["", f"<details><summary>Topology cluster-topology ({levels})</summary>", ""],
        [domains, "|---|---|---|---|"],
        ["", "</details>"],
    )
    assert lines[-1] == "</details>"


def test_the_markdown_workload_table_follows_the_title_after_a_blank_line(mixed: CapacityReport) -> None:
    header = "| Workload | Where | Queue | Class | Status | Placement / why Pending |"
    lines = to_markdown(mixed).splitlines()
    assert lines[1:4] == ["", header, "|---|---|---|---|---|---|"]


def test_the_markdown_notes_are_quoted_between_the_title_and_the_table(mixed: CapacityReport) -> None:
    lines = to_markdown(dataclasses.replace(mixed, notes=("first note", "second note"))).splitlines()
    assert lines[1:5] == ["", "> note: first note", "> note: second note", ""]
    assert lines[5].startswith("| Workload |")


# --- JSON -------------------------------------------------------------------------------------------------------


def test_the_json_has_every_key_the_readme_documents(racks: CapacityReport) -> None:
    """README, `--json prints {"fits", "workloads": [{"name", "queue", "status", "reason", "topology", ...`."""
    doc = to_json(racks)
    assert {"fits", "workloads", "queues", "nodes", "topology"} <= set(doc)
    for work in doc["workloads"]:
        assert {"name", "queue", "status", "reason", "topology", "domains", "pods"} <= set(work)
        for pod in work["pods"]:
            assert {"name", "node", "gpuGroups", "gpus", "domain", "subGroup"} <= set(pod)
    for queue in doc["queues"]:
        assert {"name", "quota", "limit", "fairShare", "allocated"} <= set(queue)
    for node in doc["nodes"]:
        assert {"name", "domain", "gpus"} <= set(node)
        for gpu in node["gpus"]:
            assert {"id", "used", "pods"} <= set(gpu)
    assert {"name", "levels", "domains"} <= set(doc["topology"])


def test_the_json_says_whether_it_fits_is_partial_and_the_summary(mixed: CapacityReport) -> None:
    doc = to_json(mixed)
    assert (doc["stack"], doc["fits"], doc["partial"], doc["summary"]) == ("mixed", False, False, mixed.summary())
    assert doc["totals"] == {"nodes": 3, "gpus": 2, "workloads": 6, "pending": 1}


def test_the_json_of_a_check_stopped_by_its_time_limit_is_partial() -> None:
    report = check(parse_config(_mixed(), source="test"), max_seconds=0)
    doc = to_json(report)
    assert (doc["fits"], doc["partial"]) == (False, True)
    assert doc["summary"].startswith("unknown: stopped by the time limit (--max-seconds 0)")


def test_an_older_kai_release_is_named_in_the_json_and_in_a_whole_note_line() -> None:
    raw = {**_mixed(), "kai": {"version": "v0.16.3"}}
    report = check(parse_config(raw, source="test"), "old")
    assert (to_json(report)["kaiVersion"], to_json(report)["simulatedRules"]) == ("v0.16.3", "v0.17.0")
    note = "note: KAI v0.16.3 is simulated with KAI v0.17.0's rules (the nearest the checker has)"
    assert to_text(report).splitlines()[1] == note


def test_the_json_gives_each_workload_its_kind_where_class_and_status(mixed: CapacityReport) -> None:
    """Pods are class `train` and Deployments `inference` (README, `kaistack check --stack NAME`)."""
    seen = {w["name"]: (w["kind"], w["where"], w["priorityClass"], w["status"]) for w in to_json(mixed)["workloads"]}
    assert seen == {
        "whole": ("Pod", "host", "train", "Running"),
        "half": ("Pod", "host", "train", "Running"),
        "quarter": ("Pod", "host", "train", "Running"),
        "web": ("Pod", "host", "train", "Running"),
        "big": ("Pod", "host", "train", "Pending"),
        "idle": ("Deployment", "host", "inference", "Empty"),
    }


def test_the_json_reason_is_null_for_a_placed_workload_and_every_reason_of_a_pending_one(
    mixed: CapacityReport,
) -> None:
    doc = to_json(_with(mixed, "big", reasons=("first reason", "second reason")))
    reasons = {w["name"]: w["reason"] for w in doc["workloads"]}
    assert (reasons["whole"], reasons["big"]) == (None, "first reason; second reason")


def test_the_json_gives_each_pod_its_status_node_and_gpus(mixed: CapacityReport) -> None:
    pods = {p["name"]: p for w in to_json(mixed)["workloads"] for p in w["pods"]}
    seen = {name: (p["status"], p["node"], p["gpus"]) for name, p in pods.items()}
    assert seen == {
        "whole-0": ("Running", "gpu-0", 1),
        "half-0": ("Running", "gpu-0", 0.5),
        "quarter-0": ("Running", "gpu-0", 0.25),
        "web-0": ("Running", "cpu-0", 0),
        "big-0": ("Pending", None, 0),
    }


def test_the_json_gives_no_pod_a_domain_without_a_topology(mixed: CapacityReport) -> None:
    assert {p["domain"] for w in to_json(mixed)["workloads"] for p in w["pods"]} == {None}


def test_the_json_gives_a_placed_pod_its_domain_and_a_pending_one_none(racks: CapacityReport) -> None:
    pods = {p["name"]: p["domain"] for w in to_json(racks)["workloads"] for p in w["pods"]}
    assert pods == {"small-0": "z1/r1", "huge-0": None}


def test_the_json_gives_each_queue_its_parent(mixed: CapacityReport) -> None:
    parents = {q["name"]: q["parent"] for q in to_json(mixed)["queues"]}
    assert (parents["org"], parents["team"]) == (None, "org")


def test_the_json_gives_each_node_its_pool_memory_and_pods(mixed: CapacityReport) -> None:
    nodes = {n["name"]: n for n in to_json(mixed)["nodes"]}
    seen = {name: (n["pool"], n["domain"], n["gpuMemoryMiB"], n["pods"]) for name, n in nodes.items()}
    assert seen == {
        "gpu-0": ("gpu", None, 10000, ["whole-0", "half-0", "quarter-0"]),
        "cpu-0": ("cpu", None, None, ["web-0"]),
        "cpu-1": ("cpu", None, None, []),
    }


def test_the_json_gives_each_gpu_its_use_and_whether_it_is_shared(mixed: CapacityReport) -> None:
    gpus = {(n["name"], g["id"]): g for n in to_json(mixed)["nodes"] for g in n["gpus"]}
    seen = {key: (g["used"], g["shared"], g["pods"], g["fractions"]) for key, g in gpus.items()}
    assert seen == {
        ("gpu-0", "gpu0"): (1, False, ["whole-0"], [1]),
        ("gpu-0", "gpu1"): (0.75, True, ["half-0", "quarter-0"], [0.5, 0.25]),
    }


def test_the_json_gives_a_node_its_domain_and_each_domain_its_nodes_and_gpus(racks: CapacityReport) -> None:
    doc = to_json(racks)
    assert {n["name"]: n["domain"] for n in doc["nodes"]} == {"r1-0": "z1/r1", "r2-0": "z1/r2"}
    domains = [(d["path"], d["nodes"], d["gpus"], d["gpusUsed"], d["workloads"]) for d in doc["topology"]["domains"]]
    assert domains == [("z1/r1", ["r1-0"], 8, 2, ["small"]), ("z1/r2", ["r2-0"], 8, 0, [])]
