"""QuadTree at its edges (issue 17): the whole float range, exactly; ids taken as ``insert``
takes them, by every method; copies and pickles that stand alone, keep a subclass's own
attributes and refuse a bad state by name; ``nearest`` on deep trees. Every test runs against
both classes (the ``tree_class`` fixture)."""

from __future__ import annotations

import base64
import copy
import io
import math
import pickle
import random
import sys
import zlib
from array import array
from collections.abc import Callable
from typing import Any

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import Box, PyQuadTree, QuadTree, index, segment_entry
from ecs_spatial.geometry import midpoint

MAX = sys.float_info.max
Pair = tuple[int, int]


def brute_pairs(model: dict[int, Box]) -> list[Pair]:
    ids = sorted(model)
    return [
        (a, b) for i, a in enumerate(ids) for b in ids[i + 1 :] if model[a].intersects(model[b])
    ]


def assert_sound(tree: QuadTree, model: dict[int, Box]) -> None:
    """Every invariant, every node finite with its split point inside it, and every query
    of a few probes equal to brute force over ``model``."""
    tree.check()
    repr(tree)
    assert tree.depth() >= 0
    for info in tree.nodes():
        assert all(-MAX <= v <= MAX for v in info.box)
    assert {e: tree[e] for e in tree} == model
    assert tree.find_all_intersections() == brute_pairs(model)
    probes = [(0.0, 0.0), (1e308, 1e308), (-MAX, MAX), (5e-324, 0.0)]
    probes += [b.center for b in model.values()]
    for x, y in probes:
        assert sorted(tree.query_point(x, y)) == sorted(
            e for e, b in model.items() if b.contains_point(x, y)
        )
        for r in (0.0, 1.0, 1e154, 1e300):
            assert sorted(tree.query_radius(x, y, r)) == sorted(
                e for e, b in model.items() if b.distance_to_point(x, y) <= r
            )
        expected = sorted(model, key=lambda e: (model[e].distance_to_point(x, y), e))
        assert tree.nearest(x, y, 3) == expected[:3]
    for box in model.values():
        assert sorted(tree.query(box)) == sorted(e for e, b in model.items() if b.intersects(box))


# ---------------------------------------------------------------------------- the float range


