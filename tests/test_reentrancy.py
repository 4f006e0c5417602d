"""The index against its own users' Python: both classes alike (hunt findings 4, 9, 11).

- A threshold or max_depth given as an int subclass is kept as an exact int, so a cycle
  tree -> threshold -> tree is collected (the compiled class has no collector support).
- ``__setstate__`` that fails on a subclass's own attributes puts the index back as it was.
- A change made from inside a call's own conversions (a coordinate's ``__float__``, an id's
  ``__index__``, the iterator of boxes) to the same tree is refused with the busy
  ``RuntimeError`` and the tree is left as it was, in both classes.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from functools import partial
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


# -- a change made from inside a change's own conversions (hunt finding 4) ------------------

BUSY = (
    "QuadTree changed while it was busy (a where= predicate, a conversion or an iterator it "
    "called, a finaliser run by the garbage collector, or another thread)"
)


class Hook:
    """A change to the tree, made once from inside the call under test; ``outcome`` is
    what came of it: ``("done",)`` or its error's type and message."""

    def __init__(self, change: Callable[[], object] | None) -> None:
        self.change = change
        self.outcome: tuple[str, ...] | None = None

    def fire(self) -> None:
        if self.change is None or self.outcome is not None:
            return
        self.outcome = ("running",)
        try:
            self.change()
        except Exception as error:
            self.outcome = ("raised", type(error).__name__, str(error))
            raise
        self.outcome = ("done",)


class Coord(int):
    """A coordinate (a ``numbers.Real``, converted with ``float()``) that fires the hook."""

    hook: Hook

    def __float__(self) -> float:
        self.hook.fire()
        return float(int(self))


class Id:
    """An integer-like id whose ``__index__`` fires the hook."""

    def __init__(self, value: int, hook: Hook) -> None:
        self.value, self.hook = value, hook

    def __index__(self) -> int:
        self.hook.fire()
        return self.value


class Dropped:
    """An iterable whose iterator fires the hook when it is let go of."""

    def __init__(self, items: list[int], hook: Hook) -> None:
        self.items, self.hook = items, hook

    def __iter__(self) -> Iterator[int]:
        return DroppedIterator(self.items, self.hook)


class DroppedIterator:
    def __init__(self, items: list[int], hook: Hook) -> None:
        self.it, self.hook = iter(items), hook

    def __iter__(self) -> DroppedIterator:
        return self

    def __next__(self) -> int:
        return next(self.it)

    def __del__(self) -> None:
        with contextlib.suppress(RuntimeError):  # a finaliser's: the outcome records it
            self.hook.fire()


def coord(value: int, hook: Hook) -> Coord:
    c = Coord(value)
    c.hook = hook
    return c


def firing(items: list[Any], hook: Hook) -> Iterator[Any]:
    """The items, the hook fired between the first and the second."""
    for i, item in enumerate(items):
        if i == 1:
            hook.fire()
        yield item


B = (1.0, 1.0, 2.0, 2.0)
#: Calls of the tree under test (its entities 1 to 6), each running the hook in its middle.
CALLS: dict[str, Callable[[Any, Hook], object]] = {
    "insert coord": lambda t, h: t.insert(50, (1.0, 1.0, coord(2, h), 2.0)),
    "insert id": lambda t, h: t.insert(Id(50, h), B),
    "insert_many boxes": lambda t, h: t.insert_many([50, 51], firing([B, B, B][:2], h)),
    "insert_many ids": lambda t, h: t.insert_many(firing([50, 51], h), [B, B]),
    "insert_many coord": lambda t, h: t.insert_many([50], [(1.0, 1.0, coord(3, h), 3.0)]),
    "insert_records iterator": lambda t, h: t.insert_records(
        firing([(*B, 50), (*B, 51)], h)
    ),
    "insert_records coord": lambda t, h: t.insert_records([(1.0, 1.0, coord(2, h), 2.0, 50)]),
    "move coord": lambda t, h: t.move(1, (1.0, 1.0, coord(30, h), 32.0)),
    "move id": lambda t, h: t.move(Id(1, h), (60.0, 60.0, 61.0, 61.0)),
    "move_many boxes": lambda t, h: t.move_many([1, 2], firing([(70.0, 70.0, 71.0, 71.0), B], h)),
    "move_many boxes, not atomic": lambda t, h: t.move_many(
        [1, 2], firing([(70.0, 70.0, 71.0, 71.0), B], h), atomic=False
    ),
    "move_many ids": lambda t, h: t.move_many(firing([1, 2], h), [B, B]),
    "move_records iterator": lambda t, h: t.move_records(
        firing([(70.0, 70.0, 71.0, 71.0, 1), (*B, 2)], h)
    ),
    "move_records coord": lambda t, h: t.move_records([(1.0, 1.0, coord(30, h), 32.0, 1)]),
    "remove id": lambda t, h: t.remove(Id(1, h)),
    "discard id": lambda t, h: t.discard(Id(1, h)),
    "find_intersections_for ids": lambda t, h: t.find_intersections_for(firing([1, 2, 3], h)),
    "find_intersections_for id": lambda t, h: t.find_intersections_for([Id(1, h), 2]),
    "find_intersections_for dropped": lambda t, h: t.find_intersections_for(
        Dropped([1, 2, 3], h)
    ),
}
#: Changes of the same tree, made by the hook (refused while busy; a discard is deferred).
CHANGES: dict[str, Callable[[Any], object]] = {
    "discard": lambda t: t.discard(2),
    "insert the id": lambda t: t.insert(50, (50.0, 50.0, 51.0, 51.0)),
    "insert another": lambda t: t.insert(77, (5.0, 5.0, 6.0, 6.0)),
    "remove": lambda t: t.remove(1),
    "move": lambda t: t.move(1, (90.0, 90.0, 91.0, 91.0)),
    "move_many": lambda t: t.move_many([1, 2], [(90.0, 90.0, 91.0, 91.0)] * 2),
    "clear": lambda t: t.clear(),
    "insert_many": lambda t: t.insert_many([77, 78], [B, B]),
}


