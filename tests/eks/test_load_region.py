"""The stack's aws:region against kaistack:cluster.eks.region, a rule of the load path (kaistack.stack.load).

The default AWS provider reads aws:region while discovery and the kubeconfig read the model's region:
a stack that sets them differently is refused where it is loaded, by every command and by the Pulumi
program alike, before anything asks AWS or registers a resource.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from eks_testlib import PROJECT_DIR, REGION

from kaistack.declaration.parse import ConfigError
from kaistack.ops.mocks import MockSession, RenderError
from kaistack.ops.render import MAIN
from kaistack.stack.files import read_stack_config
from kaistack.stack.load import LoadOptions, load_stack, resolve

OFFLINE = LoadOptions(discover=False)
REFUSAL = r"aws:region is 'eu-west-1' but kaistack:cluster\.eks\.region is 'us-west-2'; set both to the same region"
HINT = f"(pulumi config set aws:region {REGION})"


def _project_with_region(tmp_path: Path, name: str, region: Any) -> Path:
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{name}.yaml").read_text())
    if region is None:
        del document["config"]["aws:region"]
    else:
        document["config"]["aws:region"] = region
    (tmp_path / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(document))
    return tmp_path


def test_a_different_aws_region_is_refused() -> None:
    raw = read_stack_config(PROJECT_DIR, "staging")
    with pytest.raises(ConfigError, match=REFUSAL) as excinfo:
        resolve(raw, stack="staging", source="stack staging", options=OFFLINE, aws_region="eu-west-1")
    assert excinfo.value.problems[0].endswith(HINT)


def test_a_stack_file_with_a_different_aws_region_is_refused(tmp_path: Path) -> None:
    project = _project_with_region(tmp_path, "staging", "eu-west-1")
    with pytest.raises(ConfigError, match=REFUSAL) as excinfo:
        load_stack(project, "staging", OFFLINE)
    assert excinfo.value.source == "Pulumi.staging.yaml"
    assert excinfo.value.problems[0].endswith(HINT)


@pytest.mark.parametrize("region", [REGION, None, {"secure": "AAABAOpaque"}], ids=["same", "unset", "secure"])
def test_an_agreeing_absent_or_secure_aws_region_loads(tmp_path: Path, region: Any) -> None:
    project = _project_with_region(tmp_path, "prod", region)
    assert load_stack(project, "prod", OFFLINE).config == load_stack(PROJECT_DIR, "prod", OFFLINE).config


def test_a_kind_stack_does_not_compare_aws_region() -> None:
    raw = read_stack_config(PROJECT_DIR, "dev")
    assert resolve(raw, stack="dev", source="stack dev", options=OFFLINE, aws_region="eu-west-1").config


def test_the_program_refuses_a_different_aws_region(no_aws: None) -> None:
    """__main__ passes the engine's aws:region to the load path; the refusal fails the run before any resource."""
    raw = read_stack_config(PROJECT_DIR, "staging")
    with MockSession("staging") as session:
        session.set_config(raw, {"aws:region": "eu-west-1"})
        with pytest.raises(RenderError, match=REFUSAL):
            session.run(PROJECT_DIR / MAIN)
        assert not session.monitor.records