def test_ints_past_2_53_are_rounded_as_box_rounds_them(tree_class: type[QuadTree]) -> None:
    """Int coordinates are converted to floats on the way in, by insert, move and move_many
    alike, so the index answers for the floats ``Box`` holds: 2**53 + 1 is 2**53 (kept as an
    int it was found by a query it misses, missed by a point it holds, and broke check())."""
    big = 2**53
    tree = tree_class(Box(0, 0, 2 * big, 2 * big), threshold=1)
    raw = {
        1: (big + 1, big + 1, big + 1, big + 1),
        2: (big - 1, big - 1, big + 3, big + 3),
        3: (big + 3, 0, big + 5, 1),
        4: (3 * big // 2 + 1, 0, 3 * big // 2 + 1, 0),
    }
    for entity, box in raw.items():
        tree.insert(entity, box)
    model = {entity: Box(*box) for entity, box in raw.items()}
    assert model[1] == (2.0**53,) * 4
    assert all(type(v) is float for e in tree for v in tree[e])
    assert sorted(tree.query_point(2.0**53, 2.0**53)) == [1, 2]
    assert tree.query((big + 2, big + 2, big + 2, big + 2)) == [2]  # 1 lies at 2**53 itself
    assert_sound(tree, model)
    tree.move(1, (big + 3, 0, big + 5, 1))  # the move's fast path: the node still holds it
    tree.move_many([3, 4], [(big + 7, 0, big + 9, 1), (1, 1, 2, 2)])
    model |= {1: Box(big + 3, 0, big + 5, 1), 3: Box(big + 7, 0, big + 9, 1), 4: Box(1, 1, 2, 2)}
    assert all(type(v) is float for e in tree for v in tree[e])
    assert_sound(tree, model)


TOO_BIG = 10**400

refusals: list[tuple[str, Callable[[QuadTree], object], str]] = [
    ("insert", lambda t: t.insert(70, (0, 0, TOO_BIG, 1)),
     r"entity 70: Box max_x is too large for a float \(1000"),
    ("insert_many", lambda t: t.insert_many([70, 80], [(0, 0, 1, 1), (-TOO_BIG, 0, 1, 1)]),
     r"entity 80: Box min_x is too large for a float"),
    ("move", lambda t: t.move(3, (0, 0, 1, TOO_BIG)), r"entity 3: Box max_y is too large"),
    ("move_many", lambda t: t.move_many([1, 2, 3], [(500.0, 500.0, 501.0, 501.0)] * 2 + [
        (0, TOO_BIG, 1, TOO_BIG)]), r"entity 3: Box min_y is too large"),
    ("query", lambda t: t.query((0, 0, TOO_BIG, 1)), r"^Box max_x is too large"),
    ("query_point", lambda t: t.query_point(0, TOO_BIG), r"query point y is too large"),
    ("query_radius", lambda t: t.query_radius(0, 0, TOO_BIG), r"radius is too large"),
    ("nearest", lambda t: t.nearest(TOO_BIG, 0), r"query point x is too large"),
    ("max_distance", lambda t: t.nearest(0, 0, max_distance=TOO_BIG),
     r"max_distance is too large"),
    ("raycast", lambda t: t.raycast(0, 0, -TOO_BIG, 0), r"query point x is too large"),
    ("Box", lambda t: Box(0, 0, 1, TOO_BIG), r"Box max_y is too large for a float"),
    ("bounds", lambda t: type(t)((0, 0, TOO_BIG, 1)), r"Box max_x is too large for a float"),
    ("huge int", lambda t: t.insert(70, (0, 0, 10**5000, 1)),
     r"max_x is too large for a float \(an int of 16610 bits\)"),
]


@pytest.mark.parametrize(("call", "message"), [r[1:] for r in refusals],
                         ids=[r[0] for r in refusals])
def test_ints_beyond_the_float_range_are_refused_by_name(
    tree_class: type[QuadTree], call: Callable[[QuadTree], object], message: str
) -> None:
    """10**400 is refused as ValueError naming the field and the value, before anything
    changes (it was accepted, and crashed nearest and raycast with OverflowError later)."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(1, 30):
        tree.insert(entity, (entity * 3, entity * 2, entity * 3 + 4, entity * 2 + 4))
    before = {e: tree[e] for e in tree}, tree.bounds, sorted(tree.nodes())
    with pytest.raises(ValueError, match=message):
        call(tree)
    tree.check()
    assert ({e: tree[e] for e in tree}, tree.bounds, sorted(tree.nodes())) == before


roots: dict[str, tuple[Box | None, list[tuple[float, float, float, float]]]] = {
    "first box wider than 4.5e307": (None, [(-1e308, -1e308, 1e308, 1e308), (0, 0, 1, 1)]),
    "first box wider than the range": (None, [(-MAX, 0, MAX, 0), (5, 5, 5, 5), (-MAX, 1, 0, 1)]),
    "first box at 1e308": (None, [(1e308, 1e308, 1e308, 1e308), (1.7e308, 0, MAX, 1)]),
    "first box at MAX": (None, [(MAX, MAX, MAX, MAX), (1e308, 1e308, 1e308, 1e308)]),
    "hint near the top": (Box(1e308, 1e308, 1.7e308, 1.7e308), [(1.2e308, 1.2e308, 1.3e308,
                                                                 1.3e308), (0, 0, 1, 1)]),
    "hint spanning the range": (Box(-MAX, -MAX, MAX, MAX), [(1e308, 0, MAX, 1), (-1, -1, 1, 1)]),
    "growth toward 1.6e308": (Box(0, 0, 100, 100), [(1.6e308, 1.6e308, 1.6e308, 1.6e308),
                                                    (1, 1, 2, 2), (-1.6e308, 0, -1e308, 5)]),
    "degenerate hint at 1e308": (Box(1e308, 1e308, 1e308, 1e308), [(1.5e308, 0, 1.5e308, 0)]),
    "subnormal hint": (Box(0, 0, 5e-324, 5e-324), [(1e-323, 0, 1.5e-323, 5e-324), (1, 1, 1, 1)]),
}


@pytest.mark.parametrize("threshold", [1, 16])
@pytest.mark.parametrize("name", list(roots))
def test_roots_and_split_points_never_leave_the_finite_range(
    tree_class: type[QuadTree], name: str, threshold: int
) -> None:
    """Roots around boxes at the float range's edge, or grown toward it, keep finite bounds
    and split points (repr, bounds, nodes() and depth() raised, check() failed), inserted
    one by one or all at once, and every query stays exact."""
    hint, raw = roots[name]
    model = {entity: Box(*box) for entity, box in enumerate(raw, start=1)}
    one_by_one = tree_class(hint, threshold=threshold)
    for entity, box in model.items():
        one_by_one.insert(entity, box)
        one_by_one.insert(entity + 100, box)  # two of each: a leaf of one must split
    doubled = model | {entity + 100: box for entity, box in model.items()}
    assert_sound(one_by_one, doubled)
    at_once = tree_class(hint, threshold=threshold)
    at_once.insert_many(doubled, doubled.values())
    assert_sound(at_once, doubled)
    for info in at_once.nodes():
        x0, y0, x1, y1 = info.box
        assert x0 <= midpoint(x0, x1) <= x1 and y0 <= midpoint(y0, y1) <= y1


def test_insert_many_keeps_the_invariants_insert_keeps(tree_class: type[QuadTree]) -> None:
    """A batch whose bounding box the root could not reach (it grew only toward its lower
    edge) left a box the root could still have grown toward outside it: check() failed."""
    tree = tree_class((0, -1e308, 1, -2e307))
    tree.insert_many([1, 2], [(1e5, -5e307) * 2, (0.5, -1.7e308) * 2])
    assert_sound(tree, {1: Box(1e5, -5e307, 1e5, -5e307), 2: Box(0.5, -1.7e308, 0.5, -1.7e308)})


def test_a_root_grown_to_the_range_holds_every_box(tree_class: type[QuadTree]) -> None:
    """Growth stops at the finite range rather than overflowing: a root doubled toward the
    largest floats is clamped there and holds every box, on both sides."""
    tree = tree_class(Box(-1e307, -1e307, 1e307, 1e307), threshold=1)
    model = {1: Box(MAX, MAX, MAX, MAX), 2: Box(-MAX, -MAX, -MAX, -MAX), 3: Box(1, 1, 2, 2)}
    for entity, box in model.items():
        tree.insert(entity, box)
    assert tree.bounds == Box(-MAX, -MAX, MAX, MAX)
    assert next(tree.nodes()).entries == 0  # no box is kept beyond the root: all below it
    assert_sound(tree, model)


@pytest.mark.parametrize("scale", [2.0**600, 2.0**-600, 2.0**1000, 2.0**-1070])
def test_distances_neither_overflow_nor_underflow(tree_class: type[QuadTree], scale: float) -> None:
    """Gaps beyond 1.3e154 squared to inf, gaps below 1e-154 to 0: nearest and query_radius
    lost their order and their radius there. A 3-4-5 triangle at any scale is exact."""
    tree = tree_class()
    tree.insert(1, (3 * scale, 4 * scale, 3 * scale, 4 * scale))  # distance 5 scale
    tree.insert(2, (6 * scale, 0, 7 * scale, 0))  # distance 6 scale
    tree.insert(3, (0, -5 * scale, 0, -5 * scale))  # distance 5 scale: a tie, broken by id
    if scale > 1:
        tree.insert(4, (-MAX, MAX, -MAX, MAX))  # distance beyond the range: inf, last
    assert tree[1].distance_to_point(0, 0) == 5 * scale
    assert tree.nearest(0.0, 0.0, 4)[:3] == [1, 3, 2]
    assert sorted(tree.query_radius(0, 0, 5 * scale)) == [1, 3]
    assert tree.query_radius(0, 0, math.nextafter(5 * scale, 0)) == []
    assert tree.nearest(0, 0, 3, max_distance=math.nextafter(5 * scale, 0)) == []


def test_raycast_along_a_segment_longer_than_the_range(tree_class: type[QuadTree]) -> None:
    """x1 - x0 overflows for -1e308 -> 1e308: the fractions are still those of the segment
    (they were all 0, a division by inf), in [0, 1], and boxes past its end are missed."""
    tree = tree_class(threshold=1)
    boxes = {1: Box(0, -1, 1, 1), 2: Box(5e307, -1, 5e307, 1), 3: Box(-MAX, 0, -1e308, 0),
             4: Box(1.5e308, 0, MAX, 0), 5: Box(-5e307, 1, -5e307, 1)}
    tree.insert_many(boxes, boxes.values())
    assert tree.raycast(-1e308, 0, 1e308, 0) == [(3, 0.0), (1, 0.5), (2, 0.75)]
    assert tree.raycast(1e308, 0, -1e308, 0) == [(2, 0.25), (1, 0.5), (3, 1.0)]
    assert tree.raycast(-1e308, -1e308, 1e308, 1e308) == [(1, 0.5)]
    for t in (t for _, t in tree.raycast(-MAX, -MAX, MAX, MAX)):
        assert 0.0 <= t <= 1.0


# ---------------------------------------------------------------------------- ids


class IntLike:
    """An integer-like id, as a numpy integer is: it has ``__index__``, and is no int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"IntLike({self.value})"


def _tree(tree_class: type[QuadTree]) -> QuadTree:
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(1, 30):
        tree.insert(entity, (entity * 3, entity * 2, entity * 3 + 4, entity * 2 + 4))
    return tree


def _state(tree: QuadTree) -> object:
    return sorted((e, tree[e]) for e in tree), tree.find_all_intersections(), sorted(tree.nodes())


NOT_IDS = [1.0, True, "1", [1], None, 2.5]


@pytest.mark.parametrize("entity", NOT_IDS, ids=repr)
@pytest.mark.parametrize("where", ["stays", "leaves"])
def test_moves_refuse_ids_that_are_not_ints_as_insert_does(
    tree_class: type[QuadTree], entity: object, where: str
) -> None:
    """move and move_many refuse a float or a bool (even one equal to an id: move(1.0, box)
    stored the id 1.0 in pairs) and anything else with TypeError naming it, the tree as it
    was; [1] raised UnboundLocalError."""
    tree = _tree(tree_class)
    before = _state(tree)
    box = tree[1] if where == "stays" else Box(90, 90, 91, 91)
    message = rf"entity ids are ints, got {entity!r}".replace("[", r"\[").replace("]", r"\]")
    with pytest.raises(TypeError, match=message):
        tree.move(entity, box)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=message):
        tree.move_many([2, entity], [Box(95, 95, 96, 96), box])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=message + r".*moves before it stand"):
        tree.move_many([2, entity], [(95.0, 95.0, 96.0, 96.0), box],  # type: ignore[list-item]
                       atomic=False)
    assert tree[2] == Box(95, 95, 96, 96)
    tree.move(2, before[0][1][1])  # type: ignore[index]
    tree.check()
    assert _state(tree) == before


