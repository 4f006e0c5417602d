"""The index under the garbage collector and threads (issue 25, section 1).

On CPython 3.10 and 3.11 an allocation of a tracked object (a list, a tuple, a Box) may run
the cyclic collector, and with it ``__del__``, weakref callbacks and ``gc.callbacks``:
arbitrary Python, which may change the tree in the middle of a call of the compiled core
(on 3.12 and later the collector waits for the next Python code that runs, a ``where=``
predicate or one of the reference's helpers); a finaliser that releases the GIL lets
another thread change it too. The core's header comment ("Python inside the core") says
what each method does about it: a read answers from the tree as it was before such a
change or after it, never from a mix; a change that arrives while a method holds the tree
busy raises the ``RuntimeError`` that a ``where=`` predicate gets. The reference, driven
through the same calls without the collector's interruptions, is the judge (it is pure
Python, and makes no such promise itself).

- The issue's reproductions, in both forms (a ``gc.callbacks`` hook, a finaliser of cyclic
  garbage): ``__iter__``, ``__getstate__`` and the other calls that build a result from
  many entries, with the tree cleared, grown or an entity discarded while they build it.
"""

from __future__ import annotations

import gc
import pickle
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the checkout's package (imported: the caller's)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest
from test_native_quadtree import _sorted_state, canon

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

BUSY = (
    "QuadTree changed by Python code it called (a where= predicate, an id's __index__, an "
    "iterator of ids or boxes) while it was busy"
)
#: Whether an allocation may run the collector at once (it waits for Python code on 3.12+).
COLLECTS_ON_ALLOCATION = sys.version_info < (3, 12)

needs_core = pytest.mark.skipif(not index.NATIVE, reason=f"no compiled core: {index.REASON}")


def world(cls: type[PyQuadTree]) -> PyQuadTree:
    """The issue's tree: 300 boxes in a row, leaves of 16."""
    tree = cls(Box(0, 0, 1000, 1000))
    tree.insert_many(range(300), [(i, 0, i + 1, 1) for i in range(300)])
    return tree


def state(tree: PyQuadTree) -> object:
    """Everything a tree holds, comparable between the classes (entities in id order)."""
    return canon(_sorted_state(tree.__getstate__()))


def answer(call: Callable[[Any], object], tree: Any) -> object:
    """What ``call(tree)`` gives, comparable between the classes: its canonical value, or
    its error's type and message."""
    try:
        return canon(call(tree))
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))


class Change:
    """Something done to a tree from inside the collector, at most once, and what came of
    it: ``None`` until it runs, then ``("done",)`` or its error's type and message."""

    def __init__(self, name: str, act: Callable[[Any], object]) -> None:
        self.name = name
        self.act = act
        self.outcome: tuple[str, ...] | None = None

    def fire(self, tree: Any) -> None:
        """Run once (the collector may call it again: a later finaliser, a later hook)."""
        if self.outcome is None:
            self.outcome = ("running",)
            self.outcome = self.run(tree)

    def run(self, tree: Any) -> tuple[str, ...]:
        try:
            self.act(tree)
        except Exception as error:  # recorded, never raised into the collector
            return ("raised", type(error).__name__, str(error))
        return ("done",)

    @property
    def refused(self) -> bool:
        return self.outcome == ("raised", "RuntimeError", BUSY)


class Hook:
    """A ``gc.callbacks`` entry that fires the armed change at the start of the
    ``countdown``-th collection after it is armed."""

    def __init__(self) -> None:
        self.change: Change | None = None
        self.tree: Any = None
        self.countdown = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase != "start" or self.change is None:
            return
        if self.countdown > 0:
            self.countdown -= 1
            return
        change, self.change = self.change, None
        change.fire(self.tree)

    def arm(self, tree: Any, change: Change, countdown: int) -> None:
        self.tree, self.change, self.countdown = tree, change, countdown

    def disarm(self) -> None:
        self.tree = self.change = None


class Garbage:
    """A cycle whose finaliser runs ``then``: it runs when the collector finds the cycle,
    wherever the allocation that ran the collector happens."""

    def __init__(self, then: Callable[[], object]) -> None:
        self.then = then
        self.cycle = self

    def __del__(self) -> None:
        self.then()


@contextmanager
def collecting(hook: Hook | None = None) -> Iterator[None]:
    """A block that sets the collector's thresholds as it likes, with ``hook`` among the
    collector's callbacks; everything as it was afterwards."""
    old = gc.get_threshold()
    if hook is not None:
        gc.callbacks.append(hook)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        if hook is not None:
            gc.callbacks.remove(hook)
        gc.collect(0)


def young_every(allocations: int) -> None:
    """Collect the young generation at the next ``allocations``-th allocation of a tracked
    object (roughly: the count starts from the allocations since the last collection), and
    every ``allocations + 1`` after it; the older generations never."""
    gc.set_threshold(allocations, 1_000_000, 1_000_000)


