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
from typing import Any

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


def picky(cls: type[PyQuadTree]) -> Any:
    """A subclass with a ``__dict__`` and two slots whose ``__setattr__`` refuses ``"bad"``."""

    class Picky(cls):  # type: ignore[valid-type, misc]
        __slots__ = ("__dict__", "first", "tag")

        def __setattr__(self, name: str, value: object) -> None:
            if value == "bad":
                raise ValueError(f"{name} refused")
            super().__setattr__(name, value)

    return Picky


@both
@pytest.mark.parametrize("tag_before", ["ok", None])
def test_setstate_refused_attribute_leaves_everything(
    cls: type[PyQuadTree], tag_before: str | None
) -> None:
    sub = picky(cls)
    tree = sub(Box(0, 0, 100, 100), threshold=2)
    tree.insert_many(range(1, 8), [(i, i, i + 1.5, i + 1.5) for i in range(1, 8)])
    tree.note = "old"
    if tag_before is not None:
        tree.tag = tag_before
    other = sub(Box(0, 0, 50, 50), threshold=3, max_depth=4)
    other.insert(70, (3.0, 3.0, 4.0, 4.0))
    other.note, other.extra, other.first = "new", 1, "set"
    object.__setattr__(other, "tag", "bad")  # the slot set after "first": refused
    state = other.__getstate__()
    before = tree.__getstate__()
    with pytest.raises(ValueError, match=r"^tag refused$"):
        tree.__setstate__(state)
    assert tree.__getstate__() == before
    assert not hasattr(tree, "first") and vars(tree) == {"note": "old"}
    tree.check()
    assert tree.query((0, 0, 100, 100)) == list(range(1, 8))
    # The first slot refused: only the __dict__ (which nothing refuses) was set before it.
    state["slots"]["first"] = "bad"
    with pytest.raises(ValueError, match=r"^first refused$"):
        tree.__setstate__(state)
    assert tree.__getstate__() == before


@both
def test_setstate_refused_attribute_on_a_fresh_tree(cls: type[PyQuadTree]) -> None:
    """pickle's way: ``__new__`` then ``__setstate__``; the failure leaves the empty tree."""
    sub = picky(cls)
    fresh = sub.__new__(sub)
    before = fresh.__getstate__()
    with pytest.raises(ValueError, match=r"^tag refused$"):
        fresh.__setstate__({
            **before, "ids": [1], "boxes": [0.0, 0.0, 1.0, 1.0], "root": (0.0, 0.0, 1.0, 1.0),
            "attributes": {"note": "new"}, "slots": {"first": 1, "tag": "bad"},
        })
    assert fresh.__getstate__() == before
    assert len(fresh) == 0
