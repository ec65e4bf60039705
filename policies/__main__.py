"""kaistack's CrossGuard policy pack: `pulumi preview --policy-pack policies/`.

Only assembles the pack. `PolicyPack(...)` starts the gRPC Analyzer server, prints its port and
serves until killed, so nothing here is importable; the policies live in `policies.pack` and the
rules in `kaistack.guardrails.rules` / `kaistack.guardrails.stack_rules`.
"""

import sys
from pathlib import Path

# The engine runs this file with the pack directory first on sys.path; the rules import the
# `policies` and `kaistack` packages from the project root one level up (also installed editable in
# the project venv). The pack directory itself comes off the path so `rules`, `settings`, ... never
# shadow top-level modules of the same name.
HERE = Path(__file__).resolve().parent
sys.path[:] = [str(HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != HERE)]

import os  # noqa: E402

from pulumi_policy import EnforcementLevel, PolicyPack  # noqa: E402

from policies.pack import build_policies, facts_from_environ  # noqa: E402

PolicyPack(
    name="kaistack",
    policies=build_policies(facts_from_environ(os.environ)),
    enforcement_level=EnforcementLevel.MANDATORY,
)
