"""The compiled core's house rules (issue 26): ``ecs_spatial/_cquadtree_src/`` holds one unit per
reference module, each a ``.c`` with its ``.h``, small enough to read, each including what it
uses, and ``ecs_spatial/_cquadtree.c`` builds them as one translation unit.

- every unit compiles ALONE (``gcc -fsyntax-only`` with warnings as errors and GCC 14's error
  defaults, ``QT_UNITY`` undefined: ``QT_API`` is then extern), and so does every header: so
  a unit states what it uses instead of leaning on what the unity build included before it;
- no file of the directory is over ``MAX_LINES`` lines, no C function over
  ``MAX_FUNCTION_LINES`` lines of body (``function_lengths``, a brace count, which the tests
  below show can fail);
- the unity file includes every unit exactly once, and nothing else;
- the mirror rule: a newcomer finds the twin of any file from its name alone. Each unit
  ``_cquadtree_src/<stem>.c`` mirrors the reference module ``<stem>.py`` or ``_<stem>.py`` of
  ``ecs_spatial/`` (the C-only units excepted), each reference unit of the index has its
  compiled twin, and each compiled module ``ecs_spatial/_c<stem>.c`` mirrors ``<stem>.py`` or
  ``_<stem>.py``;
- no comment states a measured figure or names a results folder: a comment says why the code
  has its shape and points to docs/design.md#decisions, which states the figure once.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNITS_DIR = ROOT / "ecs_spatial" / "_cquadtree_src"
UNITY = ROOT / "ecs_spatial" / "_cquadtree.c"
PACKAGE = ROOT / "ecs_spatial"

MAX_LINES = 800
MAX_FUNCTION_LINES = 120

#: The units with no Python twin (the reference uses builtins or Python objects for them),
#: as _cquadtree_src/quadtree.c's header comment lists them.
C_ONLY = {"tree.h", "containers.c", "containers.h", "floats.h", "constants.h", "docstrings.h"}

#: The reference modules of the index other than its ``_tree_*`` units, each with a twin here.
INDEX_REFERENCE = ("geometry", "_growth", "_snapshots", "_records", "_wrap", "quadtree")

#: The warnings a unit compiles without: setup.py's, as errors, and GCC 14's error defaults.
GCC_FLAGS = ["-fsyntax-only", "-std=c11", "-Wall", "-Wextra", "-Werror",
             "-Wimplicit-function-declaration", "-Wincompatible-pointer-types",
             "-Wint-conversion"]


def units() -> list[Path]:
    """The units' sources, by name."""
    return sorted(UNITS_DIR.glob("*.c"))


def _code_only(text: str) -> str:
    """``text`` with its comments and string and character literals blanked, lines kept."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match[0])
    pattern = r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'"
    return re.sub(pattern, blank, text, flags=re.S)


def function_lengths(text: str) -> dict[str, int]:
    """Each function defined at file level in C source ``text``: its name and the lines of
    its body between the braces. A block at depth 0 is a function's when the code before its
    ``{`` ends with ``)``, as a definition's parameter list does (an initialiser, a struct or
    an enum does not)."""
    code = _code_only(text)
    lengths: dict[str, int] = {}
    depth = 0
    start = 0
    name = ""
    for index, char in enumerate(code):
        if char == "{":
            if depth == 0:
                before = code[:index].rstrip()
                header = re.search(r"(\w+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)$", before)
                name = header[1] if header and before.endswith(")") else ""
                start = code.count("\n", 0, index)
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0 and name:
                lengths[name] = code.count("\n", 0, index) - start - 1
                name = ""
    return lengths


def test_there_are_units() -> None:
    names = {path.name for path in UNITS_DIR.iterdir()}
    assert {"tree.h", "quadtree.c", "tree_pairs.c", "geometry.c"} <= names
    for path in units():
        assert path.with_suffix(".h").exists(), f"{path.name} has no header beside it"


def test_no_file_is_over_the_limit() -> None:
    long = {path.name: n for path in sorted(UNITS_DIR.iterdir())
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_no_function_is_over_the_limit() -> None:
    long = {}
    for path in sorted(UNITS_DIR.glob("*.[ch]")):
        for name, n in function_lengths(path.read_text(encoding="utf-8")).items():
            if n > MAX_FUNCTION_LINES:
                long[f"{path.name}:{name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_function_scan_can_fail() -> None:
    """The scan above finds a long function, and is not fooled by braces in comments and
    strings, nor by initialisers and structs."""
    body = "\n".join(f"    x += {i};" for i in range(MAX_FUNCTION_LINES + 1))
    source = f"""
static const char *s = "{{ not a block";
typedef struct {{
    int a;
}} S;
static PyMethodDef table[] = {{
    {{"f", (PyCFunction)(void (*)(void))f, 0, NULL}},
}};
/* {{ a comment */
static int
long_one(const double q[4], int (*cb)(int))
{{
    int x = '{{';
{body}
    return x;
}}

