"""The compiled QuadTree and its reference are one behaviour (issue 25, section 3): the same
order for every list, the same keywords and the same refusal of a call that does not bind,
the same rule for ids, and a differential fuzz that calls random methods of both with random
and hostile arguments (floats at the extremes, NaN, wrong types, huge ints, bools, objects
whose ``__index__``, ``__float__`` or ``__class__`` misbehave, buffers of odd shapes) and
requires the same answer or the same error, type and text, and the same tree after it.

The fuzz runs longer from the command line::

    python tests/test_one_behaviour.py --seeds 2000 --steps 200

Any failure prints the seed, so that ``--first SEED --seeds 1`` replays it.
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import inspect
import math
import pickle
import random
import re
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: the checkout's package (imported: the caller's)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest

from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial._cquadtree import QuadTree as CQuadTree
except ImportError:  # a pure-Python build: nothing to compare
    CQuadTree = None  # type: ignore[assignment,misc]

needs_core = pytest.mark.skipif(CQuadTree is None, reason="the C core is not built")
CLASSES = [PyQuadTree] if CQuadTree is None else [PyQuadTree, CQuadTree]
INT64 = 2**63
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def canon(value: object) -> object:
    """``value`` with floats as their exact bits and containers as their type and items:
    what "the same answer" means here."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, tuple):
        return (type(value).__name__, tuple(canon(v) for v in value))
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, array):
        return ("array", value.typecode, value.tolist())
    if isinstance(value, Iterator):
        return ("iterator", [canon(v) for v in value])
    if isinstance(value, PyQuadTree) or (CQuadTree is not None and isinstance(value, CQuadTree)):
        return ("tree", canon(value.__getstate__()))
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    if value is PyQuadTree or value is CQuadTree:
        return "QuadTree"  # the class, in __reduce__'s answer
    return value


def outcome(call: Callable[..., object], *args: object, **kwargs: object) -> object:
    """What ``call(*args, **kwargs)`` gives: its canonical answer, or its error's type and
    text."""
    try:
        result = call(*args, **kwargs)
    except Exception as error:  # the error is the answer here
        # each class is given its own copy of an argument: their reprs differ by address
        return ("raised", type(error).__name__, ADDRESS.sub(" at 0x", str(error)))
    return canon(result)


def snapshot(tree: Any) -> object:
    """Everything a tree shows: its state (ids in order), nodes, repr; check() passes."""
    tree.check()
    return canon((tree.__getstate__(), list(tree.nodes()), repr(tree), list(tree)))


# ---------------------------------------------------------------------------- order


@pytest.mark.parametrize("cls", CLASSES)
def test_two_entries_of_one_leaf_come_in_ascending_order(cls: type) -> None:
    """The issue's reproduction: after inserts of 2 then 1 into one leaf, every answer that
    is a set of ids lists 1 before 2 (the core gave [2, 1])."""
    tree = cls((0, 0, 100, 100))
    tree.insert(2, (1.0, 1.0, 2.0, 2.0))
    tree.insert(1, (1.0, 1.0, 2.0, 2.0))
    tree.insert(3, (1.5, 1.5, 3.0, 3.0))
    assert tree.query((0, 0, 5, 5)) == [1, 2, 3]
    assert tree.query_point(1.5, 1.5) == [1, 2, 3]
    assert tree.query_radius(0.0, 0.0, 5.0) == [1, 2, 3]
    assert tree.query_entity(3) == [1, 2]
    assert list(tree) == [1, 2, 3]
    assert list(tree.__getstate__()["ids"]) == [1, 2, 3]


@needs_core
@pytest.mark.parametrize("seed", range(4))
def test_every_list_is_in_the_same_order_whatever_the_history(seed: int) -> None:
    """Inserts, moves, removes and pickles in random order: every list-returning call gives
    the same list in both classes, and the same as a tree built afresh from the same boxes
    in another order (the order is a function of the answer, not of the history)."""
    rng = random.Random(seed)
    trees: list[Any] = [
        PyQuadTree((0, 0, 100, 100), threshold=3), CQuadTree((0, 0, 100, 100), threshold=3)
    ]
    boxes: dict[int, tuple[float, float, float, float]] = {}
    for _ in range(300):
        op = rng.random()
        e = rng.choice([rng.randrange(-(2**62), 2**62), rng.randrange(200)])
        x, y = rng.uniform(0, 95), rng.uniform(0, 95)
        box = (x, y, x + rng.uniform(0, 8), y + rng.uniform(0, 8))
        if op < 0.5 and e not in boxes:
            boxes[e] = box
            for tree in trees:
                tree.insert(e, box)
        elif op < 0.8 and boxes:
            e = rng.choice(sorted(boxes))
            boxes[e] = box
            for tree in trees:
                tree.move(e, box)
        elif op < 0.95 and boxes:
            e = rng.choice(sorted(boxes))
            del boxes[e]
            for tree in trees:
                tree.remove(e)
        else:
            trees = [pickle.loads(pickle.dumps(tree)) for tree in trees]
    fresh = PyQuadTree((0, 0, 100, 100), threshold=3)
    for e in rng.sample(sorted(boxes), len(boxes)):
        fresh.insert(e, boxes[e])
    for tree in [*trees, fresh]:
        assert list(tree) == sorted(boxes)
    for _ in range(40):
        x, y = rng.uniform(0, 100), rng.uniform(0, 100)
        calls: list[tuple[str, tuple[object, ...]]] = [
            ("query", ((x, y, x + 30, y + 30),)),
            ("query_point", (x, y)),
            ("query_radius", (x, y, 20.0)),
            ("nearest", (x, y, 5)),
            ("raycast", (x, y, 100 - x, 100 - y)),
            ("cast_box", ((x, y, x + 3, y + 3), 40.0, -20.0)),
            ("find_all_intersections", ()),
            ("find_intersections_for", (sorted(boxes)[:5],)),
        ]
        if boxes:
            calls.append(("query_entity", (rng.choice(sorted(boxes)),)))
        for name, args in calls:
            answers = [canon(getattr(tree, name)(*args)) for tree in [*trees, fresh]]
            assert answers[0] == answers[1] == answers[2], name
        hits = trees[0].query((x, y, x + 30, y + 30))
        assert hits == sorted(hits)
    states = [tree.__getstate__() for tree in trees]
    assert pickle.dumps(states[0]) == pickle.dumps(states[1])


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("kind", ["dense", "dense low", "dense high", "sparse", "extremes",
                                  "strided"])
