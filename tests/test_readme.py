"""The README's Python examples, and the package's docstring examples, run and say what
they print and return."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from _block_runner import run_fresh

import ecs_spatial
from ecs_spatial.geometry import Box

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs_and_its_comments_hold(block: str, tmp_path: Path) -> None:
    """Every block runs as the whole program of a fresh interpreter, by the site's rules
    (tests/test_docs.py): a comment holding a literal is its expression's value, a comment
    on esper.process() is what the handlers print, and the program exits with status 0 and
    nothing on stderr (no traceback at exit either)."""
    index = BLOCKS.index(block)
    result = run_fresh(block, f"README.md block {index}", tmp_path)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr


def test_readme_names_the_two_commands_ci_runs() -> None:
    """The README's test command is the one .ci/run calls."""
    text = README.read_text()
    assert "scripts/test.sh" in text and "scripts/demo.sh" in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert "\nscripts/test.sh" in ci


@pytest.mark.parametrize(
    "module", [m.name for m in pkgutil.iter_modules(ecs_spatial.__path__)]
)
def test_docstring_examples_run(module: str) -> None:
    """Every example in a docstring of the package prints what it says it prints."""
    # The compiled index's docstrings are the reference's (scripts/gen_core_headers.py): their
    # examples run on it too, with the reference's Box, which its module does not export; nor
    # does quadtree, which composes the class of its units.
    extra = {"Box": Box} if module in ("_cquadtree", "quadtree") else None
    tree_module = importlib.import_module(f"ecs_spatial.{module}")
    found = doctest.testmod(tree_module, extraglobs=extra)
    assert found.failed == 0
    if module == "quadtree":
        # The class's methods are written in its units (the _tree_* modules), named as the
        # class's own: doctest, which reads the class's own dict, is shown them here.
        finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
        cls = tree_module.QuadTree
        for unit in cls.__mro__[1:-1]:
            for name, member in vars(unit).items():
                for test in finder.find(member, f"QuadTree.{name}",
                                        globs={**vars(tree_module), "Box": Box}):
                    runner.run(test)
        assert runner.failures == 0 and runner.tries >= 7  # cast_box's and raycast_first's
