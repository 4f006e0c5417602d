"""A griffe extension for the API reference: the package's docstrings are written for
``help()`` and doctest, reST-flavoured; this turns the two reST habits that Markdown does not
understand into Markdown before mkdocstrings renders them.

- Sphinx roles, ``:class:`~ecs_spatial.quadtree.QuadTree``` and the like, become code
  spans of the name as Sphinx would show it (the last part with ``~``).
- Interactive examples (``>>>`` lines and the output after them) become fenced Python
  blocks, so that they keep their lines instead of running together as prose.

Loaded by ``mkdocs.yml`` (``extensions``); the docstrings themselves are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj):`(~?)([^`]+)`")


def _role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def _fence_examples(text: str) -> str:
    """Each run of ``>>>`` lines and the output lines that follow it, fenced."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(lines[i][len(indent):])
                i += 1
            out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DocstringsAsMarkdown(griffe.Extension):
    """Rewrite each docstring's roles and examples as Markdown, once it is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            value = _ROLE.sub(_role, obj.docstring.value)
            obj.docstring.value = _fence_examples(value)
