"""Which config values may be secret (kaistack.declaration.config_secrets), at both edges.

Offline a stack file's `secure:` values are masked to "[secret]" and the keys holding one are known from the
file; under Pulumi the values arrive decrypted and `PULUMI_CONFIG_SECRET_KEYS` names the keys.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kaistack.declaration.config_secrets import PLAINTEXT_KUBECONFIG, secret_problems, secure_keys
from kaistack.declaration.parse import ConfigError, parse_config
from kaistack.stack.load import load_stack

EXISTING = {"provider": "existing", "existing": {"kubeconfig": "apiVersion: v1"}}


def test_a_secret_existing_kubeconfig_is_the_one_secret_kaistack_takes() -> None:
    assert secret_problems({"cluster": EXISTING}, ["cluster"]) == []


def test_a_secret_cluster_key_without_a_kubeconfig_is_refused() -> None:
    (problem,) = secret_problems({"cluster": {"provider": "kind"}}, ["cluster"])
    assert problem.startswith("kaistack:cluster: holds a secret value; only cluster.existing.kubeconfig")


def test_a_decrypted_secret_in_another_key_is_refused_by_its_key() -> None:
    (problem,) = secret_problems({"workloads": [{"env": {"HF_TOKEN": "hf_x"}}]}, ["workloads"])
    assert problem.startswith("kaistack:workloads: holds a secret value")


def test_a_masked_secret_is_refused_once_by_its_path() -> None:
    raw = {"workloads": [{"env": {"HF_TOKEN": "[secret]"}}]}
    (problem,) = secret_problems(raw, ["workloads"])
    assert problem.startswith("kaistack:workloads[0].env.HF_TOKEN: only cluster.existing.kubeconfig")


def test_an_env_name_that_looks_like_a_pydantic_marker_is_still_named() -> None:
    (problem,) = secret_problems({"workloads": [{"env": {"string_x": "[secret]"}}]}, None)
    assert problem.startswith("kaistack:workloads[0].env.string_x:")


def test_a_plaintext_kubeconfig_is_refused_where_the_source_can_tell() -> None:
    assert secret_problems({"cluster": EXISTING}, []) == [PLAINTEXT_KUBECONFIG]
    # A policy pack's config cannot tell which keys were secret: nothing is connected with there.
    assert secret_problems({"cluster": EXISTING}, None) == []


def test_the_keys_holding_a_secure_value_are_found_at_any_depth() -> None:
    config = {
        "kaistack:cluster": {"existing": {"kubeconfig": {"secure": "v1:abc"}}},
        "kaistack:workloads": [{"env": {"A": "1"}}],
        "aws:secret": {"secure": "v1:def"},
    }
    assert secure_keys(config) == ["cluster"]


def _project(tmp_path: Path, cluster_yaml: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: kaistack\nruntime: python\n")
    (tmp_path / "Pulumi.lab.yaml").write_text(
        "config:\n  kaistack:cluster:\n    provider: existing\n    name: lab\n" + cluster_yaml
        + "  kaistack:gpu:\n    mode: none\n  kaistack:queues:\n    - name: team\n"
    )  # fmt: skip
    return tmp_path


def test_a_stack_file_with_a_plaintext_kubeconfig_is_refused_before_any_connection(tmp_path: Path) -> None:
    """A kubeconfig is code (exec plugins, token files): one a branch brings never runs on a reviewer's machine."""
    marker = tmp_path / "ran"
    kubeconfig = (
        "apiVersion: v1\\ncurrent-context: c\\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\\nusers: [{name: u, user: {exec: {apiVersion: "
        f"client.authentication.k8s.io/v1beta1, command: sh, args: [-c, 'touch {marker}']}}}}]\\n"
    )
    project = _project(tmp_path, f'    existing:\n      kubeconfig: "{kubeconfig}"\n')
    with pytest.raises(ConfigError, match=r"cluster\.existing\.kubeconfig: written in plain text"):
        load_stack(project, "lab")
    assert not marker.exists()


def test_a_stack_file_with_a_secure_kubeconfig_loads_without_it(tmp_path: Path) -> None:
    project = _project(
        tmp_path,
        "    existing:\n      kubeconfig:\n        secure: v1:abc\n"
        "    nodePools: [{name: gpu, count: 1, gpus: 1, cpu: '8', memory: 32Gi}]\n",
    )
    config = load_stack(project, "lab").config
    assert config.cluster.existing is not None
    assert config.cluster.existing.kubeconfig == "[secret]"


def test_a_key_with_a_newline_is_quoted_in_the_message() -> None:
    (problem,) = secret_problems({"workloads": [{"env": {"A\n### forged": "[secret]"}}]}, None)
    assert problem.startswith("kaistack:workloads[0].env.'A\\n### forged':")


def test_a_secret_top_level_key_with_a_newline_is_quoted() -> None:
    (problem,) = secret_problems({}, ["x\n### forged"])
    assert problem.startswith("kaistack:'x\\n### forged': holds a secret value")


# --- config errors never quote a decrypted secret ------------------------------------------------------------
# Under `pulumi up` the program gets secrets decrypted, and a ConfigError becomes its RunError: CI logs, the
# preview's PR comment. Pydantic's message names the rule; the value is left out.

TOKEN = "SUPERSECRET-TOKEN-abc123"


@pytest.mark.parametrize(
    "kubeconfig",
    [{"users": [{"name": "u", "user": {"token": TOKEN}}]}, [TOKEN], f"token: {TOKEN}\n" + "x" * 1_000_001],
    ids=["a-mapping", "a-list", "too-long"],
)
def test_a_bad_kubeconfig_is_described_without_its_value(kubeconfig: object) -> None:
    raw = {"cluster": {"provider": "existing", "existing": {"kubeconfig": kubeconfig}}, "gpu": {"mode": "none"}}
    with pytest.raises(ConfigError, match=r"kaistack:cluster\.existing\.kubeconfig: .*the value is not shown") as err:
        parse_config(raw, "stack x", secret_keys=["cluster"])
    assert TOKEN not in str(err.value)


def test_a_kubeconfig_value_is_not_shown_even_when_the_source_does_not_mark_it_secret() -> None:
    raw = {"cluster": {"provider": "existing", "existing": {"kubeconfig": [TOKEN]}}, "gpu": {"mode": "none"}}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "stack x")
    assert TOKEN not in str(err.value)


def test_a_bad_value_under_a_secret_key_is_described_without_it() -> None:
    """`pulumi config set --secret --path 'kaistack:workloads[0].env.PIN' 987654321` stores a number."""
    raw = {"cluster": {"provider": "kind"}, "workloads": [{"name": "w", "image": "x", "env": {"PIN": 987654321}}]}
    with pytest.raises(ConfigError, match=r"kaistack:workloads\[0\]\.env\.PIN: Input should be a valid string") as err:
        parse_config(raw, "stack x", secret_keys=["workloads"])
    assert "987654321" not in str(err.value)


def test_a_validators_message_under_a_secret_key_is_replaced_whole() -> None:
    """A validator's message may quote the value (an adminPrincipals ARN, a vCluster version)."""
    principal = f"not-an-arn-{TOKEN}"
    raw = {"cluster": {"provider": "eks", "eks": {"region": "us-west-2", "adminPrincipals": [principal]}}}
    with pytest.raises(ConfigError, match=r"kaistack:cluster\.eks\.adminPrincipals: invalid value \(the value") as err:
        parse_config(raw, "stack x", secret_keys=["cluster"])
    assert TOKEN not in str(err.value)