@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 300, 3000])
def test_answers_of_any_size_and_any_ids_are_in_ascending_order(
    cls: type, kind: str, n: int
) -> None:
    """The sort the core picks by size and spread (insertion, a bitmap for ids packed
    closer than 64 apart on average, buckets otherwise) gives ascending order for any ids:
    small and dense (esper's), packed at either end of the 64-bit range, spread over it,
    both ends at once, every 63rd. Checked through query, query_radius, query_entity and
    iteration."""
    rng = random.Random(n)
    count = n + 1  # the last one overlaps all the others: query_entity's
    if kind.startswith("dense"):
        base = {"dense": 0, "dense low": -INT64, "dense high": INT64 - 2 * count}[kind]
        ids = [base + i for i in rng.sample(range(2 * count), count)]
    elif kind == "sparse":
        ids = list({rng.randrange(-INT64, INT64) for _ in range(count)})
    elif kind == "extremes":
        ids = [-INT64, INT64 - 1, *rng.sample(range(-count, count), count - 2)]
        rng.shuffle(ids)
    else:
        ids = [63 * i - 1000 for i in rng.sample(range(count), count)]
    assert len(set(ids)) == count
    tree = cls((0, 0, 100, 100), threshold=8)
    tree.insert_many(ids[:-1], [(rng.uniform(0, 50), rng.uniform(0, 50), 60.0, 60.0)
                                for _ in ids[:-1]])
    tree.insert(ids[-1], (59.0, 59.0, 61.0, 61.0))
    everyone = sorted(ids)
    assert list(tree) == everyone
    assert tree.query((0, 0, 100, 100)) == everyone
    assert tree.query_radius(50.0, 50.0, 100.0) == everyone
    assert tree.query_entity(ids[-1]) == sorted(ids[:-1])


# ---------------------------------------------------------------------------- keywords

#: A good value for each parameter of the reference's methods, by name (a fresh one per call).
GOOD: dict[str, Callable[[], object]] = {
    "bounds": lambda: (0.0, 0.0, 100.0, 100.0),
    "wrap": lambda: (0.0, 0.0, 200.0, 200.0),
    "threshold": lambda: 4,
    "max_depth": lambda: 3,
    "entity": lambda: 1,
    "default": lambda: "absent",
    "box": lambda: (0.0, 0.0, 10.0, 10.0),
    "entities": lambda: [1, 2],
    "boxes": lambda: [(1.0, 1.0, 2.0, 2.0), (3.0, 3.0, 4.0, 4.0)],
    "atomic": lambda: False,
    "records": lambda: [(1.0, 1.0, 2.0, 2.0, 1)],
    "x": lambda: 1.0,
    "y": lambda: 2.0,
    "r": lambda: 5.0,
    "k": lambda: 2,
    "where": lambda: (lambda e: e != 2),
    "max_distance": lambda: 50.0,
    "x0": lambda: 0.0,
    "y0": lambda: 0.0,
    "x1": lambda: 20.0,
    "y1": lambda: 20.0,
    "dx": lambda: 5.0,
    "dy": lambda: 5.0,
    "memo": lambda: {},
    "points": lambda: [(5.0, 5.0), (15.0, 15.0)],
    "radius": lambda: 4.0,
    "state": lambda: PyQuadTree((0, 0, 50, 50)).__getstate__(),
}


def methods() -> list[str]:
    """Every method of the reference's class that a user may call with arguments of their
    own: the public ones, and the dunders both classes define (not the slot wrappers and
    object's methods, which CPython words for each)."""
    members: dict[str, object] = {}
    for klass in PyQuadTree.__mro__[:-1]:  # the class and the units it is composed of
        for name, member in vars(klass).items():
            members.setdefault(name, member)
    names = [
        name for name, member in members.items()
        if inspect.isfunction(member) and (not name.startswith("_") or name in (
            "__init__", "__copy__", "__deepcopy__", "__reduce__", "__getstate__",
            "__setstate__",
        ))
    ]
    return sorted(names)


