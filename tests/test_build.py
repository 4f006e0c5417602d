"""The build's promise (issue 18): without a working compiler the install still succeeds,
says so in one line, and leaves a pure-Python package that works; and its strict twin
(issue 25): ``ECS_SPATIAL_STRICT_BUILD=1`` makes any warning, and any failure, fail the build.

These run ``setup.py build_ext`` into a temporary directory, most with a compiler that cannot
run (they need no compiler) or a source given a warning through ``CFLAGS``; each takes a
second or two. The other half of the promise (with a compiler, the core is built, and a
build with ``ECS_SPATIAL_NO_EXTENSION=1`` installs and passes the whole suite; the strict
build on every CPython the package claims) is checked by ``.ci/run``, which builds real
wheels and an sdist.
"""

from __future__ import annotations

import importlib.util
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


def _run_build_ext(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``setup.py build_ext`` into ``tmp_path / "lib"``, with these environment variables
    (the caller's ``ECS_SPATIAL_STRICT_BUILD`` left out unless given)."""
    base = {key: value for key, value in os.environ.items() if key != "ECS_SPATIAL_STRICT_BUILD"}
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
         "--build-temp", str(tmp_path / "temp")],
        cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=300,
    )


def _build_ext(tmp_path: Path, **env: str) -> tuple[Path, list[str]]:
    """``setup.py build_ext`` into ``tmp_path``: the build directory, and stderr's lines."""
    result = _run_build_ext(tmp_path, **env)
    assert result.returncode == 0, result.stderr  # never a failed install
    return tmp_path / "lib", result.stderr.splitlines()


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


# ------------------------------------------------------------------ ECS_SPATIAL_STRICT_BUILD=1

STRICT_NOTICE = "makes that an error: no fallback to pure Python."
#: Given to every compile through ``CFLAGS='-include ...'``: a call to a function no header
#: declares, the 3.13 bug's shape (``_PyArg_CheckPositional`` undeclared): GCC 12 warns, GCC 14
#: and clang 16 refuse. ``static inline`` and unused, so a build that passes has no trace of it.
UNDECLARED = (
    "static inline int ecs_spatial_test_caller(void)\n"
    "{ return ecs_spatial_test_undeclared(); }\n"
)


def _with_a_warning(tmp_path: Path) -> str:
    """CFLAGS that give every compile of the core the warning (or error) above."""
    header = tmp_path / "undeclared.h"
    header.write_text(UNDECLARED)
    return f"-include {header}"


compiles = pytest.mark.skipif(sys.platform == "win32", reason="-include is a Unix compiler's")


@compiles
def test_a_warning_fails_the_strict_build_loudly(tmp_path: Path) -> None:
    """Strict: the compiler's complaint, one line naming the extension and the switch, a
    failed build (pip's install fails with it), and no extension left behind."""
    cflags = _with_a_warning(tmp_path)
    result = _run_build_ext(tmp_path, CFLAGS=cflags, ECS_SPATIAL_STRICT_BUILD="1")
    assert result.returncode != 0, result.stderr
    assert "ecs_spatial_test_undeclared" in result.stderr
    notices = [line for line in result.stderr.splitlines() if line.startswith("ecs_spatial:")]
    assert len(notices) == 1, result.stderr
    assert notices[0].startswith("ecs_spatial: _c") and notices[0].endswith(STRICT_NOTICE)
    assert not list((tmp_path / "lib").rglob("_c*")), "a failed strict build left an extension"


@compiles
def test_the_same_warning_leaves_a_normal_build_quiet_and_working(tmp_path: Path) -> None:
    """Not strict (a user's install): the build succeeds either way, with the extension where
    the compiler only warns (GCC up to 13) and with the pure-Python notice where it refuses
    (GCC 14): never a failed install."""
    lib, stderr = _build_ext(tmp_path, CFLAGS=_with_a_warning(tmp_path))
    assert any("ecs_spatial_test_undeclared" in line for line in stderr), stderr
    notices = [line for line in stderr if line.startswith("ecs_spatial:")]
    built = sorted(path.name.partition(".")[0] for path in lib.rglob("_c*"))
    if notices:  # the compiler refused: the quiet fallback, the core absent
        assert len(notices) == 1 and notices[0].startswith(NOTICE), stderr
        assert "_cquadtree" not in built
    else:
        assert built == ["_ccomponents", "_cgeometry", "_cmembers", "_cneighbours", "_cpair_set",
                         "_cquadtree"], (
            built, stderr)


@pytest.mark.skipif(sys.platform == "win32", reason="CC is a Unix compiler's switch")
@pytest.mark.parametrize("compiler", ["missing", "failing"])
def test_a_failed_compile_fails_the_strict_build(tmp_path: Path, compiler: str) -> None:
    """Strict: no compiler, or one that fails, fails the build (where a normal build falls
    back: test_a_failed_compile_says_so_in_one_line_and_the_package_works), saying why."""
    cc = str(tmp_path / "no-such-cc") if compiler == "missing" else _failing_compiler(tmp_path)
    result = _run_build_ext(tmp_path, CC=cc, ECS_SPATIAL_STRICT_BUILD="1")
    assert result.returncode != 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if line.startswith("ecs_spatial:")]
    assert len(notices) == 1 and notices[0].endswith(STRICT_NOTICE), result.stderr
    assert ("no-such-cc" if compiler == "missing" else "failing-cc returned") in notices[0]


def test_strict_and_no_extension_refuse_each_other(tmp_path: Path) -> None:
    """The one demands the core, the other skips it: an error, not a silent empty build."""
    result = _run_build_ext(tmp_path, ECS_SPATIAL_NO_EXTENSION="1", ECS_SPATIAL_STRICT_BUILD="1")
    assert result.returncode != 0
    assert "contradict each other" in result.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("ecs_spatial._cquadtree") is None, reason="the C core is not built"
)
def test_the_core_builds_strictly_on_this_python(tmp_path: Path) -> None:
    """The house rule, on the interpreter running the suite: the package's own C compiles
    with no warning under -Wall -Wextra and GCC 14's error defaults (where the core was
    built for this Python, the toolchain works, so only a warning can fail this)."""
    result = _run_build_ext(tmp_path, ECS_SPATIAL_STRICT_BUILD="1")
    assert result.returncode == 0, result.stderr
    built = sorted(path.name.partition(".")[0] for path in (tmp_path / "lib").rglob("_c*"))
    assert built == sorted(path.stem for path in (ROOT / "ecs_spatial").glob("_c*.c"))


@compiles
def test_a_failed_in_place_build_leaves_no_older_core_behind(tmp_path: Path) -> None:
    """An in-place build (the editable install's, a developer's ``build_ext --inplace``)
    whose compile fails removes the core it built before: the copy an earlier build left in
    build/lib is not this source's, and must not pass for it."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "ecs_spatial", checkout / "ecs_spatial",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, checkout / name)
    base = {key: value for key, value in os.environ.items() if key != "ECS_SPATIAL_STRICT_BUILD"}

    def build_in_place() -> None:
        result = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=checkout, env=base, capture_output=True, text=True, timeout=300,
        )
        assert result.returncode == 0, result.stderr  # a failed compile never fails a build

    build_in_place()
    assert list((checkout / "ecs_spatial").glob("_cquadtree*.so")), "the first build built nothing"
    source = checkout / "ecs_spatial" / "_cquadtree.c"
    source.write_text(source.read_text() + '\n#error "this source does not compile"\n')
    build_in_place()
    assert not list((checkout / "ecs_spatial").glob("_cquadtree*.so")), (
        "a failed in-place build left the previous build's core in place"
    )
