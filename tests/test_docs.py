"""The documentation site's pages (docs/*.md) run: every Python block, the claims in its
comments, and the output the page says it prints. (The README's blocks: test_readme.py.)

A block is run statement by statement, in a fresh esper world, as a script would run
(``__name__ == "__main__"``; a ``SystemExit`` of 0 ends it), and a comment holds it to what
it says, by the README's rule, checked right after its statement ran:

- ``expression  # literal`` (text after a ``:`` is prose): the expression equals the literal;
- ``esper.process()  # text``: the handlers printed ``text`` during that call;
- a block followed by a ````text title="Output"```` block printed exactly that.

A line ``--8<-- "path"`` (pymdownx.snippets) stands for that file of the repository, as on
the site. A block that cannot run here says so where the reader sees it, with the reason:
````python title="not run: opens a window"````; it is compiled, so that at least its syntax
holds. Any other fence language than those in ``LANGUAGES`` fails, so that no Python block
escapes in a ``py`` or ``pycon`` fence.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
import textwrap
import tokenize
from dataclasses import dataclass
from pathlib import Path

import esper
import pytest

import ecs_spatial

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))

#: The fence languages the pages may use: Python runs; the others are shown only.
LANGUAGES = {"python", "sh", "text", "toml"}
NOT_RUN = 'title="not run: '
OUTPUT = 'title="Output"'
# A fence may be indented (in a list item or an admonition): its code is dedented.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[^\s`]*)(?P<info>[^\n]*)\n"
    r"(?P<code>.*?)^(?P=indent)```[ \t]*$",
    re.M | re.S,
)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"[ \t]*$', re.M)


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    info: str
    code: str
    output: str | None  # the text of an Output block right after it

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _blocks(page: Path) -> list[Block]:
    text = page.read_text()
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, m in enumerate(fences):
        after = fences[i + 1] if i + 1 < len(fences) else None
        output = None
        if after is not None and after["lang"] == "text" and OUTPUT in after["info"]:
            output = textwrap.dedent(after["code"])
        line = text.count("\n", 0, m.start()) + 1
        code = textwrap.dedent(m["code"])
        blocks.append(Block(page, line, m["lang"], m["info"].strip(), code, output))
    return blocks


BLOCKS = [block for page in PAGES for block in _blocks(page)]
PYTHON = [block for block in BLOCKS if block.lang == "python"]


def _expanded(code: str) -> str:
    """The block as the site shows it: each snippet line replaced by its file."""
    return SNIPPET.sub(lambda m: (ROOT / m["path"]).read_text(), code)


def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string[1:].strip() for t in tokens if t.type == tokenize.COMMENT}


def _literal(comment: str) -> tuple[bool, object]:
    """Whether the comment claims a value (its text before any ':' is a literal), and which."""
    try:
        return True, ast.literal_eval(comment.split(":")[0].strip())
    except (ValueError, SyntaxError):
        return False, None


def run_block(source: str, filename: str) -> str:
    """Run ``source`` statement by statement, checking each comment's claim right after its
    statement ran; return everything it printed."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    comments = _comments(source)
    printed = io.StringIO()
    for statement in ast.parse(source, filename).body:
        claim = comments.get(statement.end_lineno or statement.lineno, "")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                if isinstance(statement, ast.Expr):
                    tree = ast.Expression(statement.value)
                    value = eval(compile(tree, filename, "eval"), namespace)
                else:
                    exec(compile(ast.Module([statement], []), filename, "exec"), namespace)
            except SystemExit as end:
                assert end.code in (0, None), f"{filename}: exit status {end.code}"
                printed.write(out.getvalue())
                break
        printed.write(out.getvalue())
        where = f"{filename}, line {statement.lineno}: {ast.unparse(statement)[:60]}"
        if not claim or not isinstance(statement, ast.Expr):
            continue
        if ast.unparse(statement) == "esper.process()":
            assert claim.split(":")[0].strip() in out.getvalue(), (where, out.getvalue())
            continue
        is_claim, expected = _literal(claim)
        if is_claim:
            assert value == expected, f"{where}: {value!r}, not {expected!r}"
    return printed.getvalue()


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_block_runs_and_says_what_it_does(
    block: Block, world: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each Python block of the site runs in a fresh world, its comments' claims hold, and
    it prints its Output block; a block marked not run at least compiles."""
    source = _expanded(block.code)
    if NOT_RUN in block.info:
        reason = block.info.split(NOT_RUN, 1)[1].split('"')[0]
        assert reason.strip(), f"{block.where}: say why it is not run"
        compile(source, block.where, "exec")
        return
    monkeypatch.setattr(sys, "argv", [block.where])
    worlds = set(esper.list_worlds())
    try:
        printed = run_block(source, block.where)
    finally:  # worlds a block made for itself go too, handlers first (see _worlds.py)
        made = set(esper.list_worlds()) - worlds
        for name in made:
            esper.switch_world(name)
            esper.event_registry.clear()
        esper.switch_world(world)
        for name in made:
            esper.delete_world(name)
    if block.output is not None:
        assert printed == block.output, f"{block.where}: printed\n{printed}"


def test_fences_are_of_known_languages() -> None:
    """No code block hides from the tests behind an unknown language (``py``, ``pycon``)."""
    unknown = [(b.where, b.lang) for b in BLOCKS if b.lang not in LANGUAGES]
    assert not unknown
    assert PYTHON, "no Python block found: has the fence pattern drifted?"


def test_api_page_covers_every_public_name() -> None:
    """docs/api.md names every name of ``ecs_spatial.__all__``."""
    page = (DOCS / "api.md").read_text()
    missing = [name for name in ecs_spatial.__all__ if not re.search(rf"\b{name}\b", page)]
    assert not missing


def test_repository_paths_named_by_the_pages_exist() -> None:
    """Every file or folder of the repository that a page names in code (`bench/...`,
    `ecs_spatial/...`) exists, so that a move shows up here. A path is checked where its
    folder is in this copy of the repository (an sdist may leave results out)."""
    named = {
        (page.name, m[1])
        for page in PAGES
        for m in re.finditer(r"`((?:bench|docs|ecs_spatial|examples|scripts|tests)/[^`\s]*)`",
                             page.read_text())
    }
    missing = [
        (page, path) for page, path in sorted(named)
        if (ROOT / path).parent.is_dir() and not (ROOT / path).exists()
    ]
    assert named and not missing


def test_changelog_has_the_current_version() -> None:
    """CHANGELOG.md (which docs/changelog.md includes) has a section for ``__version__``."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(ecs_spatial.__version__)}\]", changelog, re.M)
    assert '--8<-- "CHANGELOG.md"' in (DOCS / "changelog.md").read_text()
