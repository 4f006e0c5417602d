"""The compiled QuadTree's single calls (``move``, ``insert``, ``remove``, ``discard``) on every
form of argument, against the reference.

The compiled ``move`` and ``insert`` of an exact int to a plain tuple or a ``Box`` of four floats
on a plain tree, and ``remove`` and ``discard`` of an exact int, run no Python, and so skip the
busy section every other call holds while it runs Python (tree.h, "Python inside the core");
``move`` also stores a box that stays in its leaf after one packed test. These tests drive both
classes with every kind of id (present, absent, past 64 bits, a bool, an int subclass, an
``__index__`` object, a NumPy integer, no id at all) and of box (tuples, Boxes and their
subclasses, lists, NumPy rows, ints, float subclasses, NaN, infinities, inverted on either
axis, inverted inside the leaf's fit bounds, on those bounds, on the split lines, of the wrong
length, no box at all), by position and by keyword, on plain and wrapped trees, and require
the same outcome (the same answer, or the same error: type and text) and the same tree after
it (its state and its nodes). Then hostile values (an ``__index__``, a Box subclass's
``__iter__`` and ``__getitem__``, a collection's callback, each trying to change the tree
mid-call) and the reference counts and memory of a long loop of all of it.
"""

from __future__ import annotations

import copy
import gc
import itertools
import math
import random
from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import partial
from typing import Any

import pytest
from _leaks import assert_loop_keeps_nothing

from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial._cquadtree import QuadTree as CQuadTree
except ImportError:  # a pure-Python build: nothing to compare
    CQuadTree = None  # type: ignore[assignment,misc]

try:
    import numpy as np
except ImportError:  # numpy is the bench extra's
    np = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(CQuadTree is None, reason="the C core is not built")

#: Entities 1..N in a 100 x 100 world, leaves of 2: internal nodes, split lines at 50, 25...
N = 24
WRAP = (0.0, 0.0, 100.0, 100.0)


def _canon(value: object) -> object:
    """Floats as their exact bits, containers with their types: "the same answer"."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_canon(v) for v in value])
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    if hasattr(value, "tolist"):  # array('q'), array('d')
        return ("array", value.tolist())
    return value


def outcome(call: Callable[..., object], *args: object, **kwargs: object) -> object:
    """What ``call(*args, **kwargs)`` gives: its canonical answer, or its error's type and
    text."""
    try:
        return _canon(call(*args, **kwargs))
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))


def build(cls: Any, wrapped: bool) -> Any:
    """The same small tree in either class."""
    tree = cls(wrap=WRAP, threshold=2) if wrapped else cls((0, 0, 100, 100), threshold=2)
    for e in range(1, N + 1):
        x, y = (e * 37) % 97 + 0.5, (e * 53) % 89 + 0.25
        tree.insert(e, (x, y, x + 1.5, y + 2.0))
    return tree


def shape(tree: Any) -> object:
    """Everything a change can alter: the state and the nodes."""
    tree.check()
    return _canon((tree.__getstate__(), [tuple(n) for n in tree.nodes()]))


class IntSub(int):
    """An int subclass: no exact int."""


class FloatSub(float):
    """A float subclass (numpy.float64 is one): no exact float."""


class TupleSub(tuple):  # type: ignore[type-arg]
    """A tuple subclass that is no Box."""

    __slots__ = ()


class SubBox(Box):
    """A Box subclass."""

    __slots__ = ()


class Index:
    """An integer-like id (``__index__``), as NumPy integers are."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value})"


def entities(tree: Any) -> list[object]:
    """Every kind of entity value: present, absent, out of range, of other types."""
    present = 7
    leaf = tree[present]
    assert leaf is not None
    forms: list[object] = [present, N + 5, 2**63, -(2**63) - 1, 2**64, True, 1.0, "7", None,
                           IntSub(present), Index(present), Index(2**70), Index(N + 5)]
    if np is not None:
        forms += [np.int64(present), np.int32(N + 5), np.float64(present)]
    return forms