@pytest.mark.parametrize("where", ["stays", "leaves"])
def test_moves_store_integer_like_ids_as_their_int(tree_class: type[QuadTree], where: str) -> None:
    """An integer-like id moves its int's entry and stays an int in every answer."""
    tree = _tree(tree_class)
    box = (3.5, 2.5, 7.0, 6.0) if where == "stays" else (90.0, 90.0, 91.0, 91.0)
    tree.move(IntLike(1), box)  # type: ignore[arg-type]
    tree.move_many([IntLike(2)], [box])  # type: ignore[list-item]
    tree.check()
    assert all(type(e) is int for pair in tree.find_all_intersections() for e in pair)
    assert (1, 2) in tree.find_all_intersections()
    assert all(type(e) is int for e in tree.query(Box(0, 0, 100, 100)))


@pytest.mark.parametrize("entity", NOT_IDS, ids=repr)
def test_lookups_find_no_entry_for_a_value_that_is_not_an_id(
    tree_class: type[QuadTree], entity: object
) -> None:
    """A value that is not an id is in no index, even one equal to an id, as in a dict
    whose keys are ints and never floats: ``in`` says no, ``get`` gives the default,
    ``[]``, ``remove`` and ``query_entity`` raise KeyError saying ids are ints, ``discard``
    and ``find_intersections_for`` pass it over. The tree is unchanged."""
    tree = _tree(tree_class)
    before = _state(tree)
    assert entity not in tree
    assert tree.get(entity) is None  # type: ignore[arg-type]
    lookups: list[Callable[[Any], object]] = [tree.__getitem__, tree.remove, tree.query_entity]
    for method in lookups:
        with pytest.raises(KeyError, match=r"is not in the index \(ids are ints, not"):
            method(entity)
    tree.discard(entity)  # type: ignore[arg-type]
    assert tree.find_intersections_for([entity]) == []  # type: ignore[list-item]
    assert _state(tree) == before


