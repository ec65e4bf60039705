"""The placement tests, importable as `placement.<test module>` without shadowing the real package.

pytest puts `tests/` on sys.path, where this directory's name would hide the real `placement` package
from every test module in the run (as a namespace package, or as this package). So this package, when
imported as `placement`, loads the real package in its place and only adds this directory to its
search path: `import placement` keeps meaning the library, and pytest finds `placement.test_*` here.
"""

import importlib.util
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_REAL = _HERE.parents[1] / "placement"

if __name__ == "placement" and Path(__file__).resolve() != (_REAL / "__init__.py"):
    _spec = importlib.util.spec_from_file_location(
        "placement", _REAL / "__init__.py", submodule_search_locations=[str(_REAL), str(_HERE)]
    )
    assert _spec is not None
    assert _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    # The import system returns whatever sys.modules holds once this file has run.
    sys.modules["placement"] = _module
    _spec.loader.exec_module(_module)