def boxes(tree: Any) -> list[object]:
    """Every kind of box value, most of them near entity 7's: staying in its leaf, leaving
    it, on its node's fit bounds and split lines, inverted inside them, and bad ones."""
    x0, y0, x1, y1 = tree[7]
    nan, inf = math.nan, math.inf
    forms: list[object] = [
        (x0 + 0.25, y0 + 0.25, x1 + 0.25, y1 + 0.25),  # a nudge: most likely stays
        (x0, y0, x1, y1),  # where it is
        (90.0, 90.0, 91.0, 91.0), (-500.0, -500.0, -499.0, 1e6),  # far, out of the bounds
        (50.0, 10.0, 51.0, 11.0), (49.0, 24.0, 50.0, 25.0), (0.0, 0.0, 100.0, 100.0),
        (x1 + 0.25, y0, x0 + 0.5, y1), (x0, y1, x1, y0 + 0.5),  # inverted inside the leaf
        (x0, y0, x0, y0), (1e308, 1e308, 1.7e308, 1.7e308), (-5e-324, 0.0, 5e-324, 0.0),
        (nan, y0, x1, y1), (x0, nan, x1, y1), (x0, y0, inf, y1), (-inf, y0, x1, y1),
        (x0, y0, x1, -inf), (5.0, 0.0, 1.0, 1.0), (0.0, 5.0, 1.0, 1.0),
        Box(x0 + 0.5, y0, x1 + 0.5, y1), SubBox(x0, y0 + 0.5, x1, y1 + 0.5),
        TupleSub((x0, y0, x1, y1)), [x0, y0, x1, y1], (1, 2, 3, 4), (True, 0.0, 1.0, 1.0),
        (FloatSub(x0), y0, x1, y1), (x0, y0, x1, FloatSub(y1)), (0, 0, 10**400, 1),
        (x0, y0, x1), (x0, y0, x1, y1, 0.0), (), "abcd", None, 7, {"min_x": 0.0},
        tuple.__new__(Box, (x1 + 0.25, y0, x0, y1)), tuple.__new__(Box, (x0, y0, "x", y1)),
    ]
    if np is not None:
        forms += [np.array([x0, y0, x1, y1]), np.array([[x0, y0, x1, y1]])[0],
                  (np.float64(x0), y0, x1, y1), np.array([1, 2, 3, 4])]
    return forms


def _caller(method: str, *args: object, **kwargs: object) -> Callable[[Any], object]:
    """``tree.method(*args, **kwargs)`` for the tree it is given."""
    return lambda tree: getattr(tree, method)(*args, **kwargs)


def _meddle_remove(method: str, tree: Any) -> object:
    """``tree.method`` of an id whose ``__index__`` moves an entity."""
    return getattr(tree, method)(Meddler(tree).index(7))


def same(method: str, wrapped: bool, call: Callable[[Any], object]) -> None:
    """``call`` on a fresh tree of each class: the same outcome, the same tree after."""
    ref, nat = build(PyQuadTree, wrapped), build(CQuadTree, wrapped)
    got_ref, got_nat = outcome(call, ref), outcome(call, nat)
    assert got_nat == got_ref, f"{method}:\n  reference {got_ref!r}\n  compiled  {got_nat!r}"
    assert shape(nat) == shape(ref), method


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("method", ["move", "insert"])
def test_every_entity_and_box_form_is_the_references(method: str, wrapped: bool) -> None:
    """``move`` and ``insert`` of every kind of entity to every kind of box: the same answer
    or error, the same tree."""
    probe = build(PyQuadTree, wrapped)
    for entity, box in itertools.product(entities(probe), boxes(probe)):
        same(f"{method}({entity!r}, {box!r})", wrapped, _caller(method, entity, box))


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize("method", ["remove", "discard"])
def test_every_entity_form_is_removed_as_the_reference_removes_it(
        method: str, wrapped: bool) -> None:
    """``remove`` and ``discard`` of every kind of entity: the same answer or error, the
    same tree; and every entity in turn, then each again (absent by then)."""
    probe = build(PyQuadTree, wrapped)
    for entity in entities(probe):
        same(f"{method}({entity!r})", wrapped, _caller(method, entity))
    ref, nat = build(PyQuadTree, wrapped), build(CQuadTree, wrapped)
    for e in [*range(1, N + 1), *range(1, N + 1)]:
        assert outcome(getattr(nat, method), e) == outcome(getattr(ref, method), e)
        assert shape(nat) == shape(ref)