def call_with_change(
    tree: Any, call: Callable[[], object], change: Change, form: str, at: int = 0
) -> tuple[object, bool]:
    """``call()``'s result (or its error's type and message), with ``change`` armed to run on
    ``tree`` from the collector at about the ``at + 1``-th allocation of a tracked object
    inside it (form ``"callback"``: from a ``gc.callbacks`` hook; form ``"finaliser"``: from
    the finaliser of cyclic garbage), and whether the change ran while the call was under
    way (if it has not run by the end of the call, it runs just after)."""
    inside = [False]
    ran_inside = [False]

    def fire() -> None:
        ran_inside[0] = inside[0] and change.outcome is None
        change.fire(tree)

    result: object
    hook = Hook() if form == "callback" else None
    armed = Change(change.name, lambda t: fire())
    with collecting(hook):
        young_every(1_000_000)
        gc.collect()  # a full collection empties the free lists: each list is allocated anew
        if hook is not None:
            hook.arm(tree, armed, 0)
            anchor = [armed]  # one allocation, as the finaliser's: the two forms alike
        else:
            Garbage(fire)  # unreachable at once, found by the collector's next run
        young_every(at + 1)
        inside[0] = True
        try:
            result = call()
        except Exception as error:  # the error is the answer here
            result = ("raised", type(error).__name__, str(error))
        inside[0] = False
        if hook is not None:
            hook.disarm()
            del anchor
    change.fire(tree)  # after the call, if the collector did not run it inside
    return result, ran_inside[0]


# ---------------------------------------------------------------------------- the cases

Finish = Callable[[Any], object]

#: The calls that build their answer from many entries, each allocating as it goes: the
#: call bound to a tree before the collector is armed (as the issue's ``it =
#: tree.__iter__``), and what makes its result comparable, applied after the call.
CALLS: dict[str, tuple[Callable[[Any], Callable[[], object]], Finish]] = {
    "__iter__": (lambda t: t.__iter__, sorted),
    "__getstate__": (lambda t: t.__getstate__, _sorted_state),
    "__reduce__": (lambda t: t.__reduce__, lambda r: _sorted_state(r[2])),
    "pickle": (lambda t: partial(pickle.dumps, t),
               lambda r: _sorted_state(pickle.loads(r).__getstate__())),
    "copy": (lambda t: t.__copy__, lambda r: _sorted_state(r.__getstate__())),
    "nodes": (lambda t: t.nodes, list),
    "nodes(box)": (lambda t: partial(t.nodes, (0.0, 0.0, 300.0, 300.0)), list),
    "repr": (lambda t: t.__repr__, str),
    "query": (lambda t: partial(t.query, (0.0, 0.0, 1000.0, 1000.0)), sorted),
    "find_all_intersections": (lambda t: t.find_all_intersections, list),
    "find_intersections_for": (lambda t: partial(t.find_intersections_for, range(0, 300, 7)),
                               list),
    "raycast": (lambda t: partial(t.raycast, 0.0, 0.5, 1000.0, 0.5), list),
}

#: The issue's changes: everything gone, 4,000 more entities, one entity gone.
CHANGES: dict[str, Callable[[Any], object]] = {
    "clear": lambda t: t.clear(),
    "grow": lambda t: t.insert_many(
        range(10**4, 10**4 + 4000), [(i / 4, 2.0, i / 4 + 0.1, 2.1) for i in range(4000)]
    ),
    "discard": lambda t: t.discard(3),
}

#: How many points of each call the collector is tried at (the first collections of each).
POINTS = 8


def finished(finish: Finish, result: object) -> object:
    if isinstance(result, tuple) and result and result[0] == "raised":
        return result
    return canon(finish(result))


@needs_core
@pytest.mark.parametrize("form", ["callback", "finaliser"])
@pytest.mark.parametrize("change_name", list(CHANGES))
@pytest.mark.parametrize("call_name", list(CALLS))
def test_a_change_from_the_collector_is_before_or_after_the_answer(
    call_name: str, change_name: str, form: str
) -> None:
    """The issue's reproductions: the tree cleared, grown or an entity discarded by the
    collector at each of the first allocations of a call that builds its answer from many
    entries. The answer is the reference's before the change or after it (never ids that
    were not there, duplicated, or a pickle that does not load), the change is made, and
    the tree is the reference's after it."""
    bind, finish = CALLS[call_name]
    act = CHANGES[change_name]
    reference = world(PyQuadTree)
    before = finished(finish, bind(reference)())
    act(reference)
    after = finished(finish, bind(reference)())
    hit = 0
    for at in range(POINTS):
        tree = world(index.QuadTree)
        change = Change(change_name, act)
        got, ran_inside = call_with_change(tree, bind(tree), change, form, at)
        hit += ran_inside
        assert change.outcome == ("done",), f"at {at}: {change.outcome}"
        assert finished(finish, got) in (before, after), f"at {at}: neither before nor after"
        tree.check()
        assert state(tree) == state(reference)
    if COLLECTS_ON_ALLOCATION:  # else the change waits for Python code, after the call
        assert hit, "the change never ran inside the call: the test tests nothing"
