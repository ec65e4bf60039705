"""Scenario files for `kaistack simulate` (kai-conformance FORMAT.md), read through the one safe loader.

The simulator (`placement`) validates the document; reading it — file size, YAML/JSON, nesting and
alias bounds — happens here, so a scenario is read exactly like every other input.
"""

from __future__ import annotations

from pathlib import Path

from kaistack.declaration import limits
from kaistack.declaration.yaml_load import YamlInputError, load_file
from placement.scenario import Scenario, ScenarioError, parse_scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file (.yaml/.yml, or .json, which parses much faster)."""
    try:
        document = load_file(path, max_bytes=limits.MAX_SCENARIO_FILE_BYTES, what="scenario file")
    except YamlInputError as err:
        raise ScenarioError(str(err)) from None
    return parse_scenario(document, str(path))