def shapes(name: str) -> Iterator[tuple[str, tuple[object, ...], dict[str, object]]]:
    """Calls of method ``name`` in every shape: good ones (by position, by keyword, defaults
    left out) and bad ones (too many, too few, unknown, near-miss, duplicated keywords, a
    keyword-only one by position, ``self=``), as ``(label, args, kwargs)``."""
    params = list(inspect.signature(getattr(PyQuadTree, name)).parameters.values())[1:]
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    required = [p for p in positional if p.default is p.empty]
    keyword_only = [p for p in params if p.kind is p.KEYWORD_ONLY]

    def value(p: inspect.Parameter) -> object:
        return GOOD[p.name]()

    yield "required by position", tuple(value(p) for p in required), {}
    yield "all by position", tuple(value(p) for p in positional), {}
    yield "required by keyword", (), {p.name: value(p) for p in required}
    yield "all by keyword", (), {p.name: value(p) for p in params}
    if required:
        yield "first by position, rest by keyword", (value(required[0]),), {
            p.name: value(p) for p in params[1:]
        }
        for i in range(len(required)):
            yield f"missing {required[i].name}", (), {
                p.name: value(p) for p in required if p is not required[i]
            }
        yield "none", (), {}
        yield "duplicate", tuple(value(p) for p in required), {required[0].name: value(
            required[0])}
    yield "one too many", (*(value(p) for p in positional), 0), {}
    yield "unknown keyword", tuple(value(p) for p in required), {"bogus": 1}
    yield "two unknown keywords", tuple(value(p) for p in required), {"bogus": 1, "other": 2}
    for p in params:
        yield f"near miss {p.name}", tuple(value(q) for q in required if q is not p), {
            p.name + "s": value(p)
        }
    for p in keyword_only:
        yield f"{p.name} by position", (*(value(q) for q in positional), value(p)), {}
        yield f"{p.name} by position and too many", (
            *(value(q) for q in positional), value(p), 0), {p.name: value(p)}
    yield "self", tuple(value(p) for p in required), {"self": 1}


def filled(cls: type) -> Any:
    """A small tree with entities 1, 2, 3 (the methods' good arguments name them)."""
    tree = cls((0, 0, 100, 100), threshold=2)
    tree.insert_many([1, 2, 3], [(0.0, 0.0, 3.0, 3.0), (2.0, 2.0, 6.0, 6.0), (8.0, 8.0, 9.0, 9.0)])
    return tree


@needs_core
def test_both_classes_have_the_same_methods() -> None:
    """Every method of the reference exists in the compiled class, and no other public one."""
    public = {name for name in dir(PyQuadTree) if not name.startswith("_")}
    assert public == {name for name in dir(CQuadTree) if not name.startswith("_")}
    assert set(methods()) <= set(dir(CQuadTree))


@needs_core
@pytest.mark.parametrize("name", methods())
def test_every_call_shape_binds_or_fails_alike(name: str) -> None:
    """Each method, called in each shape on both classes (bound and unbound): the same
    answer and tree after it, or the same TypeError, word for word on this Python (3.13's
    "Did you mean" included). The issue's case first: query(box=...) works in both."""
    assert CQuadTree((0, 0, 10, 10)).query(box=(0, 0, 5, 5)) == []
    for label, args, kwargs in shapes(name):
        for unbound in (False, True):
            results = []
            for cls in (PyQuadTree, CQuadTree):
                tree = filled(cls)
                if unbound:
                    answer = outcome(getattr(cls, name), tree, *args, **kwargs)
                else:
                    answer = outcome(getattr(tree, name), *args, **kwargs)
                results.append((answer, snapshot(tree)))
            assert results[0] == results[1], f"{name}, {label} (unbound: {unbound})"
        answer = results[0][0]
        if label.startswith(("required", "all", "first")) and name not in (
            "insert", "insert_many", "insert_records"  # entity 1 is in the tree already
        ):
            assert not (isinstance(answer, tuple) and answer[0] == "raised"), (name, label)
        elif not label.startswith(("required", "all", "first")):
            assert isinstance(answer, tuple) and answer[:2] == ("raised", "TypeError"), (
                name, label)


@needs_core
def test_keywords_of_the_constructor_and_the_errors_of_a_bad_call() -> None:
    """The constructor binds as the reference's __init__ does; a refused call is refused
    before the tree is touched (and the texts are the interpreter's for the reference)."""
    calls: list[tuple[tuple[object, ...], dict[str, object]]] = [
        ((1, 2), {}), ((), {"thresold": 3}), ((None,), {"bounds": None}), ((None, 4), {}),
        ((), {"bounds": (0, 0, 1, 1), "max_depth": 0}),
    ]
    for args, kwargs in calls:
        ref = outcome(PyQuadTree, *args, **kwargs)
        assert outcome(CQuadTree, *args, **kwargs) == ref, (args, kwargs)
    tree = filled(CQuadTree)
    before = snapshot(tree)
    with pytest.raises(TypeError, match=r"^QuadTree.__init__\(\) takes from 1 to 2"):
        tree.__init__(1, 2)
    assert snapshot(tree) == before


@needs_core
def test_a_call_of_every_parameter_by_position_is_not_parsed() -> None:
    """The per-frame calls (move, query...) by position bind without looking at keywords:
    the same answers as by keyword (a smoke test of the fast path of arguments())."""
    for cls in (PyQuadTree, CQuadTree):
        tree = filled(cls)
        tree.move(1, (0.5, 0.5, 1.0, 1.0))
        tree.move(entity=2, box=(0.5, 0.5, 1.0, 1.0))
        assert tree.query((0, 0, 1, 1)) == tree.query(box=(0, 0, 1, 1)) == [1, 2]
        assert tree.get(7, None) is tree.get(7) is None


# ---------------------------------------------------------------------------- ids