SIGNATURES: list[tuple[str, tuple[object, ...], dict[str, object]]] = [
    ("move", (7,), {"box": (1.0, 2.0, 3.0, 4.0)}),
    ("move", (), {"entity": 7, "box": Box(1.0, 2.0, 3.0, 4.0)}),
    ("move", (), {"box": (1.0, 2.0, 3.0, 4.0), "entity": 7}),
    ("move", (7,), {}),
    ("move", (), {}),
    ("move", (7, (1.0, 2.0, 3.0, 4.0), None), {}),
    ("move", (7, (1.0, 2.0, 3.0, 4.0)), {"box": (1.0, 2.0, 3.0, 4.0)}),
    ("move", (7, (1.0, 2.0, 3.0, 4.0)), {"atomic": True}),
    ("move", (), {"entity": N + 5, "box": "abcd"}),
    ("insert", (N + 5,), {"box": (1.0, 2.0, 3.0, 4.0)}),
    ("insert", (), {"box": Box(1.0, 2.0, 3.0, 4.0), "entity": N + 5}),
    ("insert", (N + 5,), {}),
    ("insert", (N + 5, (1.0, 2.0, 3.0, 4.0), 1), {}),
    ("insert", (), {"entity": 7, "box": (1.0, 2.0, 3.0, 4.0)}),
    ("remove", (), {"entity": 7}),
    ("remove", (), {"entity": N + 5}),
    ("remove", (7, 8), {}),
    ("remove", (), {"key": 7}),
    ("discard", (), {"entity": 7}),
    ("discard", (), {}),
]


@pytest.mark.parametrize("wrapped", [False, True])
@pytest.mark.parametrize(("method", "args", "kwargs"), SIGNATURES)
def test_keywords_and_arities_are_the_references(
        method: str, args: tuple[object, ...], kwargs: dict[str, object], wrapped: bool) -> None:
    """Keywords where the reference takes them, and the reference's TypeError for a call
    it does not bind."""
    same(f"{method}{args!r}{kwargs!r}", wrapped, _caller(method, *args, **kwargs))


class Meddler:
    """Values that try to change ``tree`` while a call of it reads them."""

    def __init__(self, tree: Any) -> None:
        self.tree = tree

    def index(self, value: int) -> object:
        meddler = self

        class Meddling:
            def __index__(self) -> int:
                meddler.tree.move(3, (1.0, 1.0, 2.0, 2.0))
                return value

        return Meddling()

    def box(self, coords: tuple[float, float, float, float], how: str) -> Box:
        meddler = self

        class MeddlingBox(Box):
            __slots__ = ()

            def __iter__(self) -> Iterator[float]:
                if how == "iter":
                    meddler.tree.remove(4)
                return iter(tuple(self))

            def __getitem__(self, i: Any) -> Any:
                if how == "getitem":
                    meddler.tree.insert(N + 9, (1.0, 1.0, 2.0, 2.0))
                return tuple.__getitem__(self, i)

        return MeddlingBox(*coords)


