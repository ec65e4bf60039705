"""`kaistack promote SOURCE TARGET`: copy tested release pins from one stack's file into the next one's.

What moves (the *release*): `kaistack:kai.version`; `vcluster.version` of every tenant present in
both stacks; the GPU stack's chart version for the target's `gpu.mode` (`gpu.fake.version`,
`gpu.devicePlugin.version`, `gpu.gpuOperator.version`); the `image` of every workload the source
marks `promoted: true` that the target also declares (matched by name). What stays (the
*environment*): cluster, node pools, tenants, queues, secrets and everything else in the target.

Values compared are the *effective* ones (the model's defaults fill what a file leaves out), so a
pin the source inherits from `kaistack.declaration.versions` is written into the target only when the target
would otherwise run something else. The GPU chart pin is taken only when the source runs the same
`gpu.mode` or sets that key explicitly; a default of a mode the source never ran is not a tested pin.

The flow, and its seams:
1. `plan_promotion` reads the target file once (bytes + sha256) and computes the edited text with
   `kaistack.ops.yaml_edit` (comments, order, quoting and `secure:` values are kept byte for byte).
2. `check_candidate` parses the would-be target into the model (`kaistack.declaration.parse.parse_config`), then
   runs `validate_project` (module attribute: policies + capacity through `kaistack.ops.validate`) on an
   overlay of the project where only the target's stack file is replaced. Nothing is written yet.
3. `write_promotion` re-hashes the target right before an atomic replace (temp file in the same
   directory + `os.replace`) and raises `TargetChanged` if anyone edited it since step 1.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from kaistack.declaration import limits
from kaistack.declaration.model import StackConfig
from kaistack.declaration.parse import NAMESPACE, ClusterUnreadable, ConfigError
from kaistack.declaration.pulumi_yaml import refuse_ambiguous_scalars
from kaistack.declaration.versions import release_order
from kaistack.declaration.yaml_load import YamlInputError, load_one_document, read_text
from kaistack.errors import EnvironmentProblem
from kaistack.ops.promote_images import not_the_same_workload, older_tag
from kaistack.ops.promote_plan import (  # re-exported: the CLI and tests import them from here
    CandidateCheck,
    Pin,
    PromotionError,
    PromotionPlan,
    PromotionResult,
    Skipped,
    TargetChanged,
)
from kaistack.ops.safe_write import FileChanged, ensure_unchanged, refuse_read_only, replace_if_unchanged
from kaistack.ops.yaml_edit import YamlEditError, set_values
from kaistack.progress import Progress
from kaistack.stack.files import (
    kaistack_keys,
    namespaced,
    project_name,
    read_stack_config,
    read_stack_file,
    stack_file,
)
from kaistack.stack.load import LoadOptions, resolve_settings

# A named Job or Pod whose pod template changes is replaced, the old one deleted first (pulumi/pulumi-kubernetes
# provider/pkg/provider/diff.go forceNew fields, provider.go Diff deleteBeforeReplace): a new image stops the run.
# kaistack replaces a PyTorchJob the same way (training_operator.REPLACED_ON_CHANGES).
RESTARTED_KINDS = ("Job", "Pod", "PyTorchJob")
# gpu.mode -> the settings block whose chart `version` is the GPU stack's pin.
GPU_PIN_BLOCK = {"fake": "fake", "device-plugin": "devicePlugin", "gpu-operator": "gpuOperator"}


# --- 1. plan ----------------------------------------------------------------------------------------


def plan_promotion(project_dir: Path, source: str, target: str, allow_downgrade: bool = False) -> PromotionPlan:
    """Read both stacks and compute the edited target text. Raises ConfigError for unknown or invalid stacks."""
    if source == target:
        raise ConfigError([f"source and target are both {source!r}; promote between two stacks"])
    source_settings = read_stack_file(project_dir, source)
    source_raw = kaistack_keys(source_settings)
    source_config = _resolve(source_settings, source, stack_file(project_dir, source).name)
    target_file = stack_file(project_dir, target)
    if not target_file.is_file():
        read_stack_config(project_dir, target)  # raises the standard "no Pulumi.<stack>.yaml; stacks here: ..."
    project = project_name(project_dir)
    try:  # the one bounded reader and loader: a bomb, a bad byte or a repeated key is refused, not crashed on
        text = read_text(target_file, max_bytes=limits.MAX_STACK_FILE_BYTES, what="stack file")
        document = _load_document(text, target_file.name, project)
    except YamlInputError as err:
        raise ConfigError(str(err).splitlines()) from None  # one problem per line (every ambiguous value)
    original = text.encode("utf-8")  # the file's bytes: it decoded as UTF-8, which round-trips exactly
    written = document.get("config") or {}
    target_settings = namespaced(written, target_file.name, project)
    target_raw = _kaistack_keys(target_settings)
    target_config = _resolve(target_settings, target, target_file.name)
    pins, skipped = _pins(source, source_config, source_raw, target_config, target_raw, allow_downgrade)
    # An edit goes to the key as the target writes it: `kai:` in kaistack's project is Pulumi's kaistack:kai.
    spelled = {f"{project}:{k}": str(k) for k in written if ":" not in str(k)}
    edits = [(("config", spelled.get(str(p.path[1]), p.path[1]), *p.path[2:]), p.new) for p in pins]
    try:
        new_text = set_values(text, edits) if pins else text
    except YamlEditError as err:
        raise PromotionError(f"cannot edit {target_file.name}: {err}") from err
    return PromotionPlan(
        project_dir=project_dir,
        source=source,
        target=target,
        target_file=target_file,
        original_bytes=original,
        digest=hashlib.sha256(original).hexdigest(),
        new_text=new_text,
        pins=tuple(pins),
        skipped=tuple(skipped),
    )


def _pins(
    source: str,
    src: StackConfig,
    src_raw: Mapping[str, Any],
    dst: StackConfig,
    dst_raw: Mapping[str, Any],
    allow_downgrade: bool = False,
) -> tuple[list[Pin], list[Skipped]]:
    pins, skipped = list[Pin](), list[Skipped]()

    def pin(
        key: str, path: tuple[str | int, ...], old: str, new: str, raw_block: Any, raw_key: str, pinned: bool = False
    ) -> None:
        """`pinned`: the source's file sets the value. Copied even where the target runs it as the default, which a
        later kaistack release may move while the source stays where it was tested."""
        added = not (isinstance(raw_block, Mapping) and raw_key in raw_block)
        if old != new or (pinned and added):
            before, after = release_order(old), release_order(new)
            down = before is not None and after is not None and after < before
            if down and not allow_downgrade:  # a hotfix tested on the target first; vCluster cannot step down
                skipped.append(Skipped(f"{NAMESPACE}:{key}", f"runs {old}, newer than {source}'s {new}; kept "
                                       "(--allow-downgrade steps it back)", kept_newer=True))  # fmt: skip
                return
            pins.append(Pin(f"{NAMESPACE}:{key}", ("config", *path), old, new, added, down))

    kai_raw = dst_raw.get("kai")
    src_kai = "version" in _block(src_raw, "kai")
    pin("kai.version", (f"{NAMESPACE}:kai", "version"), dst.kai.version, src.kai.version, kai_raw, "version", src_kai)

    mode = dst.gpu.mode
    if mode in GPU_PIN_BLOCK:
        block = GPU_PIN_BLOCK[mode]
        attr = {"fake": "fake", "devicePlugin": "device_plugin", "gpuOperator": "gpu_operator"}[block]
        src_gpu_raw = _block(src_raw, "gpu")
        src_sets = "version" in _block(src_gpu_raw, block)
        key = f"gpu.{block}.version"
        if src.gpu.mode == mode or src_sets:
            dst_gpu_raw = _block(dst_raw, "gpu")
            pin(
                key,
                (f"{NAMESPACE}:gpu", block, "version"),
                getattr(dst.gpu, attr).version,
                getattr(src.gpu, attr).version,
                dst_gpu_raw.get(block),
                "version",
                src_sets,
            )
        else:
            skipped.append(
                Skipped(
                    f"{NAMESPACE}:{key}",
                    f"{source} runs gpu.mode {src.gpu.mode!r} and does not set {key}; no tested pin to copy",
                )
            )

    src_tenants = {t.name: t for t in src.tenants}
    src_raw_tenants = {
        str(t.get("name")): t for t in (src_raw.get("tenants") or []) if isinstance(t, Mapping)
    }  # fmt: skip
    raw_tenants = dst_raw.get("tenants") or []
    for index, tenant in enumerate(dst.tenants):
        if tenant.name not in src_tenants:
            skipped.append(Skipped(f"{NAMESPACE}:tenants[{tenant.name}]", f"tenant not declared in {source}"))
            continue
        raw = raw_tenants[index] if index < len(raw_tenants) and isinstance(raw_tenants[index], Mapping) else {}
        pin(
            f"tenants[{tenant.name}].vcluster.version",
            (f"{NAMESPACE}:tenants", index, "vcluster", "version"),
            tenant.vcluster.version,
            src_tenants[tenant.name].vcluster.version,
            raw.get("vcluster"),
            "version",
            "version" in _block(src_raw_tenants.get(tenant.name, {}), "vcluster"),
        )

    dst_workloads = {w.name: i for i, w in enumerate(dst.workloads)}
    for work in src.workloads:
        if not work.promoted:
            continue
        if work.name not in dst_workloads:
            skipped.append(Skipped(f"{NAMESPACE}:workloads[{work.name}]", "promoted workload not declared in target"))
            continue
        index = dst_workloads[work.name]
        other = dst.workloads[index]
        left = not_the_same_workload(work, other, source, allow_downgrade)
        if left is not None:
            reason, newer = left
            skipped.append(Skipped(f"{NAMESPACE}:workloads[{work.name}].image", reason, kept_newer=newer))
            continue
        before = len(pins)
        pin(
            f"workloads[{work.name}].image",
            (f"{NAMESPACE}:workloads", index, "image"),
            dst.workloads[index].image,
            work.image,
            {"image": True},  # image is required, so the target always sets it
            "image",
        )
        kind = dst.workloads[index].kind
        if len(pins) > before and kind in RESTARTED_KINDS:
            pins[-1] = replace(pins[-1], restarts=f"the running {kind} is deleted, then created again")
        if len(pins) > before and older_tag(work.image, other.image):
            pins[-1] = replace(pins[-1], downgrade=True)
    return pins, skipped


def _resolve(settings: Mapping[str, Any], stack: str, source: str) -> StackConfig:
    """The stack's model through the one load path; pins are versions, so nothing is discovered here
    (the candidate's full validation, `validate_project`, loads it again with discovery)."""
    return resolve_settings(settings, stack=stack, source=source, options=LoadOptions(discover=False)).config


# --- 2. check -----------------------------------------------------------------------------------------


def validate_project(project_dir: Path, stack: str, progress: Progress) -> Any:
    """Policies + capacity for `stack` in `project_dir` (the seam tests replace). Returns a ValidationReport."""
    from kaistack.ops import validate

    return validate.validate_stack(project_dir, stack, progress=progress)


def check_candidate(plan: PromotionPlan, progress: Progress | None = None) -> CandidateCheck:
    """Validate the would-be target without touching the real file."""
    progress = progress or Progress.quiet()
    name = project_name(plan.project_dir)
    document = _load_document(plan.new_text, plan.target_file.name, name)
    try:
        settings = namespaced(document.get("config") or {}, plan.target_file.name, name)
        _resolve(settings, plan.target, f"{plan.target_file.name} (after promotion)")
    except ClusterUnreadable:
        raise  # the environment's problem (exit 3), not the promoted file's
    except ConfigError as err:
        return CandidateCheck(ok=False, problems=list(err.problems))
    with _overlay(plan) as project:
        try:
            report = validate_project(project, plan.target, progress)
        except ClusterUnreadable:
            raise
        except ConfigError as err:
            return CandidateCheck(ok=False, problems=_in_project(err.problems, project, plan))
        problems = _in_project(report.problem_lines(), project, plan)
    return CandidateCheck(ok=bool(report.ok), problems=problems, report=report)


def _in_project(lines: Iterable[str], overlay: Path, plan: PromotionPlan) -> list[str]:
    """Problems as the user's files name them: the temporary project's paths are the project's."""
    return [line.replace(str(overlay), str(plan.project_dir)) for line in lines]


@contextmanager
def _overlay(plan: PromotionPlan) -> Iterator[Path]:
    """A temporary project dir: symlinks to the real one, with the target's stack file replaced."""
    try:
        context = tempfile.TemporaryDirectory(prefix="kaistack-promote-")
    except OSError as err:
        raise EnvironmentProblem(
            f"cannot create a temporary directory: {err.strerror or err}; nothing written"
        ) from err
    root = Path(context.name)
    try:
        for entry in plan.project_dir.iterdir():
            if entry.name != plan.target_file.name:
                # Not resolved: a link loop anywhere in the project would raise, and a link to a link reads the same.
                (root / entry.name).symlink_to(entry.absolute(), target_is_directory=entry.is_dir())
        (root / plan.target_file.name).write_text(plan.new_text, encoding="utf-8")
    except OSError as err:
        context.cleanup()
        raise EnvironmentProblem(
            f"cannot build the temporary project to validate the promotion in: {err.strerror or err}; nothing written"
        ) from err
    with context:
        yield root


# --- 3. write -----------------------------------------------------------------------------------------


def write_promotion(plan: PromotionPlan) -> None:
    """Atomically replace the target file, unless it changed since `plan_promotion` read it."""
    try:
        replace_if_unchanged(plan.target_file, plan.new_text, plan.digest)
    except FileChanged as err:
        raise TargetChanged(str(err)) from err


# --- the whole flow -------------------------------------------------------------------------------------


# The user answered no at the prompt: nothing failed, nothing written.
DECLINED = "declined at the prompt"


def promote(
    project_dir: Path,
    source: str,
    target: str,
    *,
    write: bool,
    progress: Progress | None = None,
    confirm: Callable[[PromotionPlan, CandidateCheck], bool] | None = None,
    allow_downgrade: bool = False,
) -> PromotionResult:
    """Plan, validate, and (when `write` and `confirm` agree) write. Raises ConfigError for bad stacks.

    A pin the target runs newer than the source (a hotfix tested there first) is left alone, the rest promoted,
    unless `allow_downgrade`: vCluster does not support downgrades, and KAI's CRDs only move forward."""
    progress = progress or Progress.quiet()
    with progress.step(f"reading {source} and {target}"):
        plan = plan_promotion(project_dir, source, target, allow_downgrade)
    if not plan.changed:
        return PromotionResult(plan, None, written=False)
    check = check_candidate(plan, progress)
    if not check.ok:
        return PromotionResult(plan, check, written=False, refused="validation of the promoted target failed")
    if not write:
        return PromotionResult(plan, check, written=False)
    try:  # changed or removed while it was validated: a refusal (exit 1), as at the write, not an unreadable file
        ensure_unchanged(plan.target_file, plan.digest)
    except FileChanged as err:
        return PromotionResult(plan, check, written=False, refused=str(err))
    refuse_read_only(plan.target_file)
    if confirm is not None and not confirm(plan, check):
        return PromotionResult(plan, check, written=False, refused=DECLINED)
    try:
        write_promotion(plan)
    except TargetChanged as err:
        return PromotionResult(plan, check, written=False, refused=str(err))
    return PromotionResult(plan, check, written=True)


# --- helpers ----------------------------------------------------------------------------------------


def _block(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = raw.get(key)
    return value if isinstance(value, Mapping) else {}


def _load_document(text: str, name: str, project: str) -> dict[str, Any]:
    loaded = load_one_document(text, name)
    refuse_ambiguous_scalars(text, name, loaded.node if loaded is not None else None, project)
    document = (loaded.data if loaded is not None else None) or {}
    if not isinstance(document, dict) or not isinstance(document.get("config") or {}, Mapping):
        raise ConfigError([f"{name}: 'config' must be a mapping"])
    return document


def _kaistack_keys(config: Mapping[str, Any]) -> dict[str, Any]:
    prefix = f"{NAMESPACE}:"
    return {str(k)[len(prefix) :]: v for k, v in config.items() if str(k).startswith(prefix)}