class IntLike:
    """An integer-like id (numpy's integers have ``__index__`` and are no int)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return "IntLike(...)"


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "entity", [INT64, -INT64 - 1, 2**70, 10**5000, IntLike(2**64)],
    ids=["2**63", "-2**63-1", "2**70", "10**5000", "IntLike(2**64)"],
)
def test_an_id_outside_64_bits_is_refused_when_stored_and_absent_when_looked_up(
    cls: type, entity: object
) -> None:
    """The one rule for ids, in both classes: storing one outside the signed 64-bit range
    raises OverflowError naming it (an int too long to print as 'an int of N bits'), with
    nothing changed; every lookup finds nothing: in, get, discard, remove and query_entity's
    KeyError, and move, move_many and move_records raise move's KeyError."""
    tree = filled(cls)
    before = snapshot(tree)
    value = entity if isinstance(entity, int) else 2**64
    shown = f"an int of {value.bit_length()} bits" if value > 10**4000 else repr(value)
    range_error = f"entity ids are 64-bit ints (from -2**63 to 2**63 - 1), got {shown}"
    box = (1.0, 1.0, 2.0, 2.0)
    stores: list[tuple[Callable[..., object], tuple[object, ...]]] = [
        (tree.insert, (entity, box)),
        (tree.insert_many, ([entity], [box])),
        (tree.insert_records, ([(*box, entity)],)),
    ]
    for method, args in stores:
        assert outcome(method, *args) == ("raised", "OverflowError", range_error)
    state = tree.__getstate__()
    state.update(ids=[entity], boxes=list(box))
    assert outcome(tree.__setstate__, state) == (
        "raised", "OverflowError", f"QuadTree state: {range_error}")
    assert snapshot(tree) == before
    missing = f"'entity {shown if entity is value else repr(entity)} is not in the index'"
    assert entity not in tree
    assert tree.get(entity) is None
    tree.discard(entity)
    for method in (tree.remove, tree.__getitem__, tree.query_entity):
        assert outcome(method, entity) == ("raised", "KeyError", missing)
    moved = f"'entity {shown} is not in the index'"
    moves: list[tuple[Callable[..., object], tuple[object, ...]]] = [
        (tree.move, (entity, box)),
        (tree.move_many, ([entity], [box])),
        (tree.move_records, ([(*box, entity)],)),
    ]
    for method, args in moves:
        assert outcome(method, *args) == ("raised", "KeyError", moved)
    assert tree.find_intersections_for([entity]) == []
    assert snapshot(tree) == before


@pytest.mark.parametrize("cls", CLASSES)
def test_the_bounds_of_the_range_are_ids(cls: type) -> None:
    """-2**63 and 2**63 - 1 are ids like any other, in lists, buffers and states."""
    tree = cls((0, 0, 10, 10))
    tree.insert_many(array("q", [INT64 - 1, -INT64]), array("d", [1, 1, 2, 2] * 2))
    assert list(tree) == [-INT64, INT64 - 1]
    assert tree.find_all_intersections_array().tolist() == [-INT64, INT64 - 1]
    copy_ = pickle.loads(pickle.dumps(tree))
    assert list(copy_) == [-INT64, INT64 - 1]


class ClaimsInt:
    """An object whose ``__class__`` says int, equal to and hashed as 3, whose index is 3."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int

    def __hash__(self) -> int:
        return hash(3)

    def __eq__(self, other: object) -> bool:
        return other == 3

    def __index__(self) -> int:
        return 3

    def __repr__(self) -> str:
        return "ClaimsInt()"


class ClaimsFloat:
    """An object whose ``__class__`` says float, which is 1.5 as a float."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return float

    def __float__(self) -> float:
        return 1.5

    def __lt__(self, other: float) -> bool:
        return other > 1.5

    def __gt__(self, other: float) -> bool:
        return other < 1.5

    def __le__(self, other: float) -> bool:
        return other >= 1.5

    def __ge__(self, other: float) -> bool:
        return other <= 1.5

    def __repr__(self) -> str:
        return "ClaimsFloat()"


@pytest.mark.parametrize("cls", CLASSES)
def test_an_object_that_claims_to_be_an_int_is_stored_as_its_index(cls: type) -> None:
    """A __class__ that says int or float is not believed: the id is stored as the exact int
    operator.index gives, the coordinate as its float, and check() passes (the reference
    stored the object itself and failed check())."""
    tree = cls((0, 0, 10, 10))
    tree.insert(ClaimsInt(), (1.0, 1.0, 2.0, 2.0))
    tree.insert(4, (ClaimsFloat(), 1.0, 2.0, 2.0))
    tree.insert_records([(1.0, 1.0, 2.0, 2.0, 5)])
    tree.move(ClaimsInt(), (1.0, ClaimsFloat(), 2.0, 2.0))
    tree.move_records([(1.0, 1.0, 2.0, 2.0, ClaimsInt())])
    tree.check()
    assert [type(e) for e in tree] == [int, int, int]
    assert type(tree[4][0]) is float and tree[4][0] == 1.5
    assert ClaimsInt() in tree
    with pytest.raises(ValueError, match=r"^threshold must be an int >= 1, got ClaimsInt\(\)$"):
        cls(None, threshold=ClaimsInt())


# ---------------------------------------------------------------------------- smaller ones


@pytest.mark.parametrize("cls", CLASSES)
def test_a_tree_made_by_new_alone_is_an_empty_tree(cls: type) -> None:
    """cls.__new__(cls) (as pickle makes one) is a usable empty tree with the defaults (the
    reference's raised AttributeError on use)."""
    tree = cls.__new__(cls)  # type: ignore[call-overload]
    assert repr(tree) == "QuadTree(bounds=None, threshold=16, max_depth=8, entities=0)"
    assert len(tree) == 0 and tree.query((0, 0, 1, 1)) == [] and list(tree) == []
    tree.insert(1, (0.0, 0.0, 1.0, 1.0))
    tree.check()
    assert tree.bounds is not None and tree.query((0, 0, 1, 1)) == [1]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("atomic", [True, False])
