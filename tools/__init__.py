"""Investigation tools: profiles, A/B comparisons and self-checks used while working on the
index. They are not the suite's measurements (``python -m bench --help`` lists those): their
output is a profile, a verdict, or the figure behind one decision or one page (a results
file then names the tool). Run each as ``python -m tools.<name> --help``;
``tools/README.md`` says what each is for. :func:`example` imports a scene of
``examples/`` for those that drive one.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str) -> ModuleType:
    """Import ``examples/<name>.py`` by its path, under its own name (the scenes import their
    ``_scaffold`` sibling by that name, which is imported first), without putting
    ``examples/`` on ``sys.path``."""
    if name in sys.modules:
        return sys.modules[name]
    if name != "_scaffold":
        example("_scaffold")
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