static int
short_one(void)
{{
    if (1) {{
        return 0;
    }}
    return 1;
}}
"""
    lengths = function_lengths(source)
    assert lengths == {"long_one": MAX_FUNCTION_LINES + 3, "short_one": 4}


def test_the_unity_file_includes_every_unit_once() -> None:
    text = UNITY.read_text(encoding="utf-8")
    included = re.findall(r'^#include "([^"]+)"', text, re.M)
    assert sorted(included) == sorted(f"_cquadtree_src/{path.name}" for path in units())
    assert len(included) == len(set(included))
    uncommented = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    code = [line for line in uncommented.splitlines() if line.strip()]
    assert code == ["#define QT_UNITY 1", *(f'#include "{name}"' for name in included)]


def test_the_c_only_units_are_listed() -> None:
    """quadtree.c's header comment names each unit with no reference twin."""
    text = (UNITS_DIR / "quadtree.c").read_text(encoding="utf-8")
    comment = text[:text.index("*/")]
    for name in sorted(C_ONLY):
        assert name in comment, name


#: A measured figure in a comment: a time, a percentage, a ratio, a count of instructions or
#: bytes, a size of world; or a results folder, or a results page named outside the design page.
FIGURE = re.compile(r"\d[\d.,]*\s?(?:ms|us|ns|%|x\b|times\b|instructions|bytes)|N = \d"
                    r"|bench/results|decisions\.md", re.IGNORECASE)


def test_no_comment_states_a_figure() -> None:
    found = []
    for path in sorted(UNITS_DIR.glob("*.[ch]")):
        if path.name == "docstrings.h":  # the reference's docstrings, held on its side
            continue
        text = path.read_text(encoding="utf-8")
        for comment in re.finditer(r"/\*.*?\*/", text, re.S):
            for hit in FIGURE.finditer(comment[0]):
                line = text.count("\n", 0, comment.start() + hit.start()) + 1
                found.append(f"{path.name}:{line}: {hit[0]}")
    assert found == []
    assert FIGURE.search("took a sixth of the search at N = 10,000 (bench/results/)")


def _gcc() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("gcc is not installed")
    return gcc


@pytest.mark.parametrize("name", [path.name for path in sorted(UNITS_DIR.glob("*.[ch]"))])
def test_each_unit_compiles_alone(name: str) -> None:
    """The unit (or header) alone, as its own translation unit: it includes what it uses."""
    command = [_gcc(), *GCC_FLAGS, "-I", sysconfig.get_paths()["include"]]
    if name.endswith(".h"):
        command += ["-x", "c"]
    result = subprocess.run([*command, str(UNITS_DIR / name)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def _reference_twin(stem: str) -> Path | None:
    """``ecs_spatial/<stem>.py`` or ``ecs_spatial/_<stem>.py``, whichever exists."""
    for name in (f"{stem}.py", f"_{stem}.py"):
        if (PACKAGE / name).exists():
            return PACKAGE / name
    return None


@pytest.mark.parametrize("unit", sorted(p.name for p in UNITS_DIR.glob("*.c")))
def test_each_unit_mirrors_a_reference_module(unit: str) -> None:
    if unit in C_ONLY:
        return
    stem = unit.removesuffix(".c")
    twin = _reference_twin(stem)
    assert twin is not None, f"_cquadtree_src/{unit} mirrors no {stem}.py or _{stem}.py"
    assert (UNITS_DIR / f"{stem}.h").exists(), f"_cquadtree_src/{unit} has no header"


def test_each_reference_unit_of_the_index_has_its_compiled_twin() -> None:
    stems = [p.stem for p in PACKAGE.glob("_tree_*.py")] + list(INDEX_REFERENCE)
    missing = [s for s in stems if not (UNITS_DIR / f"{s.lstrip('_')}.c").exists()]
    assert not missing, f"reference units without a compiled twin in _cquadtree_src/: {missing}"


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("_c*.c")))
def test_each_compiled_module_mirrors_a_reference_module(module: str) -> None:
    stem = module.removesuffix(".c").removeprefix("_c")
    assert _reference_twin(stem) is not None, f"{module} mirrors no {stem}.py or _{stem}.py"


def test_the_c_only_units_exist() -> None:
    """The exceptions are files: a stale name in C_ONLY would let a stray unit through."""
    present = {p.name for p in UNITS_DIR.glob("*.[ch]")}
    assert present >= C_ONLY, C_ONLY - present


def test_no_directory_is_named_like_a_compiled_module() -> None:
    """The units live in ``_cquadtree_src/``, not ``_cquadtree/``: a directory named like an
    extension imports as a namespace package wherever the extension is not built (a clone
    without a compiler), so ``import ecs_spatial._cquadtree`` would succeed with nothing in it
    and the fallback would report a confusing reason."""
    for module in PACKAGE.glob("_c*.c"):
        assert not (PACKAGE / module.stem).is_dir(), module.stem
