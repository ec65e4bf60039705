"""A stack file's `config:` key without a namespace is the project's: Pulumi rewrites `kai:` to `kaistack:kai`
before the program reads it (pulumi/pulumi@1b594989 sdk/go/common/workspace/loaders.go
stackConfigNamespacedWithProject), so kaistack reads it so too. kaistack ignored it: `check` and `promote` saw the
default where `pulumi up` deployed the written value (found by a review)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kaistack.cli import main
from kaistack.declaration.parse import ConfigError
from kaistack.stack.files import read_stack_config, stack_settings


def test_a_key_without_a_namespace_is_the_projects() -> None:
    settings = stack_settings("config:\n  kai:\n    version: v0.16.0\n  aws:region: eu-west-1\n", "f.yaml")
    assert settings == {"kaistack:kai": {"version": "v0.16.0"}, "aws:region": "eu-west-1"}


def test_a_key_written_both_ways_is_refused() -> None:
    """Pulumi puts both into one Go map in map order: which one `pulumi up` keeps varies from run to run."""
    text = "config:\n  kaistack:kai:\n    version: v0.16.8\n  kai:\n    version: v0.16.0\n"
    with pytest.raises(ConfigError, match=r"config key kaistack:kai is written twice, as 'kaistack:kai' and as 'kai'"):
        stack_settings(text, "Pulumi.b.yaml")


def test_in_another_project_a_key_without_a_namespace_is_that_projects(tmp_path: Path) -> None:
    """kaistack's program reads pulumi.Config("kaistack"): in a project named otherwise, `kai:` is not its."""
    (tmp_path / "Pulumi.yaml").write_text("name: platform\nruntime: python\n")
    (tmp_path / "Pulumi.dev.yaml").write_text("config:\n  kai:\n    version: v0.16.0\n")
    assert read_stack_config(tmp_path, "dev") == {}


def test_an_ambiguous_value_under_a_key_without_a_namespace_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"f.yaml:3: yes is True to kaistack's YAML parser"):
        stack_settings("config:\n  kai:\n    sharing: yes\n", "f.yaml")


def test_promote_edits_the_key_as_the_target_writes_it(project: Path, passing: None, capsys) -> None:
    staging = project / "Pulumi.staging.yaml"
    staging.write_text(staging.read_text().replace("  kaistack:kai:\n", "  kai:\n", 1))
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes", "--json"]) == 0
    config = yaml.safe_load(staging.read_text())["config"]
    assert config["kai"]["version"] == "v0.17.0"
    assert "kaistack:kai" not in config


def test_promote_reads_the_sources_key_without_a_namespace(project: Path, passing: None, capsys) -> None:
    """The source's pin is what it deploys: `kai: {version: ...}` there is kaistack:kai to Pulumi."""
    dev = project / "Pulumi.dev.yaml"
    text = dev.read_text().replace("  kaistack:kai:\n    version: v0.17.0", "  kai:\n    version: v0.16.8", 1)
    assert "  kai:\n    version: v0.16.8" in text
    dev.write_text(text)
    assert main(["promote", "dev", "staging", "--project", str(project), "--yes"]) == 0
    assert yaml.safe_load((project / "Pulumi.staging.yaml").read_text())["config"]["kaistack:kai"]["version"] == (
        "v0.16.8"
    )