def test_a_badly_shaped_buffer_says_nothing_of_moves_before_it(cls: type, atomic: bool) -> None:
    """move_many(atomic=False) with a buffer of boxes of the wrong shape made no move: its
    error does not say that moves before it stand (the core's did)."""
    tree = filled(cls)
    with pytest.raises(ValueError) as caught:
        tree.move_many(array("q", [1]), array("d", [1.0] * 5), atomic=atomic)
    assert str(caught.value) == (
        "move_many: a buffer of boxes holds 4 floats per box (flat, or rows of 4), got 5 "
        "floats in 1 dimension(s)"
    )


#: Buffers of odd shapes that ctypes makes (memoryview cannot make a shape with a 0 in it).
def odd_buffers() -> list[tuple[str, object, object]]:
    row = ctypes.c_double * 4
    return [
        ("(0, 4) boxes", array("q"), (row * 0)()),
        ("(1, 4) boxes", array("q", [7]), (row * 1)()),
        ("(2, 2) boxes", array("q", [7]), ((ctypes.c_double * 2) * 2)()),
        ("(1, 1, 4) boxes", array("q", [7]), ((row * 1) * 1)()),
        ("scalar id", ctypes.c_int64(5), array("d", [0, 0, 1, 1])),
        ("scalar box", array("q", [7]), ctypes.c_double(1.0)),
        ("(1, 1) ids", ((ctypes.c_int64 * 1) * 1)(), array("d", [0, 0, 1, 1])),
        ("(1, 0) ids", ((ctypes.c_int64 * 0) * 1)(), array("d")),
        ("strided boxes", array("q", [1]), memoryview(array("d", [0, 0, 1, 1] * 2))[::2]),
        ("uint64 ids", (ctypes.c_uint64 * 1)(), array("d", [0, 0, 1, 1])),
        ("int32 ids", (ctypes.c_int32 * 2)(), array("d", [0, 0, 1, 1])),
        ("float32 boxes", array("q", [1]), array("f", [0, 0, 1, 1])),
    ]


@needs_core
@pytest.mark.parametrize("method", ["insert_many", "move_many"])
@pytest.mark.parametrize("label", [b[0] for b in odd_buffers()])
def test_odd_buffers_are_read_alike(method: str, label: str) -> None:
    """Each odd buffer shape (a (0, 4) one made the reference fail in memoryview.cast): the
    same answer or error from both classes, the same tree after it."""
    _, ids, boxes = next(b for b in odd_buffers() if b[0] == label)
    results = []
    for cls in (PyQuadTree, CQuadTree):
        tree = filled(cls)
        tree.insert(0, (5.0, 5.0, 6.0, 6.0))
        results.append((outcome(getattr(tree, method), ids, boxes), snapshot(tree)))
    assert results[0] == results[1]


@pytest.mark.parametrize("cls", CLASSES)
def test_a_box_given_as_an_iterator_is_read_once(cls: type) -> None:
    """Found by the fuzz: a move to an iterator of four numbers that leaves the fast path
    read it a second time in the reference, empty by then (TypeError; the core moved)."""
    tree = filled(cls)
    tree.move(1, iter([50.0, 50.0, 51.0, 51.0]))
    tree.move_many([2], [iter([60.0, 60.0, 61.0, 61.0])])
    tree.move_many([3], [iter([70.0, 70.0, 71.0, 71.0])], atomic=False)
    assert [tree[e] for e in (1, 2, 3)] == [(50, 50, 51, 51), (60, 60, 61, 61), (70, 70, 71, 71)]
    tree.check()


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    ("items", "error"),
    [
        ((math.nan, 0.0, 1.0, 1.0), "ValueError: entity 9: Box min_x is NaN"),
        ((5.0, 0.0, 1.0, 1.0), "ValueError: entity 9: Box min_x=5.0 is greater than max_x=1.0 "
                               "(negative width)"),
        (("a", 0.0, 1.0, 1.0), "TypeError: entity 9: Box min_x must be a real number, got 'a'"),
        ((0, 0, 1, 1), None),
    ],
)
def test_a_box_that_skipped_its_checks_is_checked(
    cls: type, items: tuple[object, ...], error: str | None
) -> None:
    """Found by the fuzz: a Box made without Box's checks (tuple.__new__, a crafted pickle)
    was stored as it was by the reference (NaN, ints: check() failed) and made the core
    raise SystemError. Both check it as any 4-tuple: the error, or the floats."""
    box = tuple.__new__(Box, items)
    tree = filled(cls)
    try:
        tree.insert(9, box)
    except (TypeError, ValueError) as raised:
        assert f"{type(raised).__name__}: {raised}" == error
    else:
        assert error is None and type(tree[9][0]) is float
    tree.check()


@pytest.mark.parametrize("cls", CLASSES)
def test_nodes_are_listed_when_asked_for(cls: type) -> None:
    """Found looking for what else iterates: the reference's nodes() walked the live tree
    lazily, so a change while iterating changed (or broke) the rest of the walk; the core
    lists them at the call. Both list them at the call now."""
    tree = cls((0, 0, 100, 100), threshold=1)
    for e in range(20):
        tree.insert(e, (e * 4.0 + 0.5, e * 4.0 + 0.5, e * 4.0 + 1.0, e * 4.0 + 1.0))
    before = list(tree.nodes())
    walk = tree.nodes()
    first = next(walk)
    tree.clear()
    assert [first, *walk] == before


# ---------------------------------------------------------------------------- the fuzz


