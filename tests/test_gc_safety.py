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
- A fuzzer: random calls of every public method, each with a change (insert, move, remove,
  clear, ``__init__``, ``__setstate__``...) or a read (a pickle and its ``check()``) armed to
  run from the collector at a random allocation inside it. The call's answer, the change's
  own outcome and the tree afterwards must be the reference's for the same two calls in one
  of their two orders, or the change refused as busy by a method that the header comment
  says holds the tree busy.
- A thread stress: a second thread changes the tree while the first reads it, the GIL
  passing between them inside the core's allocations (a collector callback and finalisers
  of unrelated garbage releasing it with ``time.sleep(0)``); every answer must be whole.

Longer runs from the command line (the AddressSanitizer soak runs them; a failure names its
seed, which ``--first SEED --seeds 1`` replays)::

    python tests/test_gc_safety.py --seeds 50 --steps 400 --threads 30
"""

from __future__ import annotations

import argparse
import copy
import gc
import pickle
import random
import re
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the checkout's package (imported: the caller's)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest
from test_native_quadtree import canon

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

BUSY = (
    "QuadTree changed while it was busy (a where= predicate, a conversion or an iterator it "
    "called, a finaliser run by the garbage collector, or another thread)"
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
    """Everything a tree holds, comparable between the classes (the state lists the
    entities in id order in both)."""
    return canon(tree.__getstate__())


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
    """A ``gc.callbacks`` entry that fires the armed change at the start of the next
    collection."""

    def __init__(self) -> None:
        self.change: Change | None = None
        self.tree: Any = None

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase != "start" or self.change is None:
            return
        change, self.change = self.change, None
        change.fire(self.tree)

    def arm(self, tree: Any, change: Change) -> None:
        self.tree, self.change = tree, change

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
            hook.arm(tree, armed)
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
Box4 = tuple[float, float, float, float]

#: The calls that build their answer from many entries, each allocating as it goes: the
#: call bound to a tree before the collector is armed (as the issue's ``it =
#: tree.__iter__``), and what makes its result comparable, applied after the call.
CALLS: dict[str, tuple[Callable[[Any], Callable[[], object]], Finish]] = {
    "__iter__": (lambda t: t.__iter__, sorted),
    "__getstate__": (lambda t: t.__getstate__, dict),
    "__reduce__": (lambda t: t.__reduce__, lambda r: r[2]),
    "pickle": (lambda t: partial(pickle.dumps, t), lambda r: pickle.loads(r).__getstate__()),
    "copy": (lambda t: t.__copy__, lambda r: r.__getstate__()),
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
    """A call's result made comparable (an error as it was caught)."""
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


@needs_core
def test_find_intersections_for_is_busy_until_it_lets_go_of_its_iterator() -> None:
    """An iterator whose finaliser changes the tree runs it when the call lets go of the
    iterator, the tree still busy: the change is refused and the answer is the reference's.
    (It was let go of after the busy window: the entity was removed after the call had
    listed it, and the pair search read its slot, -1: outside the arrays.)"""
    tree, reference = world(index.QuadTree), world(PyQuadTree)
    change = Change("remove", lambda t: t.remove(0))  # (a discard would wait for the end)

    class Walker:
        def __init__(self) -> None:
            self.ids = iter([0, 1, 2])

        def __iter__(self) -> Walker:
            return self

        def __next__(self) -> int:
            return next(self.ids)

        def __del__(self) -> None:
            change.fire(tree)

    class Ids:
        def __iter__(self) -> Walker:
            return Walker()  # its only reference is the call's

    got = tree.find_intersections_for(Ids())
    assert change.refused, change.outcome
    assert got == reference.find_intersections_for([0, 1, 2])
    tree.check()
    assert state(tree) == state(reference)


# ---------------------------------------------------------------------------- the fuzzer

#: The calls during which the core holds the tree busy while Python may run (the header
#: comment of ``_cquadtree_src/tree.h``): a change from the collector may be refused there, as the
#: change a ``where=`` predicate tries is; nowhere else.
BUSY_CALLS = frozenset({
    "insert", "insert_many", "insert_many(buffers)", "insert_records", "move", "move_many",
    "move_many(buffers)", "move_records", "remove", "discard", "clear", "__init__",
    "__setstate__", "find_intersections_for", "nearest(where)", "raycast_first(where)",
    "cast_box_first(where)",
})