@pytest.mark.parametrize("wrapped", [False, True])
def test_values_that_change_the_tree_mid_call_are_refused_alike(wrapped: bool) -> None:
    """An ``__index__`` or a Box subclass's ``__iter__``/``__getitem__`` that changes the tree
    while a call reads it: the reference's answer or error, the same tree after."""
    for method, how, present in itertools.product(("move", "insert"), ("index", "iter",
                                                  "getitem"), (7, N + 5)):
        def call(tree: Any, how: str = how, present: int = present, method: str = method) -> object:
            meddler = Meddler(tree)
            entity = meddler.index(present) if how == "index" else present
            box = (30.0, 30.0, 31.0, 31.0) if how == "index" else meddler.box(
                (30.0, 30.0, 31.0, 31.0), how)
            return getattr(tree, method)(entity, box)

        same(f"{method} meddling by {how} with {present}", wrapped, call)
    for method in ("remove", "discard"):
        same(f"{method} meddling", wrapped, partial(_meddle_remove, method))


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_collection_in_the_middle_of_calls_leaves_the_answers_alike(wrapped: bool) -> None:
    """With a collection at almost every allocation and a ``gc.callbacks`` hook that moves
    an entity to the box it has and discards an absent one (refused while a change is in
    flight, a no-op otherwise: the reference allocates where the compiled class does not,
    so the hook runs at other moments in each), every call's outcome and the tree after
    them all are the reference's."""
    ref, nat = build(PyQuadTree, wrapped), build(CQuadTree, wrapped)
    hooked: list[Any] = []

    def hook(phase: str, info: dict[str, Any]) -> None:
        for tree in hooked:
            box = tree.get(N)  # None while the reference is between two steps of a change
            with suppress(RuntimeError):  # busy: a change in flight
                if box is not None:
                    tree.move(N, box)
            with suppress(RuntimeError):
                tree.discard(N + 100)

    calls = [(m, e, b) for m, e, b in itertools.product(
        ("move", "insert"), entities(ref)[:10], boxes(ref)[:24])]
    threshold = gc.get_threshold()
    gc.callbacks.append(hook)
    try:
        gc.set_threshold(1)
        for m, e, b in calls:
            got = []
            for tree in (ref, nat):
                hooked[:] = [tree]
                got.append(outcome(getattr(tree, m), e, b))
                hooked.clear()
            assert got[1] == got[0], (m, e, b)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(hook)
    assert shape(nat) == shape(ref)