class OddIndex:
    """An object whose ``__index__`` gives ``value``, or raises it if it is an exception."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __index__(self) -> int:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"OddIndex({self.value!r})"


class OddFloat:
    """An object whose ``__float__`` gives ``value`` (or raises it); a real number to no
    one (no numbers.Real), so the index refuses it by name."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __float__(self) -> float:
        if isinstance(self.value, BaseException):
            raise self.value
        return self.value  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"OddFloat({self.value!r})"


class OddBool:
    """An object whose truth raises (as ``atomic=``)."""

    def __bool__(self) -> bool:
        raise ZeroDivisionError("no truth")

    def __repr__(self) -> str:
        return "OddBool()"


class FlakyIterable:
    """An iterable of ``items`` whose iterator raises after ``stop`` of them."""

    def __init__(self, items: list[object], stop: int) -> None:
        self.items, self.stop = items, stop

    def __iter__(self) -> Iterator[object]:
        for i, item in enumerate(self.items):
            if i == self.stop:
                raise LookupError("the iterable broke")
            yield item

    def __repr__(self) -> str:
        return "FlakyIterable()"


class IntSub(int):
    """An int subclass with a repr of its own."""

    def __repr__(self) -> str:
        return f"IntSub({int(self)})"


class FloatSub(float):
    """A float subclass."""

    def __repr__(self) -> str:
        return f"FloatSub({float(self)})"


FLOATS = (0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308,
          1e308, math.inf, -math.inf, math.nan, 2.0**53, 0.5, 99.5, 50.0)


#: The methods the fuzz calls, and how often: enough inserts for trees of a few hundred
#: entries, where queries find many ids in some order.
CALLS = {
    "insert": 10, "insert_many": 8, "insert_records": 3, "move": 6, "move_many": 3,
    "move_records": 2, "remove": 2, "discard": 2, "get": 1, "contains": 1, "getitem": 1,
    "query": 3, "query_point": 2, "query_radius": 3, "query_radius_many": 2, "nearest": 3,
    "raycast": 2,
    "raycast_first": 2, "cast_box": 2, "cast_box_first": 2, "query_entity": 2,
    "find_intersections_for": 2, "nodes": 1, "setstate": 0.1, "clear": 0.05, "init": 0.1,
}


