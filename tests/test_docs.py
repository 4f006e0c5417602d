"""The documentation site's pages (docs/*.md) run: every Python block, the claims in its
comments, and the output the page says it prints. (The README's blocks: test_readme.py.)

A block is run as the whole program of a fresh interpreter (``tests/_block_runner.py``), as
a reader runs it: statement by statement in ``__main__`` (a ``SystemExit`` of 0 ends it),
and it must exit with status 0 and nothing on stderr, tracebacks at exit included. A
comment holds it to what it says, by the README's rule, checked right after its statement
ran:

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

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from _block_runner import run_fresh

import ecs_spatial
from ecs_spatial.quadtree import QuadTree as PyQuadTree

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


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_block_runs_and_says_what_it_does(block: Block, tmp_path: Path) -> None:
    """Each Python block of the site runs as the whole program of a fresh interpreter: its
    comments' claims hold, it prints its Output block, and it exits with status 0 and
    nothing on stderr (no traceback at exit either: a reader's program must end silently).
    A block marked not run at least compiles."""
    source = _expanded(block.code)
    if NOT_RUN in block.info:
        reason = block.info.split(NOT_RUN, 1)[1].split('"')[0]
        assert reason.strip(), f"{block.where}: say why it is not run"
        compile(source, block.where, "exec")
        return
    result = run_fresh(source, block.where, tmp_path)
    assert (result.returncode, result.stderr) == (0, ""), f"{block.where}:\n{result.stderr}"
    if block.output is not None:
        assert result.stdout == block.output, f"{block.where}: printed\n{result.stdout}"


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


def test_api_page_lists_every_method_of_the_index() -> None:
    """docs/api.md lists the reference QuadTree's members one by one (they are written in the
    units the class is composed of, which the page reads as inherited): every public method
    and property, each once, and nothing else."""
    page = (DOCS / "api.md").read_text()
    block = re.search(r"::: ecs_spatial\.quadtree\.QuadTree\n((?:    .*\n)+)", page)
    assert block, "no options block under ::: ecs_spatial.quadtree.QuadTree"
    listed = re.findall(r"^        - (\w+)$", block[1], re.M)
    members: dict[str, object] = {}
    for klass in PyQuadTree.__mro__[:-1]:
        for name, member in vars(klass).items():
            members.setdefault(name, member)
    public = {name for name, member in members.items()
              if not name.startswith("_") and (callable(member) or isinstance(member, property))}
    assert len(listed) == len(set(listed))
    assert set(listed) == public


def test_repository_paths_named_by_the_pages_exist() -> None:
    """Every file or folder of the repository that a page names in code (`bench/...`,
    `ecs_spatial/...`) exists, so that a move shows up here. A path is checked where its
    folder is in this copy of the repository (an sdist may leave results out)."""
    named = {
        (page.name, m[1])
        for page in PAGES
        for m in re.finditer(
            r"`((?:bench|docs|ecs_spatial|examples|scripts|tests|tools)/[^`\s]*)`",
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


def test_the_guides_event_table_lists_every_event() -> None:
    """Every event name ecs_spatial dispatches (each constant of ``ecs_spatial.events``) has
    a row in the guide's table, and the table names no other."""
    import re

    from ecs_spatial import events

    guide = (DOCS / "guide.md").read_text()
    table = guide.split("## Events you can rely on", 1)[1].split("\n\n", 2)[1]
    listed = set(re.findall(r'`"(\w+)"`', table))
    names = {getattr(events, name) for name in events.__all__}
    assert listed == names, (sorted(names - listed), sorted(listed - names))
