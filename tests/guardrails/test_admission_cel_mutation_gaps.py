"""What a mutation run of the tenant admission policy's CEL building blocks and GPU rules
(kaistack/guardrails/admission_cel.py) found no test pinning: each test is one behaviour a surviving mutant changed.

The policy is evaluated as test_policy_admission.py evaluates it (cel-python, an error denies). The last tests read
the parse tree instead, for CEL that cel-python evaluates but the API server's compiler refuses.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import celpy
import lark
import pytest
from test_policy_admission import (
    PLAIN,
    QUEUE,
    SHARED,
    Case,
    _bound,
    _debugged,
    _with_env,
    cel_allows,
    cel_denials,
    coredns,
    synced_pod,
)

from kaistack.guardrails import admission
from kaistack.guardrails import gpu_requests as kai


def _policy(**kw: Any) -> dict[str, Any]:
    return admission.tenant_policy("team-a", ["team-a"], QUEUE, **kw)


# --- names spliced into the CEL ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["team-a'] || true || ['", "team-a\\"])
def test_a_queue_name_that_would_end_a_cel_string_literal_is_refused_not_spliced_in(name: str) -> None:
    """Names go into the CEL as single-quoted literals: a quote would end the literal and run the rest of the name
    as CEL, a backslash would escape the closing quote."""
    with pytest.raises(ValueError, match=re.escape(f"cannot quote {name!r} for CEL")):
        admission.tenant_policy("team-a", [name], QUEUE)


# --- the GPU request rules -------------------------------------------------------------------------------


def test_a_share_on_a_cluster_without_sharing_is_first_refused_for_sharing_being_off() -> None:
    """The API server reports only the first failing validation (kubernetes/apiserver@v0.35.0
    pkg/admission/plugin/policy/validating/dispatcher.go:289-296; decisions in the validations' order,
    validator.go:121-124): a malformed share on such a cluster is told that no share is possible at all."""
    off = _policy(sharing_enabled=False)
    [sharing_off] = cel_denials(off, Case(synced_pod(annotations={kai.FRACTION: "0.5"}), False))
    denials = cel_denials(off, Case(synced_pod(annotations={kai.FRACTION: "2", kai.NUM_DEVICES: "0"}), False))
    assert len(denials) > 1
    assert denials[0] == sharing_off


def _names(message: str, key: str) -> bool:
    """`key` is in `message` as a word of its own (gpu-fraction is not named by gpu-fraction-num-devices)."""
    return re.search(rf"(?<![\w./-]){re.escape(key)}(?![\w/-]|\.\d)", message) is not None


GPU_LIMIT = {"nvidia.com/gpu": "1"}


@pytest.mark.parametrize(
    ("annotations", "limits", "sharing", "named"),
    [
        ({kai.FRACTION: "2"}, None, True, [kai.FRACTION]),
        ({kai.MEMORY: "2Gi"}, None, True, [kai.MEMORY]),
        ({kai.FRACTION: "0.2", kai.MEMORY: "2000"}, None, True, [kai.FRACTION, kai.MEMORY]),
        ({kai.FRACTION: "0.5"}, GPU_LIMIT, True, [kai.FRACTION, kai.MEMORY]),
        ({kai.NUM_DEVICES: "2"}, None, True, [kai.NUM_DEVICES, kai.FRACTION, kai.MEMORY]),
        ({kai.MPS: "true"}, GPU_LIMIT, True, [kai.MPS, kai.FRACTION, kai.MEMORY]),
        ({kai.FRACTION: "0.5", kai.CONTAINER_NAME: "nope"}, None, True, [kai.CONTAINER_NAME]),
        ({kai.FRACTION: "0.004"}, None, True, [kai.FRACTION, str(kai.SMALLEST_FRACTION)]),
        ({kai.FRACTION: "0.5"}, None, False, [kai.FRACTION, kai.MEMORY]),
    ],
)
def test_a_gpu_request_refusal_names_the_annotations_the_tenant_must_fix(
    annotations: dict[str, str], limits: dict[str, str] | None, sharing: bool, named: list[str]
) -> None:
    pod = synced_pod(annotations=annotations, limits=limits)
    [first, *_] = cel_denials(_policy(sharing_enabled=sharing), Case(pod, False))
    assert [key for key in named if not _names(first, key)] == []


def test_a_renamed_time_slice_requested_beside_cpu_is_refused() -> None:
    """The policy reads requests as well as limits (as the policy pack does: test_rules_mutation_gaps.py), and every
    key of them, not only the first."""
    pod = synced_pod()
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu.shared"] = "1"
    assert not cel_allows(_policy(), Case(pod, False))


def test_a_share_may_name_any_of_several_init_containers() -> None:
    """KAI@v0.17.0 pkg/binder/common/gpu_access.go:182-219 (GetFractionContainerRef) looks through every init
    container for the named one."""
    pod = synced_pod(annotations={kai.FRACTION: "0.5", kai.CONTAINER_NAME: "init"}, init_limits={"cpu": "1"})
    pod["spec"]["initContainers"].insert(0, {"name": "fetch", "image": "ubuntu"})
    assert cel_allows(_policy(), Case(pod, True))


# --- the kube-system exemption: what a default-scheduled pod may ask for ----------------------------------


def test_a_cpu_only_kube_system_pod_may_ask_for_ephemeral_storage() -> None:
    """Every node has ephemeral storage: it reaches no device KAI guards."""
    assert cel_allows(_policy(), Case(coredns(limits={"cpu": "100m", "ephemeral-storage": "1Gi"}), True))


def test_a_resource_named_only_like_huge_pages_keeps_a_kube_system_pod_from_the_default_scheduler() -> None:
    """A huge page resource is `hugepages-<size>` (kubernetes/kubectl@v0.35.0 pkg/util/resource/resource.go:273,
    kubernetes/component-helpers@v0.35.0 resource/helpers.go:75); `hugepages.example.com/fpga` is a device."""
    assert not cel_allows(_policy(), Case(coredns(limits={"hugepages.example.com/fpga": "1"}), False))


# --- the NVIDIA runtime's variables ----------------------------------------------------------------------


def test_coredns_beside_a_service_whose_name_only_starts_with_nvidia_is_admitted() -> None:
    """vCluster writes a Service `nvidiaexporter`'s links into synced containers (loft-sh/vcluster@v0.36.1
    pkg/controllers/resources/pods/translate/envvars.go:27-30,47,66): NVIDIAEXPORTER_* is no NVIDIA_* variable."""
    links = [
        {"name": "NVIDIAEXPORTER_SERVICE_HOST", "value": "10.96.0.14"},
        {"name": "NVIDIAEXPORTER_PORT", "value": "tcp://10.96.0.14:9400"},
    ]
    assert cel_allows(_policy(), Case(_with_env(coredns(), links), True))


@pytest.mark.parametrize("name", ["NVIDIA_SERVICE_HOSTNAME", "NVIDIA_visible_NVIDIA_PORT"])
def test_an_nvidia_variable_no_service_writes_is_refused_though_part_of_it_looks_like_a_link(name: str) -> None:
    """A Service link is <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT[_<port name>] or <NAME>_PORT[_<port>_<PROTO>...],
    <NAME> the Service's name upper-cased with `-` as `_` (loft-sh/vcluster@v0.36.1
    pkg/controllers/resources/pods/translate/envvars.go:27-30,47,66-81): nothing after SERVICE_HOST but `_...`, no
    lower-case letter anywhere. Any other NVIDIA_* variable may be one the runtime reads."""
    pod = _with_env(coredns(), [{"name": name, "value": "1"}])
    assert not cel_allows(_policy(), Case(pod, False))


# --- ephemeral containers ----------------------------------------------------------------------------------


def _debug_update(pod: dict[str, Any], old: dict[str, Any]) -> Case:
    return Case(pod, True, operation="UPDATE", old=old)


def test_kubectl_debug_with_nvidia_visible_devices_none_is_admitted() -> None:
    """NVIDIA/cloud-native-docs@52dcb7b8 container-toolkit/docker-specialized.md:35-36: with `none` no GPU is
    accessible."""
    assert cel_allows(_policy(), _debug_update(_debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="none"), _bound(PLAIN)))


@pytest.mark.parametrize("extra", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"])
def test_a_debug_container_with_another_nvidia_variable_beside_the_void_is_refused(extra: str) -> None:
    """The void is the only NVIDIA_* variable a debug container may set: a second NVIDIA_VISIBLE_DEVICES=all, or
    any variable the runtime reads, is not looked at for what it grants."""
    debug = _with_env(
        _debugged(_bound(PLAIN), NVIDIA_VISIBLE_DEVICES="void"), [{"name": extra, "value": "all"}], ephemeral=True
    )
    assert not cel_allows(_policy(), _debug_update(debug, _bound(PLAIN)))


def test_a_debug_container_that_sets_only_an_unrelated_variable_is_refused() -> None:
    """Without the void in its own env, the image's ENV (NVIDIA_VISIBLE_DEVICES=all in CUDA images) applies."""
    debug = _debugged(_bound(PLAIN), LOG_LEVEL="debug")
    assert not cel_allows(_policy(), _debug_update(debug, _bound(PLAIN)))