def test_lookups_take_integer_like_ids_as_their_int(tree_class: type[QuadTree]) -> None:
    """An integer-like id looks up its int, through every method."""
    tree = _tree(tree_class)
    one, two = IntLike(1), IntLike(2)
    assert one in tree
    assert tree[one] == tree.get(one) == tree[1]  # type: ignore[index, arg-type]
    assert tree.query_entity(two) == tree.query_entity(2)  # type: ignore[arg-type]
    assert tree.find_intersections_for([one]) == tree.find_intersections_for([1])  # type: ignore[list-item]
    tree.remove(one)  # type: ignore[arg-type]
    tree.discard(two)  # type: ignore[arg-type]
    assert 1 not in tree and 2 not in tree
    with pytest.raises(KeyError, match=r"entity IntLike\(1\) is not in the index") as error:
        tree.remove(one)  # type: ignore[arg-type]
    assert "ids are ints" not in str(error.value)  # it is an id, only not in the index
    tree.check()


# ---------------------------------------------------------------------------- copies


def _pickled(tree: QuadTree) -> QuadTree:
    clone: QuadTree = pickle.loads(pickle.dumps(tree))
    return clone


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, _pickled],
                         ids=["copy", "deepcopy", "pickle"])
def test_copies_are_independent_of_their_original(
    tree_class: type[QuadTree], clone: Callable[[QuadTree], QuadTree]
) -> None:
    """A copy (copy.copy shared the nodes: changing it changed the original), a deep copy
    and an unpickled tree each change alone: inserts that split, moves in place and across
    nodes, removals that merge, growth of the root, on either side."""
    original = _tree(tree_class)
    original.query(Box(0, 0, 100, 100))  # the snapshots exist, and are copied too
    original.find_intersections_for(list(original))
    before = _state(original)
    twin = clone(original)
    assert _state(twin) == before
    twin.insert(100, (40.0, 40.0, 41.0, 41.0))
    twin.move(1, (3.5, 2.5, 7.0, 6.0))
    twin.move(2, (60.0, 60.0, 61.0, 61.0))
    twin.move_many([3, 4], [(1e9, 1e9, 1e9, 1e9), (5.0, 5.0, 5.0, 5.0)])
    for entity in range(5, 25):
        twin.remove(entity)
    twin.check()
    original.check()
    assert _state(original) == before
    twin_state = _state(twin)
    original.clear()
    original.insert(1, (0.0, 0.0, 1.0, 1.0))
    twin.check()
    assert _state(twin) == twin_state


