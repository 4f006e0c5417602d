"""Figures in one place: the processors' side of the package says in its comments why the code
has its shape and points to the design page's decisions section, which states the figure
once; no comment there states a measured figure or names a dated results folder."""

from __future__ import annotations

import re
from pathlib import Path

import ecs_spatial

PACKAGE = Path(ecs_spatial.__file__).parent
DESIGN = Path(__file__).resolve().parent.parent / "docs" / "design.md"  # the checkout's

#: The index's own modules, which its twin mirrors (held to the same rule on their side).
INDEX_SIDE = {
    "geometry.py", "quadtree.py", "_records.py", "_growth.py", "_snapshots.py",
    "_tree_storage.py", "_tree_check.py", "_tree_state.py", "_tree_nodes.py",
    "_tree_updates.py", "_tree_queries.py", "_tree_nearest.py", "_tree_casts.py",
    "_tree_pairs.py", "index.py",
}

#: A measured figure: a number with a unit of time, a percentage, a ratio or a count of
#: instructions.
FIGURE = re.compile(
    r"\d[\d.,]*\s?(?:ms|us|ns|%|x\b|times\b|instructions)|\d\.\d+ s\b", re.IGNORECASE
)
DATED = re.compile(r"results/[\w-]+-\d{4}-\d{2}-\d{2}")


def _processor_side() -> list[Path]:
    return [p for p in sorted(PACKAGE.glob("*.py")) if p.name not in INDEX_SIDE]


def test_the_design_page_has_a_decisions_section() -> None:
    """The section the comments point to exists, under the anchor they name."""
    text = DESIGN.read_text()
    assert "\n## Decisions\n" in text
    for path in _processor_side():
        for line in path.read_text().splitlines():
            if "design.md#" in line:
                assert "design.md#decisions" in line, (path.name, line)


def test_no_comment_states_a_figure_or_a_dated_folder() -> None:
    """A ``#`` comment of the processors' side points to docs/design.md for a figure; no
    line of it (docstrings included) names a dated results folder."""
    found = []
    for path in _processor_side():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            comment = line.split("#", 1)[1] if "#" in line else ""
            if DATED.search(line) or FIGURE.search(comment):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert found == []