def test_a_pod_with_two_debug_containers_from_before_the_policy_is_still_updated() -> None:
    """Each ephemeral container the old pod already had passes, whichever of them it is."""
    debugged = _debugged(_bound(PLAIN))
    debugged["spec"]["ephemeralContainers"].append({"name": "again", "image": "nvcr.io/nvidia/cuda:12.4.1-base"})
    assert cel_allows(_policy(), _debug_update(debugged, copy.deepcopy(debugged)))


# --- what the tenant is told ------------------------------------------------------------------------------


def _reported(policy: dict[str, Any], case: Case) -> str | None:
    """What the API server tells the tenant: the first validation that does not hold gives its message when it
    evaluates to false, and the evaluation error's own text when it errors (kubernetes/apiserver@v0.35.0
    pkg/admission/plugin/policy/validating/validator.go:139-147, dispatcher.go:289-296)."""
    env = celpy.Environment()
    activation = {
        "object": celpy.json_to_cel(case.pod),
        "oldObject": celpy.json_to_cel(case.old),
        "request": celpy.json_to_cel({"operation": case.operation, "userInfo": {"username": case.user}}),
    }
    for validation in policy["spec"]["validations"]:
        try:
            result = env.program(env.compile(validation["expression"])).evaluate(activation)
        except celpy.CELEvalError as error:
            return f"evaluation error: {error}"
        if not isinstance(result, celpy.celtypes.BoolType):
            return f"evaluation error: {result!r}"
        if not result:
            return validation["message"]
    return None


