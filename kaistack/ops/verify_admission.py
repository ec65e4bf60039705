"""`kai-admission`: KAI's admission webhooks are registered and answer, on day 2 as `kai-ready` waits for on day 1.

Both failure modes are quiet from where a workload sits. A webhook configuration that is gone (deleted by hand, or
an operator that no longer reconciles) admits pods without KAI's mutations: a pod with a GPU share then gets no
NVIDIA_VISIBLE_DEVICES from its share's ConfigMap and no GPU runtime class, and Queues and PodGroups go unchecked.
One that cannot be called fails closed (every webhook KAI registers is `failurePolicy: Fail`, KAI@v0.17.0
pkg/operator/operands/admission/resources.go:228-268, queue_controller/resources.go:196-221), so every create it
covers, a Deployment's next pod included, is refused until it answers. The check asks once what `kai-ready` waits
for (kaistack.ops.kai_ready): the four configurations served from KAI's namespace, then a dry-run create of a probe
Queue, PodGroup and Pod, which writes nothing. Credentials that may not list webhook configurations or create the
probes leave that part unasked, said in a note.
"""

from __future__ import annotations

from kaistack.declaration.model import StackConfig
from kaistack.kube.client import KubeClient
from kaistack.kube.errors import KubeAPIError, KubeTimeout
from kaistack.ops.kai_ready import not_answered, probes, unregistered
from kaistack.ops.verify_common import CheckResult

CHECK = "kai-admission"


def check_kai_admission(config: StackConfig, client: KubeClient) -> tuple[list[CheckResult], list[str]]:
    namespace = config.kai.namespace
    notes: list[str] = []
    missing = unregistered(client, namespace, notes)
    if missing:
        detail = (
            f"KAI's operator has not registered {', '.join(missing)} (served from {namespace}): what it covers is "
            "admitted unchecked, and a pod with a GPU share gets no devices or GPU runtime class from KAI"
        )
        return [CheckResult(CHECK, namespace, False, detail)], [f"{CHECK}: {n}" for n in notes]
    listed = not notes
    unanswered = []
    for probe in probes():
        try:
            why = not_answered(client, probe, notes)
        except KubeTimeout as err:
            # A webhook that hangs looks like this from here: KAI's set no timeoutSeconds, so the API server waits
            # its default 10 s, as long as the client's default timeout. Any other failure is verify's own error.
            why = str(err)
        except KubeAPIError as err:  # an answer admission never gives: the probe did not reach it (kai_ready.ANSWERED)
            why = f"answered {err}, which no admission step gives (a proxy or a redirect before the API server?)"
        if why is not None:
            unanswered.append(f"{probe.what}: {why}")
    if unanswered:
        detail = (
            "admission did not answer a dry-run create (a webhook that cannot be called is a 500 naming it; 429 or "
            "503 is the API server shedding load: run verify again). KAI's webhooks fail closed, so while they do "
            f"not answer every create they cover is refused: {'; '.join(unanswered)}"
        )
        return [CheckResult(CHECK, namespace, False, detail)], [f"{CHECK}: {n}" for n in notes]
    asked = [p.what for p in probes() if not any(n.startswith(f"{p.what}: not asked") for n in notes)]
    parts = (["registered"] if listed else []) + ([f"a dry-run {', '.join(asked)} answered"] if asked else [])
    if not parts:
        notes.append("not checked: these credentials may neither list webhook configurations nor create the probes")
        return [], [f"{CHECK}: {n}" for n in notes]
    return [CheckResult(CHECK, namespace, True, "; ".join(parts))], [f"{CHECK}: {n}" for n in notes]
