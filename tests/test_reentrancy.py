"""The index against its own users' Python: both classes alike (hunt findings 4, 9, 11).

- A threshold or max_depth given as an int subclass is kept as an exact int, so a cycle
  tree -> threshold -> tree is collected (the compiled class has no collector support).
- ``__setstate__`` that fails on a subclass's own attributes puts the index back as it was.
- A change made from inside a call's own conversions (a coordinate's ``__float__``, an id's
  ``__index__``, the iterator of boxes) to the same tree is refused with the busy
  ``RuntimeError`` and the tree is left as it was, in both classes.
"""

from __future__ import annotations

import gc

import pytest

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

CLASSES: list[type[PyQuadTree]] = [PyQuadTree]
if index.NATIVE:
    CLASSES.append(index.QuadTree)

both = pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__module__)


class Thr(int):
    """An int subclass that refers back to its tree and counts its living instances."""

    alive = 0
    tree: object = None

    def __del__(self) -> None:
        Thr.alive -= 1


@both
def test_threshold_cycles_are_collected(cls: type[PyQuadTree]) -> None:
    Thr.alive = 0
    for _ in range(200):
        thr, depth = Thr(4), Thr(5)
        Thr.alive += 2
        tree = cls(Box(0, 0, 1, 1), threshold=thr, max_depth=depth)
        thr.tree = depth.tree = tree
        assert type(tree.threshold) is int and type(tree.max_depth) is int
        assert "threshold=4, max_depth=5," in repr(tree)
        state = tree.__getstate__()
        assert type(state["threshold"]) is int and type(state["max_depth"]) is int
        del tree, thr, depth
    gc.collect()
    assert Thr.alive == 0
