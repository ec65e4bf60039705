"""Setup for the placement tests.

pytest puts `tests/` on sys.path (for the package-style test directories), where this directory would
shadow the real `placement` package as a namespace package; the project root goes first instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
_imported = sys.modules.get("placement")
if _imported is not None and getattr(_imported, "__file__", None) is None:
    # Imported earlier as the namespace package `tests/placement`: forget it so the real one loads.
    for name in [m for m in sys.modules if m == "placement" or m.startswith("placement.")]:
        del sys.modules[name]
