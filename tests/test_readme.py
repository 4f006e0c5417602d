"""The README's Python examples, and the package's docstring examples, run and say what
they print and return."""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import io
import pkgutil
import re
from pathlib import Path

import pytest

import ecs_spatial

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def _claims(block: str) -> list[tuple[str, str]]:
    """Each ``code  # comment`` line whose comment starts with what it claims."""
    claims = []
    for line in block.splitlines():
        code, sep, comment = line.partition("#")
        if sep and code.strip():
            claims.append((code.strip(), comment.strip()))
    return claims


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs_and_its_comments_hold(block: str, world: str) -> None:
    """Every block runs; a comment holding a literal is the expression's value, and a comment
    on esper.process() is what the handlers print."""
    namespace: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(README), "exec"), namespace)
    printed = out.getvalue()
    for code, comment in _claims(block):
        claim = comment.split(":")[0].strip()
        if code == "esper.process()" and claim:
            assert claim in printed, (claim, printed)
            continue
        try:
            expected = ast.literal_eval(claim)
        except (ValueError, SyntaxError):
            continue  # prose, not a claim
        # Re-evaluating a query is side-effect free; the block has already run.
        assert eval(code, namespace) == expected, code


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
    found = doctest.testmod(importlib.import_module(f"ecs_spatial.{module}"))
    assert found.failed == 0