def _grown_tree(tree_class: type[QuadTree]) -> QuadTree:
    """A tree with every feature a state must rebuild: a bounds hint, a root grown past it
    as far as it may go (level -64) with a box still beyond it, identical points stopped at
    max_depth, boxes on split lines, entries removed and moved, ids far from 0."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2, max_depth=3)
    for entity in range(1, 40):
        tree.insert(entity, (entity * 2.0, entity * 1.5, entity * 2.0 + 3, entity * 1.5 + 3))
    for entity in range(40, 46):
        tree.insert(entity, (10.0, 10.0, 10.0, 10.0))  # identical: down to max_depth
    tree.insert_many([46, 47], [(50.0, 0.0, 50.0, 100.0), (0.0, 50.0, 100.0, 50.0)])
    tree.insert(-(2**62), (-1000.0, 5.0, -999.0, 6.0))  # the root doubles toward it
    tree.insert(2**62, (1e300, 1e300, 1e300, 1e300))  # past the farthest it may grow
    tree.remove(7)
    tree.move(8, (70.0, 70.0, 71.0, 71.0))
    tree.check()
    return tree


def _observed(tree: QuadTree) -> object:
    """Everything a caller can see of a tree, but the order of unordered answers (and its
    class): the same for a tree and its loaded pickle, whichever class loads it."""
    probes = [Box(0, 0, 30, 30), Box(-2000, 0, 0, 10), Box(9, 9, 11, 11), Box(-1e308, -1, 0, 1)]
    return (
        repr(tree), tree.bounds, tree.threshold, tree.max_depth, len(tree),
        sorted((e, tree[e]) for e in tree),
        tree.find_all_intersections(),
        [tuple(info) for info in tree.nodes()],
        tree.depth(),
        [sorted(tree.query(probe)) for probe in probes],
        tree.nearest(10.0, 10.0, 8), tree.raycast(-2000.0, 5.5, 100.0, 5.5),
    )


def _load_as(data: bytes, tree_class: type[QuadTree]) -> QuadTree:
    """A pickle of either class, loaded as ``tree_class``: what a process that has only
    ``tree_class`` makes of it."""

    class Unpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            if (module, name) in (("ecs_spatial.quadtree", "QuadTree"),
                                  ("ecs_spatial.index", "QuadTree")):
                return tree_class
            return super().find_class(module, name)

    loaded: QuadTree = Unpickler(io.BytesIO(data)).load()
    assert type(loaded) is tree_class
    return loaded


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_pickle_rebuilds_the_same_tree(tree_class: type[QuadTree], protocol: int) -> None:
    """Every protocol rebuilds the tree node for node, its class named as the package names
    it (``ecs_spatial.index.QuadTree`` for the compiled core, so that it loads as whichever
    QuadTree the loading process has); and the copy goes on as the original does, back to
    its bounds hint on ``clear()``."""
    tree = _grown_tree(tree_class)
    data = pickle.dumps(tree, protocol)
    module = "ecs_spatial.quadtree" if tree_class is PyQuadTree else "ecs_spatial.index"
    assert module.encode() in data
    loaded = pickle.loads(data)
    assert type(loaded) is tree_class
    loaded.check()
    assert _observed(loaded) == _observed(tree)
    for twin in (tree, loaded):
        twin.move_many([1, 2, 2**62], [(5.0, 5.0, 6.0, 6.0), (-3e5, 0.0, -3e5, 0.0), (0, 0, 1, 1)])
        twin.remove(40)
    loaded.check()
    assert _observed(loaded) == _observed(tree)
    tree.clear()
    loaded.clear()
    assert loaded.bounds == tree.bounds == Box(0, 0, 100, 100)


@pytest.fixture(params=["reference", "compiled"])
def other_class(request: pytest.FixtureRequest) -> type[QuadTree]:
    """The class a state crosses to (with ``tree_class``, every direction)."""
    if request.param == "compiled" and not index.NATIVE:
        pytest.skip(f"no compiled core: {index.REASON}")
    return PyQuadTree if request.param == "reference" else index.QuadTree


def test_a_pickle_loads_in_the_other_class(
    tree_class: type[QuadTree], other_class: type[QuadTree]
) -> None:
    """A tree pickled by either class loads in either (the state is one format): the same
    tree, node for node, which answers and changes as the original does."""
    tree = _grown_tree(tree_class)
    loaded = _load_as(pickle.dumps(tree), other_class)
    loaded.check()
    assert _observed(loaded) == _observed(tree)
    for twin in (tree, loaded):
        twin.insert_many(range(100, 140), [(float(e % 7), 3.0, e % 7 + 0.5, 4.0)
                                           for e in range(100, 140)])
        twin.move(9, (-5e5, -5e5, -5e5, -5e5))
        for entity in range(1, 30):
            twin.discard(entity)
    loaded.check()
    assert _observed(loaded) == _observed(tree)


def test_a_deep_copy_crosses_between_the_classes(
    tree_class: type[QuadTree], other_class: type[QuadTree]
) -> None:
    """A deep copy of objects that hold trees of both classes, one referring to the other
    through a subclass's attribute, is the same graph: each tree of its class, shared where
    it was shared; and the deep copy of one's state loads in the other."""
    tree = _grown_tree(tree_class)
    other: Any = _tagged(other_class)(Box(0, 0, 10, 10))
    other.tag = [tree]
    copied: dict[str, Any] = copy.deepcopy({"tree": tree, "other": other, "again": tree})
    assert copied["tree"] is copied["again"] is not tree
    assert type(copied["tree"]) is tree_class and type(copied["other"]) is type(other)
    assert copied["other"].tag[0] is copied["tree"]
    assert _observed(copied["tree"]) == _observed(tree)
    loaded = other_class.__new__(other_class)
    loaded.__setstate__(copy.deepcopy(tree.__getstate__()))
    loaded.check()
    assert _observed(loaded) == _observed(tree)


# Pickles written before the state had a format: the compiled core's (format 0, its bounds
# hint passed to the constructor) and the reference's (its fields, by pickle's default for
# __slots__). Both of the tree Box(0, 0, 8, 8), threshold=1, with 1: (1, 1, 2, 2),
# 2: (5, 5, 6, 7), 3: (3, 3, 5, 5), and in the first 4: (-20, 0, -19, 1), which grew the root.
_OLD_COMPILED_PICKLE = """
eNprYEpOTS6OLy5ILMlMzNHLzEtJreAKLE1MCSlKTeUqZECRTU/Nz00tKarkcsqv4Cpk1HBngAIEw0EBjVFSyNRY
yNxayBJUyFpbyKYRwQkSzChKLc7Iz0kpZPdmBIvkJlbEp6QWlGQUcnhzRLAARYry80sKOTXcD1jgtsMBZgdXBBdU
S3xOallqTiG317////9HMANFM1OKC3liC3k1vBm9mbyZvVlSI1iBwkn5FanFhXyxhfwa7vYfoCbCGQ4MGAwRDIYE
jCEDY3BgMDB0HTBB988BYzTbU0uT9AAA7U08
"""
_OLD_REFERENCE_PICKLE = """
eNqNU01Lw0AQzZdaiqBowfpx8Bgv/gWLl4ALgYLXskQzusG2qclW9FDQi6e9Of5P/4HOJmnaJqk6m8NjmHlvZjLz
6nz2HSMz1YHblKeTQEbB8PxxGoQyAUDV6hO81vADz97Qn6GrtvlNPB2HKRfRWOJq5j3EI5DJCyr7Mn6mJNczCluA
3mkFSHxDtclviVbiAF1mM5MZ9ExQDr+LMid93mseby5AQbEMdufsBZghs12v15q7S9CpAGZLTJnhkrhFJTgSYY1o
VcLrGRVAoqbrXXwV7hLUApmpRU0/kyr5Gvorpbp1KctfrbShwJLHqPDo8VTUG7JK0K2nW259lkuBJ0Wjlm7U8QHU
Br/TKzVAQnpj9O/916LUS5TNG/b3D5LLDTcorh33iuLakRn1QcvfRrwMurVEPTJBl4V0f8wU+8wSR8wWO1O6mkjC
KNUTFLuiIw7EoTjW4Q9RmHv3fDKgwCE8wTA7L1q6/IFq81HwzEOYSIGspbb4JEggv8Krb7LsDOlpyiSOJTKDUDoO
JjrEz7nbXIoEUhEPQ1r76TvenP8AWA/GFA==
"""