def scene(cls: type[PyQuadTree]) -> Any:
    """Six boxes, two of them overlapping, leaves of 2 (a tree of several nodes)."""
    tree = cls(Box(0, 0, 100, 100), threshold=2)
    tree.insert_many(range(1, 7), [(i * 10.0, i * 10.0, i * 10.0 + 12, i * 10.0 + 12)
                                   for i in range(1, 7)])
    return tree


def run(cls: type[PyQuadTree], call: str, change: str | None) -> tuple[Any, Any, Any]:
    """The call's answer (or error), the hook's outcome and the tree's state after."""
    tree = scene(cls)
    hook = Hook(None if change is None else partial(CHANGES[change], tree))
    try:
        answer: object = ("returned", CALLS[call](tree, hook))
    except Exception as error:  # the error is the answer here
        answer = ("raised", type(error).__name__, str(error))
    tree.check()
    return answer, hook.outcome, tree.__getstate__()


@pytest.mark.parametrize("call", sorted(CALLS))
def test_calls_without_a_change_agree(call: str) -> None:
    answers = [run(cls, call, None) for cls in CLASSES]
    assert answers[0][0][0] == "returned"
    assert all(a == answers[0] for a in answers)


@pytest.mark.parametrize("change", sorted(set(CHANGES) - {"discard"}))
@pytest.mark.parametrize("call", sorted(CALLS))
def test_change_from_inside_a_call_is_refused(call: str, change: str) -> None:
    """Refused with the busy error, which the call raises, the tree as it was: both
    classes, word for word."""
    before = scene(PyQuadTree).__getstate__()
    for cls in CLASSES:
        answer, outcome, after = run(cls, call, change)
        assert outcome == ("raised", "RuntimeError", BUSY), cls
        if call.endswith("dropped"):  # the finaliser's error is unraisable: the call answers
            assert answer == ("returned", run(cls, call, None)[0][1]), cls
        else:
            assert answer == ("raised", "RuntimeError", BUSY), cls
        if call in ("move_many boxes, not atomic", "move_records iterator"):
            continue  # the move before the refusal stands (atomic=False), in both classes
        assert after == before, cls
    assert len({repr(run(cls, call, change)) for cls in CLASSES}) == 1


@pytest.mark.parametrize("call", sorted(CALLS))
def test_discard_from_inside_a_call_waits_for_its_end(call: str) -> None:
    """A discard of an int id made while the tree is busy is deferred: the call answers as
    if it had not been made, and when it ends the entity is gone, as if discarded just
    after it; both classes alike."""
    for cls in CLASSES:
        answer, outcome, after = run(cls, call, "discard")
        assert outcome == ("done",), cls
        plain = scene(cls)
        try:
            expected: object = ("returned", CALLS[call](plain, Hook(None)))
        except Exception as error:  # an answer, as in run()
            expected = ("raised", type(error).__name__, str(error))
        plain.discard(2)
        assert answer == expected, cls
        assert after == plain.__getstate__(), cls
        assert 2 not in plain
    assert len({repr(run(cls, call, "discard")) for cls in CLASSES}) == 1


class Owner:
    """Garbage in a reference cycle whose finaliser discards its entity: the ordinary way a
    game object takes itself out of the index."""

    def __init__(self, tree: Any, entity: int) -> None:
        self.tree, self.entity, self.me = tree, entity, self

    def __del__(self) -> None:
        self.tree.discard(self.entity)


@both
@pytest.mark.parametrize("busy_call", ["move coord", "insert_many boxes", "nearest where"])
def test_a_finaliser_discard_during_a_busy_call_is_applied_after_it(
    cls: type[PyQuadTree], busy_call: str
) -> None:
    """The collector runs inside a busy call (started there by a conversion, an iterator or
    a where= predicate, and a gc.callbacks hook sees it run): the finaliser's discard is
    deferred, not lost, and the entity is gone once the call returns."""
    tree = scene(cls)
    seen: list[bool] = []

    def hook(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            seen.append(3 in tree)  # the finaliser ran: its entity is still there meanwhile

    def collect() -> None:
        gc.callbacks.append(hook)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(hook)

    gc.collect()
    Owner(tree, 3)  # garbage now: only the collector frees it
    if busy_call == "nearest where":
        def where(entity: int) -> bool:
            if not seen:
                collect()
            return True

        assert tree.nearest(0.0, 0.0, k=6, where=where) == [1, 2, 3, 4, 5, 6]
    else:
        CALLS[busy_call](tree, Hook(collect))
    assert seen == [True]
    assert 3 not in tree
    tree.check()