def _with_annotation(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod with a legacy MIG share annotation (KAI reads it like the resource: pod_info.go:557-572)."""
    out = copy.deepcopy(pod)
    out["metadata"]["annotations"]["nvidia.com/mig-1g.5gb"] = "1"
    return out


def _without_annotations(pod: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(pod)
    del out["metadata"]["annotations"]
    return out


VALUE_FROM = [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "cuda", "key": "gpus"}}}]
REFUSED_BY_A_RULE = {
    "kubectl debug with a CUDA image (no env)": Case(
        _debugged(_bound(PLAIN)), False, operation="UPDATE", old=_bound(PLAIN)
    ),
    "kubectl debug whose NVIDIA_VISIBLE_DEVICES comes from a ConfigMap": Case(
        _with_env(_debugged(_bound(PLAIN)), VALUE_FROM, ephemeral=True), False, operation="UPDATE", old=_bound(PLAIN)
    ),
    "CoreDNS copy tolerating every taint (a toleration without a key)": Case(
        coredns(spec={"tolerations": [{"operator": "Exists"}]}), False
    ),
    "a legacy MIG annotation added to a bound pod": Case(
        _with_annotation(SHARED), False, operation="UPDATE", old=SHARED
    ),
    "a share added to a bound pod that had no annotations": Case(
        SHARED, False, operation="UPDATE", old=_without_annotations(_bound(PLAIN))
    ),
}


@pytest.mark.parametrize("name", list(REFUSED_BY_A_RULE))
def test_a_refused_pod_is_told_the_rules_message_not_an_evaluation_error(name: str) -> None:
    """A field the pod leaves out is tested with has() before it is read: an error would deny the pod just the
    same, but tell the tenant `no such key` instead of what to change."""
    policy = _policy()
    assert _reported(policy, REFUSED_BY_A_RULE[name]) in [v["message"] for v in policy["spec"]["validations"]]


# --- what the API server's compiler refuses and cel-python does not ----------------------------------------

# kubernetes/apiserver@v0.35.0 pkg/admission/plugin/cel/compile.go:34-41: the variables a policy's CEL may read.
DECLARED = {"object", "oldObject", "params", "request", "namespaceObject", "authorizer", "variables"}
# CEL's standard functions and macros (google/cel-spec doc/langdef.md, "Standard Definitions"), with their
# arities: a global call, and a call on a receiver.
FUNCTIONS = {"has": 1, "size": 1, "double": 1, "uint": 1, "int": 1, "string": 1}
METHODS = {"all": 2, "exists": 2, "exists_one": 2, "map": 2, "filter": 2, "matches": 1, "startsWith": 1}
METHODS |= {"endsWith": 1, "contains": 1, "size": 0}
# Kubernetes' quantity library, in the API server's base CEL environment from 1.28 (k8s.io/apiserver
# pkg/cel/environment/base.go, library.Quantity(); pkg/cel/library/quantity.go): kaistack needs 1.30 for the policy.
FUNCTIONS |= {"quantity": 1}
METHODS |= {"isGreaterThan": 1}
MACROS = {"all", "exists", "exists_one", "map", "filter"}


def _undeclared(expression: str) -> list[str]:
    """Each variable the API server does not declare, and each call of no function CEL has (name/arity): cel-go
    refuses the policy for them when it is created; cel-python errors only if it reaches them, and an `||` or `&&`
    whose other side decides absorbs the error."""
    found: list[str] = []

    def params(node: lark.Tree) -> list[Any]:
        lists = [c for c in node.children if isinstance(c, lark.Tree) and c.data == "exprlist"]
        return list(lists[0].children) if lists else []

    def walk(node: Any, bound: frozenset[str]) -> None:
        if not isinstance(node, lark.Tree):
            return
        if node.data == "ident":
            if str(node.children[0]) not in bound | DECLARED:
                found.append(str(node.children[0]))
        elif node.data in ("ident_arg", "dot_ident_arg", "dot_ident"):
            name, args = str(node.children[0]), params(node)
            if node.data != "ident_arg" or FUNCTIONS.get(name) != len(args):
                found.append(f"{name}/{len(args)}")
            for arg in args:
                walk(arg, bound)
        elif node.data == "member_dot_arg":
            target, name, args = node.children[0], str(node.children[1]), params(node)
            walk(target, bound)
            if METHODS.get(name) != len(args):
                found.append(f".{name}/{len(args)}")
            elif name in MACROS:
                [var] = [str(v) for v in args[0].scan_values(lambda v: isinstance(v, lark.Token))]
                walk(args[1], bound | {var})
                return
            for arg in args:
                walk(arg, bound)
        else:
            for child in node.children:
                walk(child, bound)

    walk(celpy.Environment().compile(expression), frozenset())
    return found


@pytest.mark.parametrize("sharing", [True, False])
def test_every_expression_reads_only_declared_variables_and_calls_only_cels_functions(sharing: bool) -> None:
    spec = _policy(sharing_enabled=sharing)["spec"]
    expressions = [v["expression"] for v in [*spec["validations"], *spec["matchConditions"]]]
    assert {e: _undeclared(e) for e in expressions if _undeclared(e)} == {}


def test_the_declaration_check_finds_what_cel_python_lets_through() -> None:
    """Guards the test above on expressions cel-python admits whenever the other side of the `||` is true."""
    assert _undeclared("true || Xdouble(object.a) > 0.0") == ["Xdouble/1"]
    assert _undeclared("true || double(Xobject.a) > 0.0") == ["Xobject"]
    assert _undeclared("true || double() > 0.0") == ["double/0"]
    assert _undeclared("true || !(.matches('^[0-9]+$'))") == ["matches/1"]
    assert _undeclared("true || object.a.matches()") == [".matches/0"]
    assert _undeclared("object.a.all(c, c.b == d)") == ["d"]
    assert _undeclared("object.a.all(c, c.b.exists(e, e == c.d)) && has(oldObject.x)") == []
