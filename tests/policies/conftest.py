"""Shared setup for the policy pack, lint and admission tests.

The project root goes on sys.path first: other test directories are packages whose base (`tests/`)
pytest puts on sys.path, where `tests/policies` (no __init__) must never shadow the real `policies`.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