def run(call: Callable[[], object]) -> object:
    """``call()``'s result, or its error's type and message."""
    try:
        return call()
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))


def consistent(tree: Any) -> None:
    """A read from inside another call: what it sees is a whole tree (a pickle that loads
    and passes ``check()``, each id once)."""
    loaded = pickle.loads(pickle.dumps(tree))
    loaded.check()
    ids = list(loaded)
    assert len(ids) == len(set(ids)) == len(loaded)
    assert [n.depth for n in tree.nodes()][:1] in ([], [0])


class Fuzzer:
    """Random calls of every public method on a compiled tree, each with a change or a read
    armed to run from the collector inside it; the reference follows, each step judged."""

    def __init__(self, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        self.ref = PyQuadTree(Box(0, 0, 200, 200), threshold=rng.choice([2, 4, 8]))
        self.core = index.QuadTree(Box(0, 0, 200, 200), threshold=self.ref.threshold)
        for tree in (self.ref, self.core):
            boxes = [self.box(random.Random(seed + e)) for e in range(60)]
            tree.insert_many(range(60), boxes)
        self.next_id = 1000
        self.counts: dict[str, int] = {}

    # -- arguments

    def box(self, rng: random.Random | None = None) -> tuple[float, float, float, float]:
        rng = rng or self.rng
        x, y = rng.uniform(-20, 210), rng.uniform(-20, 210)
        return (x, y, x + rng.uniform(0, 15), y + rng.uniform(0, 15))

    def given_box(self) -> object:
        """A box as a caller may give it: mostly floats, else through the reference's
        readers (Python code inside the call)."""
        box = self.box()
        kind = self.rng.random()
        return box if kind < 0.6 else Box(*box) if kind < 0.8 else list(box)

    def some_id(self) -> int:
        ids = list(self.ref)
        if ids and self.rng.random() < 0.85:
            return self.rng.choice(ids)
        return self.rng.randrange(60, 120)  # mostly absent

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def where(self) -> Callable[[int], bool]:
        k = self.rng.randint(2, 4)
        return lambda e: e % k != 0

    # -- what runs inside a call

    def change(self) -> Change:
        rng = self.rng
        e, box = self.some_id(), self.box()
        kind = rng.choice([
            "insert", "insert present", "insert_many", "insert_records", "move", "move far",
            "move_many", "move_records", "remove", "discard", "clear", "__init__",
            "__setstate__", "read",
        ])
        new = [self.new_id() for _ in range(3)]
        boxes = [self.box() for _ in new]
        records = [(*b, i) for i, b in zip(new, boxes, strict=True)]
        state = None
        if kind == "__setstate__":
            small = PyQuadTree(None, threshold=3)
            small.insert_many(new, boxes)
            state = small.__getstate__()
        acts: dict[str, Callable[[Any], object]] = {
            "insert": lambda t: t.insert(new[0], box),
            "insert present": lambda t: t.insert(e, box),
            "insert_many": lambda t: t.insert_many(new, boxes),
            "insert_records": lambda t: t.insert_records(records),
            "move": lambda t: t.move(e, box),
            "move far": lambda t: t.move(e, (1e5, -1e5, 1e5 + 1, -1e5 + 1)),
            "move_many": lambda t: t.move_many([e], [box]),
            "move_records": lambda t: t.move_records([(*box, e)]),
            "remove": lambda t: t.remove(e),
            "discard": lambda t: t.discard(e),
            "clear": lambda t: t.clear(),
            "__init__": lambda t: t.__init__(Box(-50, -50, 50, 50), threshold=3, max_depth=6),
            "__setstate__": lambda t: t.__setstate__(state),
            "read": consistent,
        }
        return Change(kind, acts[kind])

    def call(self) -> tuple[str, Callable[[Any], Callable[[], object]], Finish]:
        """A call of one public method: its name, the call bound to a tree, and what makes
        its result comparable."""
        rng = self.rng
        e, box, x, y = self.some_id(), self.given_box(), rng.uniform(0, 200), rng.uniform(0, 200)
        new = [self.new_id() for _ in range(rng.randint(0, 4))]
        boxes = [self.box() for _ in new]
        movers = [self.some_id() for _ in range(rng.randint(0, 4))]
        targets = [self.box() for _ in movers]
        atomic = rng.random() < 0.5
        k, r = rng.randint(1, 5), rng.uniform(0, 40)
        x1, y1 = rng.uniform(-20, 220), rng.uniform(-20, 220)
        dx, dy = rng.uniform(-200, 200), rng.uniform(-200, 200)
        where = self.where()
        ids = [self.some_id() for _ in range(rng.randint(0, 6))]
        records = [(*b, i) for i, b in zip(new, boxes, strict=True)]
        moved = [(*b, i) for i, b in zip(movers, targets, strict=True)]
        hint = rng.choice([None, Box(0, 0, 100, 100), Box(-1e3, -1e3, 1e3, 1e3)])
        thr, depth = rng.choice([1, 3, 16]), rng.choice([0, 4, 8])
        state = self.ref.__getstate__() if rng.random() < 0.5 else None
        if state is None:
            other = PyQuadTree(None, threshold=2)
            other.insert_many(new, boxes)
            state = other.__getstate__()
        same = canon
        states = dict

        def buffers(i: list[int], b: list[Box4]) -> tuple[array[int], array[float]]:
            return array("q", i), array("d", [c for one in b for c in one])

        calls: dict[str, tuple[Callable[[Any], Callable[[], object]], Finish]] = {
            "insert": (lambda t: partial(t.insert, new[0] if new else e, box), same),
            "insert_many": (lambda t: partial(t.insert_many, new, iter(boxes)), same),
            "insert_many(buffers)": (lambda t: partial(t.insert_many, *buffers(new, boxes)),
                                     same),
            "insert_records": (lambda t: partial(t.insert_records, iter(records)), same),
            "move": (lambda t: partial(t.move, e, box), same),
            "move_many": (lambda t: partial(t.move_many, movers, iter(targets), atomic=atomic),
                          same),
            "move_many(buffers)": (lambda t: partial(t.move_many, *buffers(movers, targets)),
                                   same),
            "move_records": (lambda t: partial(t.move_records, iter(moved)), same),
            "remove": (lambda t: partial(t.remove, e), same),
            "discard": (lambda t: partial(t.discard, e), same),
            "clear": (lambda t: t.clear, same),
            "__init__": (lambda t: partial(t.__init__, hint, threshold=thr, max_depth=depth),
                         same),
            "__setstate__": (lambda t: partial(t.__setstate__, state), same),
            "__getstate__": (lambda t: t.__getstate__, states),
            "__reduce__": (lambda t: t.__reduce__, lambda v: states(v[2])),
            "pickle": (lambda t: partial(pickle.dumps, t),
                       lambda v: states(pickle.loads(v).__getstate__())),
            "__copy__": (lambda t: partial(copy.copy, t), lambda v: (v.check(), states(
                v.__getstate__()))),
            "__deepcopy__": (lambda t: partial(copy.deepcopy, t), lambda v: (v.check(), states(
                v.__getstate__()))),
            "__len__": (lambda t: t.__len__, same),
            "__contains__": (lambda t: partial(t.__contains__, e), same),
            "__iter__": (lambda t: t.__iter__, sorted),
            "__getitem__": (lambda t: partial(t.__getitem__, e), same),
            "get": (lambda t: partial(t.get, e, "absent"), same),
            "__repr__": (lambda t: t.__repr__, same),
            "bounds": (lambda t: lambda: t.bounds, same),
            "threshold": (lambda t: lambda: (t.threshold, t.max_depth), same),
            "query": (lambda t: partial(t.query, box), sorted),
            "query_point": (lambda t: partial(t.query_point, x, y), sorted),
            "query_radius": (lambda t: partial(t.query_radius, x, y, r), sorted),
            "nearest": (lambda t: partial(t.nearest, x, y, k), same),
            "nearest(where)": (lambda t: partial(t.nearest, x, y, k, where=where,
                                                 max_distance=r * 3), same),
            "raycast": (lambda t: partial(t.raycast, x, y, x1, y1), same),
            "raycast_first": (lambda t: partial(t.raycast_first, x, y, x1, y1), same),
            "raycast_first(where)": (lambda t: partial(t.raycast_first, x, y, x1, y1,
                                                       where=where), same),
            "cast_box": (lambda t: partial(t.cast_box, box, dx, dy), same),
            "cast_box_first": (lambda t: partial(t.cast_box_first, box, dx, dy), same),
            "cast_box_first(where)": (lambda t: partial(t.cast_box_first, box, dx, dy,
                                                        where=where), same),
            "query_entity": (lambda t: partial(t.query_entity, e), sorted),
            "find_intersections_for": (lambda t: partial(t.find_intersections_for, iter(ids)),
                                       same),
            "find_all_intersections": (lambda t: t.find_all_intersections, same),
            "find_all_intersections_array": (lambda t: t.find_all_intersections_array,
                                             lambda v: v.tolist()),
            "state_hash": (lambda t: t.state_hash, same),
            "nodes": (lambda t: lambda: list(t.nodes()), same),
            "nodes(box)": (lambda t: lambda: list(t.nodes(box)), same),
            "depth": (lambda t: t.depth, same),
            "check": (lambda t: t.check, same),
            "__sizeof__": (lambda t: t.__sizeof__, lambda v: None),  # the core's own figure
        }
        name = rng.choice(list(calls))
        return (name, *calls[name])

    # -- a step

    def step(self) -> None:
        rng = self.rng
        name, bind, finish = self.call()
        change = self.change()
        form = rng.choice(["callback", "finaliser"])
        got, _ = call_with_change(self.core, bind(self.core), change, form, rng.randrange(12))
        got = finished(finish, got)
        self.core.check()
        now = state(self.core)
        assert change.outcome is not None
        tried: list[str] = []
        if change.refused:
            assert name in BUSY_CALLS, f"{name} refused {change.name}: it holds nothing busy"
            orders = ["call alone"]
        else:
            orders = ["change first", "call first"]
        for order in orders:
            ref = copy.copy(self.ref)
            if order == "change first":
                outcome = change.run(ref)
            answer = finished(finish, run(bind(ref)))
            if order == "call first":
                outcome = change.run(ref)
            if order == "call alone":
                outcome = change.outcome
            if answer == got and outcome == change.outcome and state(ref) == now:
                self.ref = ref
                key = f"{name} / {change.name}: {order}"
                self.counts[key] = self.counts.get(key, 0) + 1
                return
            tried.append(f"{order}: answer {answer!r:.300}, change {outcome}")
        raise AssertionError(
            f"{name} with {change.name} ({form}): compiled answer {got!r:.300}, change "
            f"{change.outcome}; the reference, " + "; ".join(tried)
        )


def fuzz(seed: int, steps: int) -> dict[str, int]:
    """``steps`` steps of the fuzzer from ``seed``; how often each (call, change, order)
    was seen."""
    fuzzer = Fuzzer(seed)
    for i in range(steps):
        try:
            fuzzer.step()
        except AssertionError as error:
            raise AssertionError(f"seed {seed}, step {i}: {error}") from None
    return fuzzer.counts


@needs_core
@pytest.mark.parametrize("seed", range(4))
def test_every_method_answers_as_the_reference_with_the_collector_changing_the_tree(
    seed: int,
) -> None:
    """The fuzzer: every public method, a change or a read armed inside it (a collector
    callback or a finaliser, at a random allocation); answer, change and tree the
    reference's in one of the two orders, or the change refused by a busy method."""
    counts = fuzz(seed, 80)
    assert sum(counts.values()) == 80


# ---------------------------------------------------------------------------- threads


def thread_stress(seconds: float, seed: int = 0) -> dict[str, int]:
    """A thread changes the tree while the main thread reads it, and the GIL passes between
    them inside the core's allocations: the collector runs at nearly every allocation of a
    tracked object (the free list of lists kept empty, so the core's lists are such
    allocations too), a ``gc.callbacks`` hook and the finalisers of unrelated garbage
    release the GIL (``time.sleep(0)``). Each read must be whole (``check()`` passes on it,
    a pickle loads, each id once), each change done or refused as busy. How many reads,
    changes and refusals there were."""
    rng = random.Random(seed)
    tree = index.QuadTree(Box(0, 0, 1000, 1000), threshold=4)
    tree.insert_many(range(300), [(i * 3.0, i * 3.0, i * 3.0 + 5, i * 3.0 + 5) for i in range(300)])
    counts = {"reads": 0, "changes": 0, "refused": 0}
    stop = threading.Event()
    failures: list[BaseException] = []
    budget = [0]  # the changes the changer may make before the next read: the two in step

    reading = [False]  # while the main thread's read is under way

    def yield_gil(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and reading[0] and rng.random() < 0.3:
            time.sleep(0)

    def changer() -> None:
        crng = random.Random(seed + 1)
        present = set(range(300))
        next_id = 10_000
        try:
            while not stop.is_set():
                if budget[0] <= 0:
                    time.sleep(0.0001)
                    continue
                budget[0] -= 1
                time.sleep(0)
                e = crng.choice(sorted(present)) if present else None
                x, y = crng.uniform(0, 1000), crng.uniform(0, 1000)
                box = (x, y, x + crng.uniform(0, 9), y + crng.uniform(0, 9))
                op = crng.randrange(12)
                Garbage(partial(time.sleep, 0))
                try:
                    if op < 3 or e is None:
                        next_id += 1
                        tree.insert(next_id, list(box))  # type: ignore[arg-type] # read in Python
                        present.add(next_id)
                    elif op < 6:
                        tree.move(e, Box(*box))
                    elif op < 7:
                        tree.move_many(iter([e]), iter([box]))
                    elif op < 9:
                        tree.discard(e)
                        present.discard(e)
                    elif op < 10:
                        new = range(next_id + 1, next_id + 40)
                        next_id += 40
                        tree.insert_many(new, [box] * len(new))
                        present.update(new)
                    elif crng.random() < 0.1:
                        tree.clear()
                        present.clear()
                    else:
                        tree.move_records([(*box, e)])
                    counts["changes"] += 1
                except RuntimeError as error:
                    if str(error) != BUSY:
                        raise
                    counts["refused"] += 1
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    def sleepy(e: int) -> bool:
        time.sleep(0)
        return e % 2 == 0

    def whole_state(state: dict[str, Any]) -> None:
        _unique(state["ids"])
        assert len(state["boxes"]) == 4 * len(state["ids"])
        PyQuadTree.__new__(PyQuadTree).__setstate__(state)

    def whole(copy_: Any) -> None:
        copy_.check()
        _unique(list(copy_))

    #: Each read: the call, bound before the garbage is made, and what its answer must be.
    reads: list[tuple[Callable[[], object], Callable[[Any], object]]] = [
        (tree.__iter__, lambda it: _unique(list(it))),
        (tree.__getstate__, whole_state),
        (partial(pickle.dumps, tree), lambda data: whole(pickle.loads(data))),
        (tree.__copy__, whole),
        (tree.check, lambda _: None),
        (tree.nodes, lambda it: _unique([info.box for info in it])),
        (tree.__repr__, lambda text: _match(r"QuadTree\(.*entities=\d+\)", text)),
        (partial(tree.query, (0.0, 0.0, 600.0, 600.0)), _unique),
        (tree.find_all_intersections, _pairs),
        (partial(tree.find_intersections_for, range(0, 400, 3)), _pairs),
        (partial(tree.nearest, 500.0, 500.0, 5, where=sleepy), _unique),
        (partial(tree.raycast, 0.0, 0.0, 1000.0, 1000.0), lambda hits: _unique(
            [e for e, _ in hits])),
    ]
    old_interval, old_threshold = sys.getswitchinterval(), gc.get_threshold()
    worker = threading.Thread(target=changer)
    sys.setswitchinterval(1e-5)
    gc.callbacks.append(yield_gil)
    worker.start()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not failures:
            budget[0] = 20
            time.sleep(0)
            call, check = rng.choice(reads)
            empty: list[list[object]] = [[] for _ in range(100)]  # the free list of lists emptied
            Garbage(partial(time.sleep, 0))
            gc.set_threshold(1, 1_000_000, 1_000_000)
            reading[0] = True
            answer = call()
            reading[0] = False
            gc.set_threshold(1000, 1_000_000, 1_000_000)
            del empty
            check(answer)
            counts["reads"] += 1
    finally:
        stop.set()
        worker.join()
        gc.callbacks.remove(yield_gil)
        sys.setswitchinterval(old_interval)
        gc.set_threshold(*old_threshold)
        gc.collect()
    if failures:
        raise failures[0]
    tree.check()
    return counts


def _unique(items: list[Any]) -> None:
    assert len(items) == len(set(items)), "an answer lists something twice"


def _pairs(pairs: list[tuple[int, int]]) -> None:
    assert all(a < b for a, b in pairs) and pairs == sorted(set(pairs)), "pairs out of order"


def _match(pattern: str, text: str) -> None:
    assert re.fullmatch(pattern, text), text


#: The searches that call where= while they walk the tree: each one's call with ``where``.
WALKS_WITH_WHERE: dict[str, Callable[[Any, Callable[[int], object]], object]] = {
    "nearest": lambda tree, where: tree.nearest(50.2, 50.2, 10, where=where),
    "raycast_first": lambda tree, where: tree.raycast_first(0.0, 50.2, 100.0, 50.2, where=where),
    "cast_box_first": lambda tree, where: tree.cast_box_first(
        (0.0, 50.1, 0.2, 50.3), 100.0, 0.0, where=where),
}


@needs_core
@pytest.mark.parametrize("search", sorted(WALKS_WITH_WHERE))
def test_a_search_with_where_lets_another_threads_change_in_flight_end_first(
        search: str) -> None:
    """Busy refuses a change that starts, not one already in flight. Another thread's
    ``insert_many`` is inside its boxes' iterator (Python, the GIL released) when the search
    starts; its where= releases the GIL at each call. The search must not walk a tree that the
    change finishes under it (its answer was a mix of the two trees, or listed an entry twice
    after a node split): it waits for the change, and answers for the tree after it."""
    walk = WALKS_WITH_WHERE[search]
    tree = index.QuadTree(Box(0, 0, 100, 100), threshold=2)
    tree.insert_many(range(20), [(i * 5.0, 50.0, i * 5.0 + 1, 51.0) for i in range(20)])
    inside = threading.Event()

    def boxes() -> Iterator[tuple[float, float, float, float]]:
        inside.set()
        time.sleep(0.05)  # the search starts meanwhile
        for i in range(40):  # a crowd about the searches' line: the nodes there split
            yield (40.0 + i * 0.5, 50.0, 40.4 + i * 0.5, 50.4)

    worker = threading.Thread(target=lambda: tree.insert_many(range(100, 140), boxes()))
    worker.start()
    inside.wait()
    asked: list[int] = []

    def new_only(e: int) -> bool:
        asked.append(e)
        time.sleep(0.002)  # the GIL to the change
        return e >= 100

    answer = walk(tree, new_only)
    worker.join()
    tree.check()
    assert len(asked) == len(set(asked)), "where asked about an entry twice"
    assert answer == walk(tree, lambda e: e >= 100)
    assert answer == walk(canon_copy(tree), lambda e: e >= 100)


def canon_copy(tree: Any) -> PyQuadTree:
    """The reference index holding what ``tree`` holds."""
    copy_ = PyQuadTree.__new__(PyQuadTree)
    copy_.__setstate__(tree.__getstate__())
    return copy_


@needs_core
def test_threads_change_the_tree_while_finalisers_release_the_gil() -> None:
    """The thread stress, two seconds: every read whole, every change done or refused."""
    counts = thread_stress(2.0)
    assert counts["reads"] > 50 and counts["changes"] > 50, counts


# ---------------------------------------------------------------------------- command line


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="fuzzer seeds")
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--steps", type=int, default=200, help="fuzzer steps per seed")
    parser.add_argument("--threads", type=float, default=10.0, help="seconds of thread stress")
    args = parser.parse_args(None if argv is None else list(argv))
    seen: dict[str, int] = {}
    for seed in range(args.first, args.first + args.seeds):
        for key, n in fuzz(seed, args.steps).items():
            seen[key] = seen.get(key, 0) + n
    orders = {o: sum(n for k, n in seen.items() if k.endswith(o)) for o in
              ("change first", "call first", "call alone")}
    print(f"fuzzer: {args.seeds} seeds x {args.steps} steps agree with the reference "
          f"({len(seen)} kinds of step; {orders})")
    if args.threads > 0:
        counts = thread_stress(args.threads, args.first)
        print(f"threads: {args.threads:g} s, {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
