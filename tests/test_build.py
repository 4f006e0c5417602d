"""The build's promise (issue 18): without a working compiler the install still succeeds,
says so in one line, and leaves a pure-Python package that works.

These run ``setup.py build_ext`` into a temporary directory with a compiler that cannot run,
so they need no compiler and take a second or two. The other half of the promise (with a
compiler, the core is built, and a build with ``ECS_SPATIAL_NO_EXTENSION=1`` installs and
passes the whole suite) is checked by ``.ci/run``, which builds real wheels and an sdist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import esper
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTICE = "ecs_spatial: the C core was not built ("

# setup.py reads pyproject.toml's SPDX licence string, which older setuptools refuse.
pytest.importorskip("setuptools", minversion="77")


def _build_ext(tmp_path: Path, **env: str) -> tuple[Path, list[str]]:
    """``setup.py build_ext`` into ``tmp_path``: the build directory, and stderr's lines."""
    lib = tmp_path / "lib"
    result = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(lib),
         "--build-temp", str(tmp_path / "temp")],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr  # never a failed install
    return lib, result.stderr.splitlines()


def _failing_compiler(tmp_path: Path) -> str:
    script = tmp_path / "failing-cc"
    script.write_text("#!/bin/sh\necho 'failing-cc: cannot compile' >&2\nexit 1\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.skipif(sys.platform == "win32", reason="CC is a Unix compiler's switch")
@pytest.mark.parametrize("compiler", ["missing", "failing"])
def test_a_failed_compile_says_so_in_one_line_and_the_package_works(
    tmp_path: Path, compiler: str
) -> None:
    """No compiler, or one that fails: one notice line naming why, no extension, and the
    package imports and answers queries from the pure-Python index."""
    cc = str(tmp_path / "no-such-cc") if compiler == "missing" else _failing_compiler(tmp_path)
    lib, stderr = _build_ext(tmp_path, CC=cc)
    notices = [line for line in stderr if line.startswith("ecs_spatial:")]
    assert len(notices) == 1, stderr
    notice = notices[0]
    assert notice.startswith(NOTICE) and notice.endswith(
        "the pure-Python index is used, with the same behaviour."
    ), notice
    assert ("no-such-cc" if compiler == "missing" else "failing-cc returned") in notice
    assert len(notice) < 300
    assert not list(lib.rglob("_cquadtree*")), "a failed build left an extension behind"

    # The package as such a build installs it: the Python files and no extension.
    package = lib / "ecs_spatial"
    package.mkdir(parents=True, exist_ok=True)
    for source in (ROOT / "ecs_spatial").glob("*.py"):
        shutil.copy(source, package / source.name)
    # -S: no site-packages, where an editable install's finder would lend the package the
    # checkout's own extension; esper comes from its folder alone.
    code = (
        "import sys; sys.path[:0] = sys.argv[1:]\n"
        "import ecs_spatial\n"
        "from ecs_spatial import Box, QuadTree, index\n"
        "assert ecs_spatial.__file__.startswith(sys.argv[1]), ecs_spatial.__file__\n"
        "tree = QuadTree(Box(0, 0, 100, 100))\n"
        "tree.insert(1, Box(10, 10, 20, 20)); tree.insert(2, (15, 15, 30, 30))\n"
        "tree.check()\n"
        "print(ecs_spatial.NATIVE, tree.find_all_intersections(), index.REASON)\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "ECS_SPATIAL_PURE"}
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(lib), str(Path(esper.__file__).parents[1])],
        env=env, cwd=tmp_path,
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.strip()
    assert out.startswith("False [(1, 2)] the extension does not import"), out


def test_no_extension_builds_nothing_and_says_nothing(tmp_path: Path) -> None:
    """ECS_SPATIAL_NO_EXTENSION=1: no compile is tried, so there is nothing to report."""
    lib, stderr = _build_ext(tmp_path, ECS_SPATIAL_NO_EXTENSION="1", CC="no-such-cc")
    assert not [line for line in stderr if line.startswith("ecs_spatial:")], stderr
    assert not list(lib.rglob("_cquadtree*"))
