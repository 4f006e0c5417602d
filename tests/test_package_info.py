"""``python -m ecs_spatial``: the version, which index is in use and why, for bug reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ecs_spatial
from ecs_spatial import index

ROOT = Path(__file__).resolve().parent.parent


def _report(**env: str) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k != "ECS_SPATIAL_PURE"}
    result = subprocess.run(
        [sys.executable, "-m", "ecs_spatial"], cwd=ROOT, env={**base, **env},
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout.splitlines()


def test_the_report_names_the_version_the_index_python_and_esper() -> None:
    """Four lines: this version and where it lives, NATIVE, the Python, the esper."""
    lines = _report()
    assert len(lines) == 4, lines
    assert lines[0].startswith(f"ecs_spatial {ecs_spatial.__version__} from ")
    assert lines[0].endswith(str(Path("ecs_spatial", "__init__.py")))
    native_here = index.REASON in ("", "ECS_SPATIAL_PURE=1")  # the core is built
    assert lines[1].startswith(f"NATIVE = {native_here}"), lines[1]
    assert lines[2].startswith(f"Python {sys.version.split()[0]} ")
    assert lines[3].startswith("esper ")


def test_the_pure_switch_is_named_as_the_reason() -> None:
    """With ECS_SPATIAL_PURE=1 the report says the reference runs, and why: the switch, or,
    in an install without the core, that the extension does not import."""
    lines = _report(ECS_SPATIAL_PURE="1")
    core_built = index.REASON in ("", "ECS_SPATIAL_PURE=1")
    reason = "ECS_SPATIAL_PURE=1" if core_built else index.REASON
    assert lines[1] == f"NATIVE = False: the pure-Python index is in use ({reason})"