def test_the_call_order_hints_never_change_an_answer() -> None:
    """``move`` remembers the order of its calls to ask for the next call's memory ahead:
    frames of moves in one order, then in others, between removals and insertions (slots
    freed and reused), a compaction, ``clear``, ``__setstate__`` and a copy, give every
    answer and tree the reference gives."""
    rng = random.Random(5)
    ref, nat = PyQuadTree((0, 0, 100, 100), threshold=4), CQuadTree((0, 0, 100, 100), threshold=4)
    alive = list(range(1, 301))
    for tree in (ref, nat):
        tree.insert_many(alive, [(e % 97 + 0.5, e % 89 + 0.5, e % 97 + 2.0, e % 89 + 2.0)
                                 for e in alive])
    order = list(alive)
    for frame in range(24):
        if frame % 6 == 3:
            rng.shuffle(order)
        if frame % 6 == 5:  # a third gone and as many new: their slots reused
            gone = set(rng.sample(order, len(order) // 3))
            fresh = list(range(1000 * frame, 1000 * frame + len(gone)))
            for tree in (ref, nat):
                for e in gone:
                    tree.remove(e)
                for e in fresh:
                    tree.insert(e, (50.0, 50.0, 51.0, 51.0))
            order = [e for e in order if e not in gone] + fresh
        if frame == 14:
            nat = copy.copy(nat)
        if frame == 17:
            nat.__setstate__(nat.__getstate__())
        if frame == 20:
            for tree in (ref, nat):
                tree.clear()
                tree.insert_many(order, [(1.0, 1.0, 2.0, 2.0)] * len(order))
        for e in order:
            x, y = rng.uniform(0, 98), rng.uniform(0, 98)
            box = (x, y, x + rng.uniform(0, 2), y + rng.uniform(0, 2))
            box = Box(*box) if e % 2 else box
            assert outcome(nat.move, e, box) == outcome(ref.move, e, box)
        assert outcome(nat.move, 10**6, (0.0, 0.0, 1.0, 1.0)) == outcome(
            ref.move, 10**6, (0.0, 0.0, 1.0, 1.0))
        assert shape(nat) == shape(ref), frame


def test_the_call_order_hints_are_memory_the_tree_lets_go() -> None:
    """The hints take 8 bytes a slot from the first ``move`` (``__sizeof__`` counts them, a
    copy has none), and ``clear``, ``__init__`` and ``__setstate__`` let go of them."""
    n = 40
    rows = [(float(i), 0.0, i + 1.0, 1.0) for i in range(n)]
    tree = CQuadTree(Box(0, 0, 100, 100))
    tree.insert_many(range(n), rows)

    def hints() -> int:  # what the tree holds beyond its copy: no pair search ran
        return int(tree.__sizeof__() - copy.copy(tree).__sizeof__())

    for reset in ("clear", "__init__", "__setstate__"):
        assert hints() == 0
        for e in range(n):
            tree.move(e, rows[(e + 1) % n])
        assert hints() == 8 * n, reset
        state = tree.__getstate__()
        if reset == "clear":
            tree.clear()
        elif reset == "__init__":
            tree.__init__(Box(0, 0, 100, 100))  # type: ignore[misc]
        else:
            tree.__setstate__(state)
        assert hints() == 0, reset
        if len(tree) == 0:
            tree.insert_many(range(n), rows)


def test_reference_counts_and_memory_stay_flat() -> None:
    """A long loop of every form, good and bad, through the four methods keeps the counts
    of its values and of the tree, and no memory."""
    tree = build(CQuadTree, False)
    wrapped = build(CQuadTree, True)
    forms_e, forms_b = entities(tree), boxes(tree)
    nudges = [(x, 1.0, x + 1.0, 2.0) for x in (10.25, 10.5, 60.25, 60.5)]
    watched: list[Any] = [tree, wrapped, *forms_e, *forms_b, *nudges, Box, SubBox]

    def loop(n: int) -> None:
        for i in range(n):
            for t in (tree, wrapped):
                e = forms_e[i % len(forms_e)]
                b = forms_b[i % len(forms_b)]
                outcome(t.move, e, b)
                outcome(t.move, 5, nudges[i % 4])
                outcome(t.move, 5, Box(*nudges[(i + 1) % 4]))
                outcome(t.insert, N + 50, b)
                outcome(t.insert, e, nudges[i % 4])
                outcome(t.remove, N + 50)
                outcome(t.discard, e)
                outcome(t.remove, N + 60)
                if type(e) is int and 1 <= e <= N and e not in t:
                    t.insert(e, nudges[0])

    assert_loop_keeps_nothing(loop, watched, warm=200, first=200, more=2_000,
                              slack=16 * 1024)
    tree.check()
    wrapped.check()


def soak(rounds: int) -> None:
    """The tests above, ``rounds`` times over (the ASan soak's entry)."""
    for _ in range(rounds):
        for method, wrapped in itertools.product(("move", "insert"), (False, True)):
            test_every_entity_and_box_form_is_the_references(method, wrapped)
        for method, wrapped in itertools.product(("remove", "discard"), (False, True)):
            test_every_entity_form_is_removed_as_the_reference_removes_it(method, wrapped)
        for (method, args, kwargs), wrapped in itertools.product(SIGNATURES, (False, True)):
            test_keywords_and_arities_are_the_references(method, args, kwargs, wrapped)
        for wrapped in (False, True):
            test_values_that_change_the_tree_mid_call_are_refused_alike(wrapped)
            test_a_collection_in_the_middle_of_calls_leaves_the_answers_alike(wrapped)
    test_the_call_order_hints_never_change_an_answer()
    test_the_call_order_hints_are_memory_the_tree_lets_go()
    test_reference_counts_and_memory_stay_flat()