@pytest.mark.parametrize(("data", "bounds", "entities"), [
    (_OLD_COMPILED_PICKLE, Box(-24, 0, 8, 32), 4), (_OLD_REFERENCE_PICKLE, Box(0, 0, 8, 8), 3),
], ids=["compiled", "reference"])
def test_pickles_from_before_the_format_still_load(
    tree_class: type[QuadTree], data: str, bounds: Box, entities: int
) -> None:
    """A pickle written before the state had a format loads in either class, as the tree
    that was pickled, with its bounds hint."""
    tree = _load_as(zlib.decompress(base64.b64decode(data)), tree_class)
    tree.check()
    expected = tree_class(Box(0, 0, 8, 8), threshold=1)
    boxes = [(1, 1, 2, 2), (5, 5, 6, 7), (3, 3, 5, 5), (-20, 0, -19, 1)][:entities]
    for entity, box in enumerate(boxes, start=1):
        expected.insert(entity, box)
    assert tree.bounds == bounds
    assert _observed(tree) == _observed(expected)
    tree.clear()
    assert tree.bounds == Box(0, 0, 8, 8)


_SMALL = Box(0, 0, 10, 10)


class TaggedReference(PyQuadTree):
    """A subclass with attributes of its own (no ``__slots__``)."""

    def __init__(self, bounds: Box = _SMALL) -> None:
        super().__init__(bounds)
        self.tag: object = "level 1"


class SlottedReference(PyQuadTree):
    """A subclass with slots of its own, one private (its name mangled), one left empty."""

    __slots__ = ("__private", "empty", "tag")

    def __init__(self, bounds: Box = _SMALL) -> None:
        super().__init__(bounds)
        self.tag: object = "level 1"
        self.__private = 7

    def private(self) -> int:
        return self.__private


class TaggedCompiled(index.QuadTree):
    """TaggedReference's twin, over the class ``ecs_spatial.QuadTree`` is."""

    def __init__(self, bounds: Box = _SMALL) -> None:
        super().__init__(bounds)
        self.tag: object = "level 1"


class SlottedCompiled(index.QuadTree):
    """SlottedReference's twin, over the class ``ecs_spatial.QuadTree`` is."""

    __slots__ = ("__private", "empty", "tag")

    def __init__(self, bounds: Box = _SMALL) -> None:
        super().__init__(bounds)
        self.tag: object = "level 1"
        self.__private = 7

    def private(self) -> int:
        return self.__private


def _tagged(tree_class: type[QuadTree]) -> type[QuadTree]:
    return TaggedReference if tree_class is PyQuadTree else TaggedCompiled


def _slotted(tree_class: type[QuadTree]) -> type[QuadTree]:
    return SlottedReference if tree_class is PyQuadTree else SlottedCompiled


@pytest.mark.parametrize("kind", ["dict", "slots"])
@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, _pickled],
                         ids=["copy", "deepcopy", "pickle"])
def test_copies_and_pickles_of_a_subclass_keep_its_own_attributes(
    tree_class: type[QuadTree], clone: Callable[[Any], Any], kind: str
) -> None:
    """copy.copy, copy.deepcopy and pickle give the subclass back with its own attributes
    (a ``__dict__``, or slots of its own, a private one too; an empty slot stays empty):
    shared by copy.copy, copied by the others, where an attribute that refers back to the
    tree refers to the copy."""
    subclass: Any = _tagged(tree_class) if kind == "dict" else _slotted(tree_class)
    tree: Any = subclass()
    tree.insert(1, (1.0, 1.0, 2.0, 2.0))
    tree.tag = ["level 1", tree]
    twin = clone(tree)
    assert type(twin) is subclass and twin[1] == tree[1]
    twin.check()
    assert twin.tag[0] == "level 1"
    if clone is copy.copy:
        assert twin.tag is tree.tag
    else:
        assert twin.tag is not tree.tag and twin.tag[1] is twin
    if kind == "slots":
        assert twin.private() == 7
        assert not hasattr(twin, "empty")
        assert not hasattr(twin, "__dict__")


def _valid_state() -> dict[str, Any]:
    """A state of _tree()'s tree as both classes write it."""
    return _tree(PyQuadTree).__getstate__()


def _changed(**changes: object) -> dict[str, Any]:
    state = _valid_state()
    for key, value in changes.items():
        if value is _DROP:
            del state[key]
        else:
            state[key] = value
    return state


_DROP = object()
_boxes = _valid_state()["boxes"]
_ids = _valid_state()["ids"]