class Fuzz:
    """Random calls of random methods with random, often hostile, arguments, on a reference
    tree and a compiled one, from one seed. The arguments of each call are built twice from
    the same random state (an iterator is consumed by the call it is given to)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        hint = self.rng.choice([None, (0, 0, 100, 100), (-1e308, -1e308, 1e308, 1e308)])
        threshold = self.rng.choice([1, 2, 4])
        max_depth = self.rng.choice([0, 3, 8])
        self.trees: list[Any] = [PyQuadTree(hint, threshold=threshold, max_depth=max_depth),
                                 CQuadTree(hint, threshold=threshold, max_depth=max_depth)]
        self.tree: Any = None  # the tree whose call is being built (a where= reads it)
        self.clean = False  # whether the call being built takes good values alone
        self.ids: list[int] = []

    # -- values: each takes the rng that builds this copy of the arguments

    def number(self, rng: random.Random) -> object:
        kind = rng.random()
        if kind < 0.7 or self.clean:
            return rng.uniform(-10, 110)
        if kind < 0.8:
            return rng.choice(FLOATS)
        if kind < 0.75:
            return rng.choice([0, 7, -3, 2**53 + 1, 10**400, -(10**400), 10**5000])
        if kind < 0.87:
            return FloatSub(rng.uniform(0, 100)) if rng.random() < 0.5 else IntSub(5)
        if kind < 0.9:
            return rng.choice([True, False])
        if kind < 0.93:
            return rng.choice([OddFloat(2.0), OddFloat(ValueError("odd float")), OddFloat("x")])
        if kind < 0.96:
            return ClaimsFloat()
        return rng.choice([None, "1.0", [1.0], object.__new__(IntLike)])

    def box(self, rng: random.Random) -> object:
        kind = rng.random()
        if kind < 0.85 or self.clean:
            x, y = rng.uniform(-10, 100), rng.uniform(-10, 100)
            box = (x, y, x + rng.uniform(0, 12), y + rng.uniform(0, 12))
            return Box(*box) if rng.random() < 0.2 else list(box) if rng.random() < 0.1 else box
        if kind < 0.95:
            return tuple(self.number(rng) for _ in range(4))
        return rng.choice([
            None, (), (1.0, 2.0, 3.0), (1.0,) * 5, "abcd", 7, iter([0.0] * 4),
            FlakyIterable([0.0] * 4, 2), {1.0: 1, 2.0: 2, 3.0: 3, 4.0: 4},
            # Boxes that skipped Box's checks (tuple.__new__, as a crafted pickle may)
            tuple.__new__(Box, (math.nan, 0.0, 1.0, 1.0)), tuple.__new__(Box, (0, 0, 1, 1)),
            tuple.__new__(Box, (5.0, 0.0, 1.0, 1.0)), tuple.__new__(Box, ("a", 0.0, 1.0, 1.0)),
            tuple.__new__(Box, (1.0, 2.0)),
        ])

    def large(self, rng: random.Random) -> object:
        """A box a quarter of the world or more: queries that find many ids."""
        x, y = rng.uniform(-10, 60), rng.uniform(-10, 60)
        return (x, y, x + rng.uniform(20, 60), y + rng.uniform(20, 60))

    def entity(self, rng: random.Random) -> object:
        kind = rng.random()
        if kind < 0.5 and self.ids:
            return rng.choice(self.ids)
        if kind < 0.85 or self.clean:
            return rng.randrange(-5, 200)
        if kind < 0.9:
            return rng.choice([INT64 - 1, -INT64, INT64, -INT64 - 1, 2**70, 10**5000, -(10**5000)])
        if kind < 0.95:
            return rng.choice([IntLike(3), IntSub(4), ClaimsInt(), OddIndex(2**64),
                               OddIndex(ValueError("odd index")), OddIndex(1.5), OddIndex(True),
                               OddIndex(IntSub(2**63)), IntSub(-INT64 - 1)])
        return rng.choice([True, False, 1.0, 2.5, math.nan, None, "3", b"3", (3,), [3]])

    def present(self, rng: random.Random) -> object:
        """An id in the tree, mostly (the moves' ids)."""
        return rng.choice(self.ids) if self.ids and rng.random() < 0.9 else self.entity(rng)

    def fresh(self, rng: random.Random) -> object:
        """An id not in the tree, mostly (the inserts' ids)."""
        if rng.random() < 0.85 or self.clean:
            return rng.randrange(200, 10**6)
        return self.entity(rng)

    def many(self, rng: random.Random, item: Callable[[random.Random], object],
             count: int | None = None) -> object:
        count = rng.randint(0, 8) if count is None else count
        items = [item(rng) for _ in range(count)]
        kind = rng.random()
        if kind < 0.7 or self.clean:
            return items
        if kind < 0.85:
            return iter(items)
        if kind < 0.93:
            return FlakyIterable(items, rng.randint(0, len(items)))
        return rng.choice([None, 5, "ab", tuple(items)])

    def id_buffer(self, rng: random.Random) -> object:
        ids = [rng.choice(self.ids) if self.ids and rng.random() < 0.7 else rng.randrange(60)
               for _ in range(rng.randint(0, 4))]
        kind = rng.random()
        if kind < 0.7:
            return array("q", ids)
        if kind < 0.85:
            return (ctypes.c_int64 * len(ids))(*ids)
        return rng.choice([array("i", ids), ((ctypes.c_int64 * 1) * len(ids))(),
                           memoryview(array("q", ids * 2))[::2]])

    def box_buffer(self, rng: random.Random, n: int) -> object:
        floats = [f for _ in range(n) for f in self.box_floats(rng)]
        kind = rng.random()
        if kind < 0.6:
            return array("d", floats)
        if kind < 0.75:
            return ((ctypes.c_double * 4) * n)(*[(ctypes.c_double * 4)(*floats[4 * i:4 * i + 4])
                                                  for i in range(n)])
        if kind < 0.85:
            return array("d", floats[:-1] if floats else [1.0])
        return rng.choice([((ctypes.c_double * 4) * 0)(), ((ctypes.c_double * 2) * (2 * n))(),
                           array("f", floats), memoryview(array("d", floats * 2))[::2]])

    def box_floats(self, rng: random.Random) -> tuple[float, float, float, float]:
        if rng.random() < 0.85 or self.clean:
            x, y = rng.uniform(-10, 100), rng.uniform(-10, 100)
            return (x, y, x + rng.uniform(0, 9), y + rng.uniform(0, 9))
        return tuple(rng.choice(FLOATS) for _ in range(4))  # type: ignore[return-value]

    def record(self, rng: random.Random, entity: Callable[[random.Random], object]) -> object:
        if rng.random() < 0.95 or self.clean:
            return (*self.box_floats(rng), entity(rng))
        return rng.choice([None, (1.0, 2.0, 3.0, 4.0), (*self.box_floats(rng), 1, 2),
                           [1.0, 1.0, 2.0, 2.0, 1], (1, 1, 2, 2, 1)])

    def where(self, rng: random.Random) -> object:
        tree = self.tree  # the tree whose call this is
        return rng.choice([
            None, lambda e: e % 2 == 0, lambda e: 1 / 0, lambda e: OddBool(), "not callable",
            lambda e: len(tree.query_entity(e)) > 0,  # reads the tree: allowed
            lambda e: tree.discard(e),  # changes it: RuntimeError, the tree as it was
        ])

    # -- the calls

    def call(self, rng: random.Random) -> tuple[str, tuple[object, ...], dict[str, object]]:
        """One call as (method, args, kwargs), built from ``rng``: of good values alone for
        half of them (so that trees grow), of any values for the others."""
        self.clean = rng.random() < 0.5
        name = rng.choices(*zip(*CALLS.items(), strict=True))[0]
        e, n, b = self.entity, self.number, self.box
        if name == "insert":
            return name, (self.fresh(rng), b(rng)), {}
        if name in ("insert_many", "move_many"):
            kwargs: dict[str, object] = {}
            if name == "move_many" and rng.random() < 0.5:
                kwargs["atomic"] = rng.choice([True, False, 0, None, OddBool()])
            if rng.random() < 0.3:
                ids = self.id_buffer(rng)
                count = len(memoryview(ids)) if rng.random() < 0.8 else rng.randint(0, 4)  # type: ignore[arg-type]
                return name, (ids, self.box_buffer(rng, count)), kwargs
            count = rng.randint(0, 8)
            other = count if rng.random() < 0.9 else rng.randint(0, 8)
            ids = self.fresh if name == "insert_many" else self.present
            return name, (self.many(rng, ids, count), self.many(rng, b, other)), kwargs
        if name == "insert_records":
            return name, (self.many(rng, lambda r: self.record(r, self.fresh)),), {}
        if name == "move_records":
            return name, (self.many(rng, lambda r: self.record(r, self.present)),), {}
        if name == "move":
            return name, (self.present(rng), b(rng)), {}
        if name in ("remove", "discard", "contains", "getitem", "query_entity"):
            return name, (self.present(rng) if rng.random() < 0.7 else e(rng),), {}
        if name == "get":
            return name, (e(rng), "absent"), {}
        if name == "query":
            return name, (b(rng) if rng.random() < 0.5 else self.large(rng),), {}
        if name == "query_point":
            return name, (n(rng), n(rng)), {}
        if name == "query_radius":
            return name, (n(rng), n(rng), n(rng) if rng.random() < 0.5 else rng.uniform(0, 50)), {}
        if name == "query_radius_many":
            count = rng.randint(0, 5)
            if rng.random() < 0.3:
                points: object = array("d", [rng.uniform(-10, 110) for _ in range(2 * count)])
            else:
                points = self.many(rng, lambda r: (n(r), n(r)), count)
            if rng.random() < 0.5:
                return name, (points, n(rng) if rng.random() < 0.5 else rng.uniform(0, 50)), {}
            other = count if rng.random() < 0.9 else rng.randint(0, 5)
            radii = self.many(rng, lambda r: n(r) if r.random() < 0.3 else r.uniform(0, 50), other)
            return name, (points, radii), {}
        if name == "nearest":
            kwargs = {}
            if rng.random() < 0.4:
                kwargs["where"] = self.where(rng)
            if rng.random() < 0.4:
                kwargs["max_distance"] = n(rng)
            k = rng.choice([1, 2, 5, 0, -1, 10**30, True, 2.0, IntSub(3), ClaimsInt(), None])
            return name, (n(rng), n(rng), k), kwargs
        if name in ("raycast", "raycast_first", "cast_box", "cast_box_first"):
            kwargs = {}
            if name.endswith("_first") and rng.random() < 0.4:
                kwargs["where"] = self.where(rng)
            if name.startswith("raycast"):
                return name, (n(rng), n(rng), n(rng), n(rng)), kwargs
            return name, (b(rng), n(rng), n(rng)), kwargs
        if name == "find_intersections_for":
            return name, (self.many(rng, e),), {}
        if name == "nodes":
            return name, ((b(rng),) if rng.random() < 0.7 else ()), {}
        if name == "setstate":
            return name, (self.state(rng),), {}
        if name == "init":
            kwargs = {}
            if rng.random() < 0.5:
                kwargs["threshold"] = rng.choice([1, 3, 0, True, 2.0, IntSub(2), ClaimsInt()])
            if rng.random() < 0.5:
                kwargs["max_depth"] = rng.choice([0, 4, -1, None, 10**30])
            return name, ((b(rng),) if rng.random() < 0.6 else ()), kwargs
        return name, (), {}

    def state(self, rng: random.Random) -> object:
        state = PyQuadTree((0, 0, 100, 100)).__getstate__()
        ids = [self.fresh(rng) for _ in range(rng.randint(0, 12))]
        state["ids"] = ids
        state["root"] = (0.0, 0.0, 100.0, 100.0)
        state["boxes"] = [c for _ in ids for c in self.box_floats(rng)]
        spoil = rng.random()
        if spoil < 0.2:
            state[rng.choice(["threshold", "max_depth", "root_level", "format"])] = (
                rng.choice([0, -1, True, 2.0, None, 10**30, ClaimsInt()]))
        elif spoil < 0.3:
            state["boxes"] = state["boxes"][:-1]
        return state

    def apply(self, tree: Any, name: str, args: tuple[object, ...], kwargs: dict[str, object]
              ) -> object:
        if name == "contains":
            return outcome(tree.__contains__, *args)
        if name == "getitem":
            return outcome(tree.__getitem__, *args)
        if name == "setstate":
            return outcome(tree.__setstate__, *args)
        if name == "init":
            return outcome(tree.__init__, *args, **kwargs)
        return outcome(getattr(tree, name), *args, **kwargs)

    def step(self) -> str:
        state = self.rng.getstate()
        calls = []
        for tree in self.trees:
            rng = random.Random()
            rng.setstate(state)
            self.tree = tree
            calls.append(self.call(rng))
        self.rng.setstate(rng.getstate())  # on from where the builder stopped
        answers = [self.apply(tree, *call) for tree, call in zip(self.trees, calls, strict=True)]
        name = calls[0][0]
        assert answers[0] == answers[1], (
            f"{name}{calls[0][1]!r:.300} {calls[0][2]!r:.200}:\n  reference {answers[0]!r:.500}"
            f"\n  compiled  {answers[1]!r:.500}"
        )
        assert snapshot(self.trees[0]) == snapshot(self.trees[1]), f"after {name}"
        self.ids = list(self.trees[0])
        return name

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
        copies = [copy.deepcopy(tree) for tree in self.trees]
        assert snapshot(copies[0]) == snapshot(copies[1])


@needs_core
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.filterwarnings("ignore:__index__ returned non-int:DeprecationWarning")
def test_the_fuzz_finds_one_behaviour(seed: int) -> None:
    """Random methods with random and hostile arguments: the same answers and errors, the
    same trees, step by step."""
    Fuzz(seed).run(60)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args(None if argv is None else list(argv))
    for seed in range(args.first, args.first + args.seeds):
        try:
            Fuzz(seed).run(args.steps)
        except AssertionError as error:
            print(f"seed {seed}: {error}")
            return 1
    print(f"{args.seeds} seeds of {args.steps} steps: one behaviour")
    return 0


if __name__ == "__main__":
    sys.exit(main())
