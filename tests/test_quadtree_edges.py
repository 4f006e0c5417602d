"""QuadTree at its edges (issue 17): the whole float range, exactly; ids taken as ``insert``
takes them, by every method; copies that stand alone; ``nearest`` on deep trees. Every test
runs against both classes (the ``tree_class`` fixture)."""

from __future__ import annotations

import copy
import math
import pickle
import random
import sys
from collections.abc import Callable
from typing import Any

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import Box, QuadTree, segment_entry
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


def test_copy_of_a_subclass_keeps_its_class_and_attributes(tree_class: type[QuadTree]) -> None:
    """copy.copy gives the subclass back with its own attributes, as copy.copy would."""

    class TaggedTree(tree_class):  # type: ignore[valid-type,misc]
        def __init__(self) -> None:
            super().__init__(Box(0, 0, 10, 10))
            self.tag = "level 1"

    tree = TaggedTree()
    tree.insert(1, (1.0, 1.0, 2.0, 2.0))
    twin = copy.copy(tree)
    assert type(twin) is TaggedTree and twin.tag == "level 1" and twin[1] == tree[1]
    twin.check()