bad_states: list[tuple[str, object, type[Exception], str]] = [
    ("not a dict", [1, 2], TypeError, r"^QuadTree state: expected a dict, got list$"),
    ("format", _changed(format=3), ValueError,
     r"^QuadTree state: format 3 is not one this version reads \(0, 1 or 2\)$"),
    ("format str", _changed(format="1"), ValueError, r"format '1' is not one this version"),
    ("unknown key", _changed(extra=1), ValueError, r"^QuadTree state: unknown key 'extra'$"),
    ("no ids", _changed(ids=_DROP), ValueError, r"^QuadTree state: no 'ids'$"),
    ("no bounds", _changed(bounds=_DROP), ValueError, r"^QuadTree state: no 'bounds'$"),
    ("threshold", _changed(threshold=0), ValueError,
     r"^QuadTree state: threshold must be an int >= 1, got 0$"),
    ("max_depth", _changed(max_depth=True), ValueError,
     r"^QuadTree state: max_depth must be an int >= 0, got True$"),
    ("bounds", _changed(bounds=(0.0, math.nan, 1.0, 1.0)), ValueError,
     r"^QuadTree state: bounds: Box min_y is NaN$"),
    ("root", _changed(root=5), TypeError, r"^QuadTree state: root: expected a box"),
    ("root inverted", _changed(root=(1.0, 0.0, 0.0, 1.0)), ValueError,
     r"^QuadTree state: root: Box min_x=1.0 is greater than max_x=0.0"),
    ("root_level", _changed(root_level=1), ValueError,
     r"^QuadTree state: root_level must be an int from -64 to 0, got 1$"),
    ("root_level -65", _changed(root_level=-65), ValueError, r"root_level .* got -65$"),
    ("root_level float", _changed(root_level=-1.0), ValueError, r"root_level .* got -1.0$"),
    ("ids", _changed(ids={1: 2}), TypeError, r"^QuadTree state: ids must be a list, got dict$"),
    ("boxes", _changed(boxes=None), TypeError,
     r"^QuadTree state: boxes must be a list, got NoneType$"),
    ("lengths", _changed(boxes=_boxes[:-1]), ValueError,
     r"^QuadTree state: 29 ids take 116 box coordinates, got 115$"),
    ("no root", _changed(root=None, bounds=None), ValueError,
     r"^QuadTree state: no root, but 29 entities$"),
    ("bounds without root", _changed(root=None, ids=[], boxes=[]), ValueError,
     r"^QuadTree state: no root, but bounds \(a tree with bounds has a root\)$"),
    ("id", _changed(ids=[*_ids[:3], "7", *_ids[4:]]), TypeError,
     r"^QuadTree state: entity ids are ints, got '7' \(str\)$"),
    ("id twice", _changed(ids=[*_ids[:3], _ids[0], *_ids[4:]]), ValueError,
     rf"^QuadTree state: entity {_ids[0]} is listed twice$"),
    ("box", _changed(boxes=[*_boxes[:8], 5.0, 0.0, 1.0, 1.0, *_boxes[12:]]), ValueError,
     rf"^QuadTree state: entity {_ids[2]}: Box min_x=5.0 is greater than max_x=1.0"),
    ("coordinate", _changed(boxes=[*_boxes[:4], "0", *_boxes[5:]]), TypeError,
     rf"^QuadTree state: entity {_ids[1]}: Box min_x must be a real number"),
    ("infinite", _changed(boxes=[*_boxes[:-1], math.inf]), ValueError,
     rf"^QuadTree state: entity {_ids[-1]}: Box max_y is infinite"),
    ("attributes", _changed(attributes={"tag": 1}), TypeError,
     r"^QuadTree state: attributes \['tag'\] for \w+, whose instances have no __dict__$"),
    ("attributes list", _changed(attributes=[1]), TypeError,
     r"^QuadTree state: attributes must be a dict, got list$"),
    ("slots", _changed(slots={"tag": 1}), TypeError, r"^QuadTree state: \w+ has no slot 'tag'$"),
    ("slot name", _changed(slots={1: 1}), TypeError,
     r"^QuadTree state: slots has a key that is no name: 1$"),
    ("old fields", (None, {"_home": {}}), ValueError,
     r"^QuadTree state: the fields of an earlier version are incomplete \(KeyError"),
    # The buffers both classes write are checked in bulk, then entry by entry for the words.
    ("id twice, buffers", _changed(ids=array("q", [*_ids[:3], _ids[0], *_ids[4:]])), ValueError,
     rf"^QuadTree state: entity {_ids[0]} is listed twice$"),
    ("box, buffers", _changed(boxes=array("d", [*_boxes[:8], 5.0, 0.0, 1.0, 1.0, *_boxes[12:]])),
     ValueError, rf"^QuadTree state: entity {_ids[2]}: Box min_x=5.0 is greater than max_x=1.0"),
    ("NaN, buffers", _changed(boxes=array("d", [*_boxes[:5], math.nan, *_boxes[6:]])),
     ValueError, rf"^QuadTree state: entity {_ids[1]}: Box min_y is NaN"),
    ("infinite, buffers", _changed(boxes=array("d", [*_boxes[:-1], math.inf])), ValueError,
     rf"^QuadTree state: entity {_ids[-1]}: Box max_y is infinite"),
    ("-infinite, buffers", _changed(boxes=array("d", [-math.inf, *_boxes[1:]])), ValueError,
     rf"^QuadTree state: entity {_ids[0]}: Box min_x is infinite"),
]


@pytest.mark.parametrize(("state", "error", "message"), [b[1:] for b in bad_states],
                         ids=[b[0] for b in bad_states])
def test_a_bad_state_is_refused_by_name_and_changes_nothing(
    tree_class: type[QuadTree], state: object, error: type[Exception], message: str
) -> None:
    """A corrupt or incompatible state raises ValueError or TypeError saying what is wrong
    (the same words from both classes), and the tree it was given to is as it was; a tree
    made for it (as pickle makes one) is refused the same way."""
    tree = _grown_tree(tree_class)
    before = _observed(tree)
    with pytest.raises(error, match=message):
        tree.__setstate__(state)
    tree.check()
    assert _observed(tree) == before
    with pytest.raises(error, match=message):
        tree_class.__new__(tree_class).__setstate__(state)


def test_a_state_of_format_1_loads_as_the_same_tree(tree_class: type[QuadTree]) -> None:
    """A state of format 1, its ids and boxes lists of ints and floats (as both classes wrote
    it before the buffers), loads as the same tree as today's state; and today's state is
    the buffers, in the same order."""
    state = _valid_state()
    assert state["format"] == 2
    assert type(state["ids"]) is array and state["ids"].typecode == "q"
    assert type(state["boxes"]) is array and state["boxes"].typecode == "d"
    old = {**state, "format": 1, "ids": list(state["ids"]), "boxes": list(state["boxes"])}
    tree, expected = tree_class.__new__(tree_class), tree_class.__new__(tree_class)
    tree.__setstate__(old)
    expected.__setstate__(state)
    tree.check()
    assert _observed(tree) == _observed(expected)
    assert tree.__getstate__() == state


def test_a_state_whose_boxes_lie_outside_its_root_grows_the_root(
    tree_class: type[QuadTree],
) -> None:
    """A state whose root does not hold its boxes (written by hand) loads as insert_many
    would place them: the root doubles toward them, and the tree is sound."""
    state = _changed(root=(0.0, 0.0, 1.0, 1.0), root_level=0)
    tree = tree_class.__new__(tree_class)
    tree.__setstate__(state)
    tree.check()
    expected = tree_class.__new__(tree_class)
    expected.__setstate__(_changed(root=(0.0, 0.0, 1.0, 1.0), root_level=0, ids=[], boxes=[]))
    expected.insert_many(state["ids"], [tuple(state["boxes"][i : i + 4])
                                        for i in range(0, len(state["boxes"]), 4)])
    assert _observed(tree) == _observed(expected)


# ---------------------------------------------------------------------------- nearest


@budget(30)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(0, 600),
    threshold=st.sampled_from([1, 4, 16]),
    k=st.integers(1, 12),
    options=st.fixed_dictionaries(
        {}, optional={"where": st.integers(1, 4), "max_distance": st.floats(0, 80)}
    ),
)
def test_nearest_on_deep_trees_is_the_brute_force_answer(
    tree_class: type[QuadTree],
    seed: int, n: int, threshold: int, k: int, options: dict[str, Any]
) -> None:
    """Branch and bound over trees many levels deep, with large straddler lists near the
    root (whose snapshots it reads), from points inside and outside the world: the k
    nearest, ties by id, as brute force gives them, with ``where`` and ``max_distance``."""
    rng = random.Random(seed)
    side = 40.0 * math.sqrt(max(n, 1))
    model = {}
    for entity in range(n):
        bx, by = round(rng.uniform(0, side)), round(rng.uniform(0, side))  # ties are common
        model[entity] = Box(bx, by, bx + rng.choice((0, 4, 8, 16)), by + rng.choice((0, 4, 8)))
    tree = tree_class(Box(0, 0, side, side), threshold=threshold)
    tree.insert_many(model, model.values())
    modulus = options.pop("where", None)
    if modulus is not None:
        options["where"] = lambda e: e % modulus == 0
    limit = options.get("max_distance", math.inf)
    for _ in range(20):
        x = rng.choice((rng.uniform(0, side), rng.uniform(-side, 2 * side), side / 2))
        y = rng.choice((rng.uniform(0, side), rng.uniform(-side, 2 * side), side / 2))
        key = {
            e: (b.distance_to_point(x, y), e)
            for e, b in model.items()
            if (modulus is None or e % modulus == 0) and b.distance_to_point(x, y) <= limit
        }
        assert tree.nearest(x, y, k, **options) == sorted(key, key=key.__getitem__)[:k]


def test_nearest_asks_where_only_about_ids_that_would_make_the_answer(
    tree_class: type[QuadTree]
) -> None:
    """``where`` is asked about few ids, not every entry of every node opened."""
    tree = tree_class(Box(0, 0, 1000, 1000))
    rng = random.Random(3)
    for entity in range(5000):
        x, y = rng.uniform(0, 1000), rng.uniform(0, 1000)
        tree.insert(entity, (x, y, x + 1, y + 1))
    asked: list[int] = []

    def where(entity: int) -> bool:
        asked.append(entity)
        return True

    found = tree.nearest(500, 500, 1, where=where)
    assert found == tree.nearest(500, 500) and len(asked) < 16


def test_segment_entry_is_shared_by_raycast(tree_class: type[QuadTree]) -> None:
    """raycast's fractions are segment_entry's, at the range's edge too."""
    tree = tree_class()
    tree.insert(1, (1e308, -1.0, MAX, 1.0))
    assert tree.raycast(-MAX, 0, MAX, 0) == [(1, segment_entry(tree[1], -MAX, 0, MAX, 0))]
