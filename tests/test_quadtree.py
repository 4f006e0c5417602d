"""QuadTree: a stateful model test against brute force, the edge cases, and the error paths."""

from __future__ import annotations

import ast
import functools
import math
import random
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from ecs_spatial import Box, NodeInfo, PyQuadTree, QuadTree, index, segment_entry

PACKAGE = Path(__file__).resolve().parent.parent / "ecs_spatial"
Pair = tuple[int, int]


# ---------------------------------------------------------------------------- strategies


def _box(x: float, y: float, w: float, h: float) -> Box:
    return Box(x, y, x + w, y + h)


# The worlds the issue names: uniform, clustered, identical positions (more entries at one
# point than a leaf holds), huge boxes, zero-size boxes, boxes far outside the bounds,
# negative coordinates. Integer grids make exact touching (on split lines too) common.
uniform = st.builds(
    _box,
    st.floats(-10, 110, allow_nan=False),
    st.floats(-10, 110, allow_nan=False),
    st.floats(0, 12),
    st.floats(0, 12),
)
grid = st.builds(
    _box, st.integers(-8, 108), st.integers(-8, 108), st.integers(0, 10), st.integers(0, 10)
)
clustered = st.builds(
    _box,
    st.sampled_from([12.5, 25.0, 50.0, 75.0]).flatmap(lambda c: st.floats(c - 2, c + 2)),
    st.sampled_from([25.0, 50.0, 87.5]).flatmap(lambda c: st.floats(c - 2, c + 2)),
    st.floats(0, 3),
    st.floats(0, 3),
)
identical = st.sampled_from([Box(50, 50, 50, 50), Box(25, 25, 25, 25), Box(30, 30, 31, 31)])
huge = st.builds(
    _box, st.floats(-200, 100), st.floats(-200, 100), st.floats(50, 400), st.floats(50, 400)
)
far = st.builds(
    _box,
    st.floats(-1e7, 1e7, allow_nan=False),
    st.floats(-1e7, 1e7, allow_nan=False),
    st.floats(0, 1e3),
    st.floats(0, 1e3),
)
#: Worlds without the float range's edges: for properties that hold only while the root can
#: grow the same way whatever the order of insertion.
ordinary = st.one_of(uniform, grid, clustered, identical, huge, far)

# The whole float range (issue 17): coordinates at the edges of the finite floats, where sums,
# widths and squares overflow; subnormals, where halves and squares underflow; ints past 2**53,
# which a float cannot hold exactly (Box rounds them, as the index must); boxes wider than half
# the range; and clusters of them, more than a leaf holds.
MAX = sys.float_info.max
TINY = 5e-324
edge = st.sampled_from([-MAX, -1.7e308, -1e308, -4.5e307, 0.0, 4.5e307, 1e308, 1.6e308, MAX])
near_edge = st.one_of(edge, st.floats(-MAX, MAX, allow_nan=False, allow_infinity=False))
subnormal = st.integers(-6, 6).map(lambda n: n * TINY)
past_2_53 = st.integers(-(2**53) - 9, -(2**53) + 9) | st.integers(2**53 - 9, 2**53 + 9)


def _sorted_box(a: float, b: float, c: float, d: float) -> Box:
    return Box(min(a, c), min(b, d), max(a, c), max(b, d))


extreme = st.one_of(
    st.builds(_sorted_box, near_edge, near_edge, near_edge, near_edge),
    st.builds(_sorted_box, subnormal, subnormal, subnormal, subnormal),
    st.builds(_sorted_box, past_2_53, past_2_53, past_2_53, past_2_53),
    st.builds(_sorted_box, edge, subnormal, edge, subnormal),
    st.sampled_from([
        Box(-MAX, -MAX, MAX, MAX),  # wider than the float range itself
        Box(1e308, 0, 1e308, 0),
        Box(-1.7e308, -1.7e308, -1.7e308, -1.7e308),
        Box(MAX, MAX, MAX, MAX),
        Box(TINY, TINY, TINY, TINY),
        Box(0, 0, TINY, TINY),
        Box(2**53, 2**53, 2**53 + 2, 2**53 + 2),
    ]),
)
boxes = st.one_of(uniform, grid, clustered, identical, huge, far, extreme)
#: Query coordinates: the ordinary world's, or anywhere in the float range.
coordinate = st.floats(-20, 120) | near_edge | subnormal


def as_given(box: Box, as_ints: bool) -> tuple[object, Box]:
    """What a caller passes for ``box``, and the box the index must then hold: with
    ``as_ints``, a box whose x-extent is whole numbers moves one unit right, its x given as
    ints (2**53 + 1 among them, which only rounds to a float), else a plain tuple."""
    if as_ints and box.min_x.is_integer() and box.max_x.is_integer():
        given = (int(box.min_x) + 1, box.min_y, int(box.max_x) + 1, box.max_y)
        return given, Box(*given)
    return (*box,), box


def brute_pairs(model: dict[int, Box]) -> list[Pair]:
    ids = sorted(model)
    return [
        (a, b) for i, a in enumerate(ids) for b in ids[i + 1 :] if model[a].intersects(model[b])
    ]


# ---------------------------------------------------------------------------- the model test


class QuadTreeMachine(RuleBasedStateMachine):
    """Random sequences of insert / move / remove and every query, against a dict model.

    After every step ``check()`` holds and every answer equals brute force over the model.
    The class under test is ``tree_class``: a subclass per implementation runs it (heapq's
    ``TestHeapPython`` and ``TestHeapC``), so both are held to the same model.
    """

    tree_class: ClassVar[type[QuadTree]]
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[int, Box] = {}
        self.tree = self.tree_class()
        self.next_id = 1

    @initialize(
        bounds=st.sampled_from([
            None, Box(0, 0, 100, 100), Box(0, 0, 0, 0), Box(-50, 20, 50, 30),
            Box(1e308, 1e308, 1.7e308, 1.7e308), Box(-MAX, -MAX, MAX, MAX), Box(0, 0, TINY, TINY),
            Box(2**53, 2**53, 2**53 + 2, 2**53 + 8),
        ]),
        threshold=st.sampled_from([1, 2, 4, 16]),
        max_depth=st.sampled_from([0, 1, 3, 8]),
    )
    def make_tree(self, bounds: Box | None, threshold: int, max_depth: int) -> None:
        self.tree = self.tree_class(bounds, threshold=threshold, max_depth=max_depth)

    @rule(target=ids, box=boxes, gap=st.integers(1, 3))
    def insert(self, box: Box, gap: int) -> int:
        entity = self.next_id
        self.next_id += gap  # ids need not be dense
        self.tree.insert(entity, box)
        self.model[entity] = box
        return entity

    @rule(target=ids, coords=st.tuples(past_2_53, past_2_53, past_2_53, past_2_53))
    def insert_ints(self, coords: tuple[int, int, int, int]) -> int:
        """Int coordinates a float cannot hold exactly are rounded on the way in, as ``Box``
        rounds them: the index answers for the floats, never the ints."""
        x0, y0, x1, y1 = coords
        raw = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
        entity = self.next_id
        self.next_id += 1
        self.tree.insert(entity, raw)
        self.model[entity] = Box(*raw)
        return entity

    @rule(
        target=ids,
        batch=st.lists(boxes, max_size=8),
        bad_at=st.none() | st.integers(0, 7),
        repeat=st.none() | st.integers(0, 7),
        clash=st.booleans(),
    )
    def insert_many(
        self, batch: list[Box], bad_at: int | None, repeat: int | None, clash: bool
    ) -> object:
        """A batch of new entities in one call. A bad box, an id listed twice or an id
        already present raises, naming it, and changes nothing."""
        entities = list(range(self.next_id, self.next_id + len(batch)))
        self.next_id += len(batch) + 1
        boxes_in: list[object] = [tuple(box) for box in batch]
        failing: tuple[type[Exception], str] | None = None
        if bad_at is not None and bad_at < len(batch):
            boxes_in[bad_at] = (0.0, math.inf, 1.0, 1.0)
            failing = (ValueError, f"entity {entities[bad_at]}: Box min_y is infinite")
        if repeat is not None and 0 < repeat < len(batch) and (bad_at is None or bad_at > repeat):
            entities[repeat] = entities[0]
            failing = (ValueError, f"entity {entities[0]} is listed twice")
        if clash and self.model and batch and (bad_at is None or bad_at > 0):
            entities[0] = min(self.model)
            failing = (ValueError, f"entity {entities[0]} is already in the index")
            if repeat is not None and 0 < repeat < len(batch):
                entities[repeat] = entities[0] + 10**9  # no longer a repeat of the clash
        if failing is not None:
            error, message = failing
            with pytest.raises(error, match=message):
                self.tree.insert_many(entities, boxes_in)  # type: ignore[arg-type]
            return multiple()
        self.tree.insert_many(entities, boxes_in)  # type: ignore[arg-type]
        self.model.update(zip(entities, batch, strict=True))
        return multiple(*entities)

    @rule(entity=ids, box=boxes, as_tuple=st.booleans(), as_ints=st.booleans())
    def move(self, entity: int, box: Box, as_tuple: bool, as_ints: bool) -> None:
        """A move to any box; as a plain tuple, or with the coordinates that are whole
        numbers passed as ints (2**53 + 1 among them: rounded as ``Box`` rounds it)."""
        given: object = box
        if as_ints or as_tuple:
            given, box = as_given(box, as_ints)
        if entity not in self.model:
            with pytest.raises(KeyError, match=str(entity)):
                self.tree.move(entity, given)  # type: ignore[arg-type]
            return
        self.tree.move(entity, given)  # type: ignore[arg-type]
        self.model[entity] = box

    @rule(entity=ids, dx=st.floats(-3, 3), dy=st.floats(-3, 3))
    def nudge(self, entity: int, dx: float, dy: float) -> None:
        """A small move, the common case of a frame (mostly the in-place fast path)."""
        if entity in self.model:
            b = self.model[entity]
            box = Box(b.min_x + dx, b.min_y + dy, b.max_x + dx, b.max_y + dy)
            self.tree.move(entity, box)
            self.model[entity] = box

    @rule(
        moves=st.lists(st.tuples(ids, boxes), max_size=6),
        bad_at=st.none() | st.integers(0, 5),
        atomic=st.booleans(),
        as_generator=st.booleans(),
        as_ints=st.booleans(),
    )
    def move_many(
        self,
        moves: list[tuple[int, Box]],
        bad_at: int | None,
        atomic: bool,
        as_generator: bool,
        as_ints: bool,
    ) -> None:
        """A batch of moves (an id may repeat: the last box wins). A batch with an unknown
        id or a bad box raises, naming it; atomic, it changes nothing however much of it
        had been applied; not atomic, the moves before the bad one stand."""
        given = [as_given(box, as_ints) for _, box in moves]
        moves = [(entity, box) for (entity, _), (_, box) in zip(moves, given, strict=True)]
        entities = [entity for entity, _ in moves]
        batch: list[object] = [raw for raw, _ in given]
        if bad_at is not None and bad_at < len(batch):
            batch[bad_at] = (1.0, 0.0, 0.0, float("nan"))
        boxes = (box for box in batch) if as_generator else batch
        failing = next(
            (i for i, e in enumerate(entities) if e not in self.model or i == bad_at), None
        )
        if failing is None:
            self.tree.move_many(entities, boxes, atomic=atomic)  # type: ignore[arg-type]
            self.model.update(moves)
            return
        error = KeyError if entities[failing] not in self.model else ValueError
        with pytest.raises(error, match=f"entity {entities[failing]}"):
            self.tree.move_many(entities, boxes, atomic=atomic)  # type: ignore[arg-type]
        if not atomic:
            self.model.update(moves[:failing])

    @rule(entity=consumes(ids))
    def remove(self, entity: int) -> None:
        if entity in self.model:
            self.tree.remove(entity)
            del self.model[entity]
        else:
            with pytest.raises(KeyError):
                self.tree.remove(entity)
            self.tree.discard(entity)  # silent

    @rule(box=boxes)
    def query(self, box: Box) -> None:
        expected = sorted(e for e, b in self.model.items() if b.intersects(box))
        assert sorted(self.tree.query(box)) == expected

    @rule(x=coordinate, y=coordinate)
    def query_point(self, x: float, y: float) -> None:
        expected = sorted(e for e, b in self.model.items() if b.contains_point(x, y))
        assert sorted(self.tree.query_point(x, y)) == expected

    @rule(x=coordinate, y=coordinate, r=st.floats(0, 60) | near_edge.map(abs) | subnormal.map(abs))
    def query_radius(self, x: float, y: float, r: float) -> None:
        expected = sorted(e for e, b in self.model.items() if b.distance_to_point(x, y) <= r)
        assert sorted(self.tree.query_radius(x, y, r)) == expected

    @rule(
        x=coordinate,
        y=coordinate,
        k=st.integers(1, 6),
        residue=st.none() | st.integers(0, 2),
        max_distance=st.none() | st.floats(0, 60) | near_edge.map(abs) | subnormal.map(abs),
    )
    def nearest(
        self, x: float, y: float, k: int, residue: int | None, max_distance: float | None
    ) -> None:
        """The k nearest, or the k nearest of the ids ``where`` accepts (a third of them),
        or of those within ``max_distance``, or both."""
        key = {
            e: (b.distance_to_point(x, y), e)
            for e, b in self.model.items()
            if (residue is None or e % 3 == residue)
            and (max_distance is None or b.distance_to_point(x, y) <= max_distance)
        }
        expected = sorted(key, key=key.__getitem__)[:k]
        options: dict[str, Any] = {}
        if residue is not None:
            options["where"] = lambda e: e % 3 == residue
        if max_distance is not None:
            options["max_distance"] = max_distance
        assert self.tree.nearest(x, y, k, **options) == expected

    @rule(x0=coordinate, y0=coordinate, x1=coordinate, y1=coordinate)
    def raycast(self, x0: float, y0: float, x1: float, y1: float) -> None:
        hits = []
        for e, b in self.model.items():
            t = segment_entry(b, x0, y0, x1, y1)
            if t is not None:
                hits.append((e, t))
        assert self.tree.raycast(x0, y0, x1, y1) == sorted(hits, key=lambda h: (h[1], h[0]))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def pairs_of_some(self, data: st.DataObject) -> None:
        ids = sorted(self.model)
        some = data.draw(st.sets(st.sampled_from(ids), max_size=4) | st.sets(st.sampled_from(ids)))
        one = data.draw(st.sampled_from(ids))
        expected = [p for p in brute_pairs(self.model) if p[0] in some or p[1] in some]
        assert self.tree.find_intersections_for(some) == expected
        others = sorted(
            e for e, b in self.model.items() if e != one and b.intersects(self.model[one])
        )
        assert sorted(self.tree.query_entity(one)) == others

    @invariant()
    def structure_holds(self) -> None:
        self.tree.check()
        assert len(self.tree) == len(self.model)
        assert set(self.tree) == set(self.model)
        for entity, box in self.model.items():
            assert self.tree[entity] == box
            assert isinstance(self.tree[entity], Box)
            assert all(type(v) is float for v in self.tree[entity]), self.tree[entity]

    @invariant()
    def all_pairs(self) -> None:
        assert self.tree.find_all_intersections() == brute_pairs(self.model)


class ReferenceMachine(QuadTreeMachine):
    tree_class = PyQuadTree


class CompiledMachine(QuadTreeMachine):
    tree_class = index.QuadTree


TestQuadTreeMachineReference = ReferenceMachine.TestCase
TestQuadTreeMachineReference.settings = budget(80, stateful_step_count=40)
TestQuadTreeMachineCompiled = pytest.mark.skipif(
    not index.NATIVE, reason=f"no compiled core: {index.REASON}"
)(CompiledMachine.TestCase)
TestQuadTreeMachineCompiled.settings = budget(80, stateful_step_count=40)


# ---------------------------------------------------------------------------- properties


@budget(40)
@given(st.lists(ordinary, min_size=0, max_size=60), st.randoms(use_true_random=False))
def test_pairs_and_shape_do_not_depend_on_insertion_order(
    tree_class: type[QuadTree], box_list: list[Box], rng: random.Random
) -> None:
    """The same set of boxes gives the same pairs and the same tree, whatever the order."""
    items = list(enumerate(box_list, start=1))
    first = tree_class(Box(-1e7, -1e7, 1e7, 1e7), threshold=2)
    for entity, box in items:
        first.insert(entity, box)
    rng.shuffle(items)
    second = tree_class(Box(-1e7, -1e7, 1e7, 1e7), threshold=2)
    for entity, box in items:
        second.insert(entity, box)
    assert first.find_all_intersections() == second.find_all_intersections()
    assert sorted(first.nodes()) == sorted(second.nodes())


@budget(30)
@given(st.lists(st.tuples(boxes, boxes), min_size=1, max_size=40))
def test_move_matches_remove_then_insert(
    tree_class: type[QuadTree], moves: list[tuple[Box, Box]]
) -> None:
    """An incremental move leaves exactly the tree a removal and a fresh insertion would."""
    moved = tree_class(Box(0, 0, 100, 100), threshold=2)
    rebuilt = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity, (before, _) in enumerate(moves):
        moved.insert(entity, before)
        rebuilt.insert(entity, before)
    for entity, (_, after) in enumerate(moves):
        moved.move(entity, after)
        rebuilt.remove(entity)
        rebuilt.insert(entity, after)
        moved.check()
    assert moved.find_all_intersections() == rebuilt.find_all_intersections()
    if moved.bounds == rebuilt.bounds:
        assert sorted(moved.nodes()) == sorted(rebuilt.nodes())


# ---------------------------------------------------------------------------- edge cases


def test_doctest_example(tree_class: type[QuadTree]) -> None:
    """Two boxes sharing a corner are one pair."""
    tree = tree_class(Box(0, 0, 100, 100))
    tree.insert(1, Box(10, 10, 20, 20))
    tree.insert(2, Box(20, 20, 30, 30))
    assert tree.find_all_intersections() == [(1, 2)]


def test_identical_points_beyond_threshold_stop_at_max_depth(tree_class: type[QuadTree]) -> None:
    """Many entries at one point split the tree down to max_depth and no further."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=4, max_depth=3)
    for entity in range(100):
        tree.insert(entity, Box(10, 10, 10, 10))
    tree.check()
    assert tree.depth() == 3
    assert len(tree.find_all_intersections()) == 100 * 99 // 2
    assert sorted(tree.query_point(10, 10)) == list(range(100))
    for entity in range(100):
        tree.remove(entity)
        tree.check()
    assert tree.depth() == 0


def test_points_on_the_centre_stay_at_the_root(tree_class: type[QuadTree]) -> None:
    """Boxes touching the root's split lines stay in the root; pairs across them are found."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=1)
    tree.insert(1, Box(40, 40, 50, 50))  # touches both split lines from below-left
    tree.insert(2, Box(50, 50, 60, 60))  # touches them from above-right
    tree.insert(3, Box(10, 10, 20, 20))
    tree.insert(4, Box(70, 10, 80, 20))
    tree.check()
    assert tree.find_all_intersections() == [(1, 2)]


def test_touching_boxes_sliding_onto_a_split_line_are_paired(tree_class: type[QuadTree]) -> None:
    """A box moved (not inserted) onto a split line still meets its neighbour across it."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=1)
    tree.insert(1, Box(40, 10, 45, 15))
    tree.insert(2, Box(60, 10, 65, 15))
    tree.insert(3, Box(10, 80, 15, 85))
    tree.move(1, Box(45, 10, 50, 15))  # right edge now on x = 50
    tree.move(2, Box(50, 10, 55, 15))  # left edge on x = 50
    tree.check()
    assert tree.find_all_intersections() == [(1, 2)]


def test_entities_outside_the_bounds_grow_the_root(tree_class: type[QuadTree]) -> None:
    """Nothing is refused for its position: the root doubles toward far boxes."""
    tree = tree_class(Box(0, 0, 100, 100))
    tree.insert(1, Box(5, 5, 6, 6))
    tree.insert(2, Box(1e9, -1e9, 1e9 + 1, -1e9 + 1))
    tree.check()
    assert tree.bounds is not None and tree.bounds.contains(Box(1e9, -1e9, 1e9 + 1, -1e9 + 1))
    assert tree.query(Box(1e9, -1e9, 1e9, -1e9)) == [2]
    assert tree.nearest(1e9, -1e9) == [2]
    tree.move(1, Box(-5e8, 5e8, -5e8, 5e8))
    tree.check()
    assert tree.query_point(-5e8, 5e8) == [1]


def test_tree_without_bounds_indexes_everything(tree_class: type[QuadTree]) -> None:
    """A tree made without bounds starts around its first box and grows as needed."""
    tree = tree_class(threshold=2)
    assert tree.bounds is None
    rng = random.Random(7)
    model = {}
    for entity in range(200):
        x, y = rng.uniform(-1e4, 1e4), rng.uniform(-1e4, 1e4)
        model[entity] = Box(x, y, x + rng.uniform(0, 50), y + rng.uniform(0, 50))
        tree.insert(entity, model[entity])
    tree.check()
    assert tree.find_all_intersections() == brute_pairs(model)


def test_extreme_coordinates_stay_at_the_root_and_are_found(tree_class: type[QuadTree]) -> None:
    """Boxes near the largest floats, beyond where the root can grow, are still found."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=1)
    tree.insert(1, Box(1e308, 1e308, 1.5e308, 1.5e308))
    tree.insert(2, Box(-1.7e308, 0, -1.6e308, 1))
    tree.insert(3, Box(10, 10, 20, 20))
    tree.insert(4, Box(1.2e308, 1.2e308, 1.3e308, 1.3e308))
    tree.check()
    assert tree.find_all_intersections() == [(1, 4)]
    assert sorted(tree.query(Box(-1.7e308, -1.7e308, 1.7e308, 1.7e308))) == [1, 2, 3, 4]
    # Squared distances overflow to inf this far out, in the tree as in the definition
    # (Box.distance_to_point): the tree agrees with the definition, ties broken by id.
    boxes = {e: tree[e] for e in tree}
    by_distance = sorted(boxes, key=lambda e: (boxes[e].distance_to_point(1.6e308, 1.6e308), e))
    assert tree.nearest(1.6e308, 1.6e308, 4) == by_distance
    assert tree.nearest(1.4e308, 1.4e308, 1) == [1]
    tree.move(3, Box(1.4e308, 1.4e308, 1.4e308, 1.4e308))
    tree.check()
    assert tree.find_all_intersections() == [(1, 3), (1, 4)]


def test_nodes_reports_the_tree(tree_class: type[QuadTree]) -> None:
    """nodes() yields the root first, depths below it, and every entry once."""
    tree = tree_class(Box(0, 0, 64, 64), threshold=2)
    for entity in range(20):
        tree.insert(entity, Box(entity * 3, entity * 3, entity * 3 + 1, entity * 3 + 1))
    infos = list(tree.nodes())
    assert infos[0] == NodeInfo(Box(0, 0, 64, 64), 0, infos[0].entries)
    assert sum(info.entries for info in infos) == 20
    assert max(info.depth for info in infos) == tree.depth() > 0


def test_query_covering_whole_subtrees_reports_each_once(tree_class: type[QuadTree]) -> None:
    """A query box that contains whole nodes reports their entries without duplicates."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(50):
        tree.insert(entity, Box(entity * 2, entity, entity * 2 + 1, entity + 1))
    found = tree.query(Box(-1, -1, 101, 101))
    assert sorted(found) == list(range(50))


def test_query_radius_keeps_boxes_one_float_step_past_the_circle_box(
    tree_class: type[QuadTree],
) -> None:
    """x + r is rounded: a box one ulp beyond it can still be within r by the definition."""
    x, r = -999.5328041548872, 17268.530820213113
    right = math.nextafter(x + r, math.inf)
    left = math.nextafter(x - r, -math.inf)
    tree = tree_class()
    tree.insert(1, Box(right, 0, right + 1, 1))
    tree.insert(2, Box(left - 1, 0, left, 1))
    expected = sorted(e for e in tree if tree[e].distance_to_point(x, 0.5) <= r)
    assert 1 in expected  # within r by the definition, though past the rounded x + r
    assert sorted(tree.query_radius(x, 0.5, r)) == expected


@budget(200)
@given(
    st.floats(-1e4, 1e4),
    st.floats(-1e4, 1e4),
    st.floats(0, 2e4),
    st.integers(-3, 3),
    st.sampled_from(["right", "left", "top", "bottom"]),
)
def test_query_radius_agrees_with_the_definition_at_the_boundary(
    tree_class: type[QuadTree], x: float, y: float, r: float, steps: int, side: str
) -> None:
    """Boxes placed within a few float steps of the circle's box edge are found exactly when
    Box.distance_to_point says they are within r."""
    edge = {"right": x + r, "left": x - r, "top": y + r, "bottom": y - r}[side]
    direction = math.inf if steps >= 0 else -math.inf
    for _ in range(abs(steps)):
        edge = math.nextafter(edge, direction)
    if side == "right":
        box = Box(edge, y, edge + 1, y)
    elif side == "left":
        box = Box(edge - 1, y, edge, y)
    elif side == "top":
        box = Box(x, edge, x, edge + 1)
    else:
        box = Box(x, edge - 1, x, edge)
    tree = tree_class(Box(-1, -1, 1, 1), threshold=1)
    tree.insert(1, box)
    tree.insert(2, Box(0, 0, 0, 0))
    expected = sorted(e for e in tree if tree[e].distance_to_point(x, y) <= r)
    assert sorted(tree.query_radius(x, y, r)) == expected


def test_nearest_breaks_ties_by_id_and_returns_fewer_when_small(
    tree_class: type[QuadTree],
) -> None:
    """Equal distances are ordered by id; k beyond len returns everything."""
    tree = tree_class(Box(0, 0, 10, 10))
    for entity in (5, 3, 9):
        tree.insert(entity, Box(4, 4, 6, 6))
    tree.insert(1, Box(9, 9, 10, 10))
    assert tree.nearest(5, 5, 2) == [3, 5]
    assert tree.nearest(5, 5, 10) == [3, 5, 9, 1]


def test_nearest_where_skips_refused_ids_however_near(tree_class: type[QuadTree]) -> None:
    """``where`` picks the k nearest among the ids it accepts, past nearer refused ones
    that would fill the plain answer, across leaves (threshold 2 splits the tree)."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(1, 21):  # 1..20 along the diagonal, nearest to (0, 0) first
        tree.insert(entity, Box(entity * 4, entity * 4, entity * 4 + 1, entity * 4 + 1))
    tree.check()
    assert tree.nearest(0, 0, 3) == [1, 2, 3]
    assert tree.nearest(0, 0, 3, where=lambda e: e >= 17) == [17, 18, 19]
    assert tree.nearest(0, 0, 5, where=lambda e: e % 10 == 0) == [10, 20]
    assert tree.nearest(0, 0, 1, where=lambda e: False) == []


def test_nearest_max_distance_is_query_radius_s_rule(tree_class: type[QuadTree]) -> None:
    """``max_distance`` keeps what ``query_radius`` would, at the boundary too, in order."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(1, 21):
        tree.insert(entity, Box(entity * 4, entity * 4, entity * 4 + 1, entity * 4 + 1))
    edge = Box(12, 12, 13, 13).distance_to_point(0, 0)  # entity 3's distance, exactly
    assert tree.nearest(0, 0, 20, max_distance=edge) == [1, 2, 3]
    assert sorted(tree.query_radius(0, 0, edge)) == [1, 2, 3]
    assert tree.nearest(0, 0, 2, max_distance=edge) == [1, 2]
    assert tree.nearest(0, 0, 5, max_distance=1.0) == []
    assert tree.nearest(4.5, 4.5, 1, max_distance=0.0) == [1]  # inside: distance 0
    assert tree.nearest(0, 0, 2, max_distance=edge, where=lambda e: e > 1) == [2, 3]


def test_raycast_orders_hits_by_entry_fraction(tree_class: type[QuadTree]) -> None:
    """Hits come sorted by where the segment enters them; ties by id."""
    tree = tree_class(Box(0, 0, 100, 100))
    tree.insert(7, Box(50, 0, 60, 10))
    tree.insert(2, Box(20, 0, 30, 10))
    tree.insert(4, Box(20, 0, 30, 10))
    tree.insert(9, Box(80, 50, 90, 60))
    assert tree.raycast(0, 5, 100, 5) == [(2, 0.2), (4, 0.2), (7, 0.5)]


def test_clear_empties_and_keeps_the_bounds(tree_class: type[QuadTree]) -> None:
    """clear() removes everything and returns to the original bounds."""
    tree = tree_class(Box(0, 0, 10, 10))
    for entity in range(40):
        tree.insert(entity, Box(entity, 0, entity + 1, 1))
    tree.clear()
    tree.check()
    assert len(tree) == 0 and tree.bounds == Box(0, 0, 10, 10)
    assert tree.find_all_intersections() == []


def test_empty_tree_answers_empty(tree_class: type[QuadTree]) -> None:
    """Queries on an empty tree without bounds return nothing and raise nothing."""
    tree = tree_class()
    assert tree.query(Box(0, 0, 1, 1)) == []
    assert tree.query_radius(0, 0, 5) == []
    assert tree.nearest(0, 0, 3) == []
    assert tree.raycast(0, 0, 1, 1) == []
    assert tree.find_all_intersections() == []
    assert list(tree.nodes()) == []
    tree.check()


@budget(40)
@given(
    before=st.lists(boxes, max_size=30),
    batch=st.lists(boxes, max_size=60),
    threshold=st.sampled_from([1, 2, 4, 16]),
    max_depth=st.sampled_from([0, 2, 8]),
)
def test_insert_many_builds_the_tree_the_inserts_build(
    tree_class: type[QuadTree],
    before: list[Box], batch: list[Box], threshold: int, max_depth: int
) -> None:
    """A batch lands in exactly the tree its inserts would give one by one, into an empty
    tree or one that holds entries already (its leaves splitting under the batch). Where
    no box lies outside the bounds, even the nodes are the same; where some do, the root
    grows toward all of them at once, so only its extent may differ."""
    inside = all(Box(-1e7, -1e7, 1e7, 1e7).contains(b) for b in before + batch)
    bounds = Box(-1e7, -1e7, 1e7, 1e7) if inside else Box(0, 0, 100, 100)
    one_by_one = tree_class(bounds, threshold=threshold, max_depth=max_depth)
    bulk = tree_class(bounds, threshold=threshold, max_depth=max_depth)
    for entity, box in enumerate(before):
        one_by_one.insert(entity, box)
        bulk.insert(entity, box)
    start = len(before)
    for entity, box in enumerate(batch, start=start):
        one_by_one.insert(entity, box)
    bulk.insert_many(range(start, start + len(batch)), batch)
    bulk.check()
    model = dict(enumerate(before + batch))
    assert sorted((e, bulk[e]) for e in bulk) == sorted(model.items())
    assert bulk.find_all_intersections() == brute_pairs(model)
    if inside:
        assert sorted(bulk.nodes()) == sorted(one_by_one.nodes())


def test_insert_many_keeps_boxes_beyond_the_roots_reach_in_the_root(
    tree_class: type[QuadTree],
) -> None:
    """A root made around a tiny first box cannot double far enough to reach (50, 50): that
    box stays in the root's own entries, and when a later batch overflows the root, the
    root splits around it (found by the model test)."""
    tree = tree_class(threshold=1, max_depth=0)
    tree.insert(1, Box(0, 0, 0, 1e-76))
    tree.insert_many([2], [Box(50, 50, 50, 50)])
    tree.check()
    tree.insert_many([3, 4, 5], [Box(0, 0, 0, 0), Box(1e-77, 0, 1e-77, 0), Box(50, 50, 51, 51)])
    tree.check()
    model = {e: tree[e] for e in tree}
    assert sorted(model) == [1, 2, 3, 4, 5]
    assert tree.find_all_intersections() == brute_pairs(model) == [(1, 3), (2, 5)]


def test_insert_many_into_a_tree_without_bounds_grows_once_around_everything(
    tree_class: type[QuadTree],
) -> None:
    """Without bounds, the root is made around the first box and doubled toward the rest
    of the batch; far boxes, huge ones and one past the farthest the root can grow are all
    indexed and found."""
    tree = tree_class()
    batch = {1: Box(0, 0, 1, 1), 2: Box(-5000, 30, -4990, 40), 3: Box(1e6, 1e6, 1e6 + 5, 1e6),
             4: Box(-1e308, -1e308, 1e308, 1e308), 5: Box(0.5, 0.5, 0.5, 0.5)}
    tree.insert_many(batch, batch.values())
    tree.check()
    assert sorted(tree) == [1, 2, 3, 4, 5]
    assert tree.find_all_intersections() == brute_pairs(batch)
    assert sorted(tree.query(Box(-1, -1, 2, 2))) == [1, 4, 5]
    tree.insert_many([], [])  # an empty batch changes nothing
    assert len(tree) == 5


# ---------------------------------------------------------------------------- errors


def _snapshot(tree: QuadTree) -> tuple[object, ...]:
    return (
        sorted((e, tree[e]) for e in tree),
        tree.find_all_intersections(),
        sorted(tree.nodes()),
    )


@pytest.fixture
def populated(tree_class: type[QuadTree]) -> QuadTree:
    """A tree of the class under test, 29 entities along a diagonal, split (threshold 2)."""
    return _populated(tree_class)


def _populated(tree_class: type[QuadTree]) -> QuadTree:
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    for entity in range(1, 30):
        tree.insert(entity, Box(entity * 3, entity * 2, entity * 3 + 4, entity * 2 + 4))
    return tree


@pytest.mark.parametrize(
    ("box", "error", "message"),
    [
        ((float("nan"), 0, 1, 1), ValueError, r"entity 7: Box min_x is NaN"),
        ((0, 0, float("inf"), 1), ValueError, r"entity 7: Box max_x is infinite"),
        ((5, 0, 1, 1), ValueError, r"entity 7: Box min_x=5 is greater than max_x=1"),
        ((0, 0, 1), TypeError, r"entity 7: expected a box"),
        ("abcd", TypeError, r"entity 7: Box min_x must be a real number"),
        (None, TypeError, r"entity 7: expected a box"),
    ],
)
def test_bad_boxes_name_entity_and_value_and_change_nothing(
    populated: QuadTree, box: object, error: type[Exception], message: str
) -> None:
    """A bad box in move or insert raises a clear error and leaves the tree as it was."""
    before = _snapshot(populated)
    with pytest.raises(error, match=message):
        populated.move(7, box)  # type: ignore[arg-type]
    with pytest.raises(error, match=message.replace("entity 7", "entity 700")):
        populated.insert(700, box)  # type: ignore[arg-type]
    assert _snapshot(populated) == before
    populated.check()


@given(
    moves=st.lists(
        st.tuples(st.integers(1, 29), st.one_of(uniform, huge, far, extreme)), max_size=40
    )
)
def test_move_many_is_move_in_order(
    tree_class: type[QuadTree], moves: list[tuple[int, Box]]
) -> None:
    """A batch ends in exactly the tree its moves give one by one: climbs, sinks, splits,
    merges and root growth included, an id listed twice ending with its last box."""
    one_by_one = _populated(tree_class)
    for entity, box in moves:
        one_by_one.move(entity, box)
    batched = _populated(tree_class)
    batched.move_many([e for e, _ in moves], [(*b,) for _, b in moves])
    batched.check()
    assert _snapshot(batched) == _snapshot(one_by_one)


@pytest.mark.parametrize(
    ("method", "entities", "boxes", "error", "message"),
    [
        ("move_many", [1, 2, 999, 3], None, KeyError, r"entity 999 is not in the index"),
        ("move_many", [1, 2, 3, 4], [None, None, (5, 0, 1, 1), None], ValueError,
         r"entity 3: Box min_x=5 is greater than max_x=1"),
        ("move_many", [1, 2, 3, 4], [None, None, (0, 0, 1), None], TypeError,
         r"entity 3: expected a box"),
        ("move_many", [1, 2, 3], [None] * 4, ValueError, r"entities and boxes differ in length"),
        ("move_many", [1, 2, 3, 4], [None] * 3, ValueError,
         r"entities and boxes differ in length"),
        ("insert_many", [100, 101, 3], None, ValueError, r"entity 3 is already in the index"),
        ("insert_many", [100, 101, 100], None, ValueError, r"entity 100 is listed twice"),
        ("insert_many", [100, 101, 102], [None, (0, 0, math.nan, 1), None], ValueError,
         r"entity 101: Box max_x is NaN"),
        ("insert_many", [100, 101], [None, (0, 0, 1)], TypeError, r"entity 101: expected a box"),
        ("insert_many", [100, 101], [None], ValueError,
         r"insert_many: entities and boxes differ in length"),
        ("insert_many", [100, "101", 102], None, TypeError,
         r"entity ids are ints, got '101' \(str\)"),
    ],
)
def test_batch_errors_leave_the_tree_as_it_was(
    populated: QuadTree,
    method: str,
    entities: list[int],
    boxes: list[object] | None,
    error: type[Exception],
    message: str,
) -> None:
    """A bad batch names the entity and the value and leaves the tree as it was: though
    the moves before the bad one had split, merged and grown the tree (``None`` below
    stands for a box far outside the root, which doubles it), and before any insert."""
    far_away = (500.0, 500.0, 501.0, 501.0)
    batch = [far_away if b is None else b for b in boxes or [None] * len(entities)]
    before = _snapshot(populated)
    with pytest.raises(error, match=message):
        getattr(populated, method)(entities, batch)
    populated.check()
    assert _snapshot(populated) == before


def test_move_many_not_atomic_keeps_the_moves_before_a_bad_one(populated: QuadTree) -> None:
    """``atomic=False``: the moves before the bad one stand, the rest are not made, and the
    error says so."""
    boxes_before = {e: populated[e] for e in populated}
    far_away = (500.0, 500.0, 501.0, 501.0)
    with pytest.raises(ValueError, match=r"entity 3: Box min_y is NaN .*moves before it stand"):
        populated.move_many([1, 2, 3, 4], [far_away, far_away, (0, math.nan, 1, 1), far_away],
                            atomic=False)
    populated.check()
    assert populated[1] == populated[2] == far_away
    assert populated[3] == boxes_before[3] and populated[4] == boxes_before[4]
    with pytest.raises(KeyError, match=r"entity 999 is not in the index \(move_many stopped"):
        populated.move_many([5, 999], [far_away, far_away], atomic=False)
    assert populated[5] == far_away


def test_unknown_and_duplicate_ids(populated: QuadTree) -> None:
    """Unknown ids raise KeyError naming them; duplicates ValueError; nothing changes."""
    before = _snapshot(populated)
    with pytest.raises(KeyError, match="entity 999 is not in the index"):
        populated.move(999, Box(0, 0, 1, 1))
    with pytest.raises(KeyError, match="999"):
        populated.remove(999)
    with pytest.raises(KeyError, match="999"):
        populated[999]
    with pytest.raises(KeyError, match="999"):
        populated.query_entity(999)
    with pytest.raises(ValueError, match="entity 3 is already in the index"):
        populated.insert(3, Box(0, 0, 1, 1))
    populated.discard(999)
    assert populated.get(999) is None
    assert _snapshot(populated) == before


class _IntLike:
    """An integer-like id, as a numpy integer is: it has ``__index__``, and is no int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


@pytest.mark.parametrize(
    ("entity", "message"),
    [
        ("7", r"entity ids are ints, got '7' \(str\)"),
        (7.0, r"entity ids are ints, got 7.0 \(float\)"),
        (True, r"entity ids are ints, got True \(bool\)"),
        (None, r"entity ids are ints, got None \(NoneType\)"),
    ],
)
def test_ids_that_are_not_ints_are_refused(
    populated: QuadTree, entity: object, message: str
) -> None:
    """An id that is not an int is refused when it comes in, naming it, the tree as it
    was: ids are sorted into pairs, so one str among ints would break the pair search."""
    before = _snapshot(populated)
    with pytest.raises(TypeError, match=message):
        populated.insert(entity, Box(0, 0, 1, 1))  # type: ignore[arg-type]
    populated.check()
    assert _snapshot(populated) == before


def test_integer_like_ids_are_stored_as_ints(populated: QuadTree) -> None:
    """An integer-like id (``__index__``, as numpy integers have) is stored as its int."""
    populated.insert(_IntLike(100), Box(3, 2, 3, 2))  # type: ignore[arg-type]
    populated.insert_many([_IntLike(101)], [Box(3, 2, 3, 2)])  # type: ignore[list-item]
    assert all(type(e) is int for e in populated)
    assert populated[100] == populated[101] == Box(3, 2, 3, 2)
    assert (1, 100) in populated.find_all_intersections()
    assert (100, 101) in populated.find_all_intersections()
    populated.check()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.query_radius(0, 0, -1), r"radius must be finite and >= 0, got -1"),
        (lambda t: t.query_radius(0, 0, float("nan")), r"radius .* got nan"),
        (lambda t: t.nearest(0, 0, 0), r"k must be an int >= 1, got 0"),
        (lambda t: t.nearest(0, 0, 1.5), r"k must be an int >= 1, got 1.5"),
        (lambda t: t.nearest(0, 0, max_distance=-1), r"max_distance must be >= 0, got -1"),
        (lambda t: t.nearest(0, 0, max_distance=math.nan), r"max_distance .* got nan"),
        (lambda t: t.query_point(float("nan"), 0), r"query point \(nan, 0\)"),
        (lambda t: t.raycast(0, 0, float("inf"), 0), r"query point \(inf, 0\)"),
        (lambda t: t.query((0, 0, -1, 1)), r"min_x=0 is greater than max_x=-1"),
    ],
)
def test_bad_query_arguments_raise_value_error(
    populated: QuadTree, call: object, message: str
) -> None:
    """Negative or NaN radii, k < 1 and non-finite points are refused by name."""
    with pytest.raises(ValueError, match=message):
        call(populated)  # type: ignore[operator]


@pytest.mark.parametrize(
    "kwargs",
    [{"threshold": 0}, {"threshold": 2.5}, {"max_depth": -1}, {"max_depth": True}],
)
def test_bad_construction_is_refused(
    tree_class: type[QuadTree], kwargs: dict[str, object]
) -> None:
    """threshold must be an int >= 1 and max_depth an int >= 0."""
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        tree_class(**kwargs)  # type: ignore[arg-type]


def test_index_modules_import_only_the_standard_library() -> None:
    """The index's modules stand alone: no esper, nothing outside the standard library, and
    each imports only index modules named before it here (dependencies point one way), or
    its own compiled twin."""
    line = (
        "geometry.py", "_records.py", "_growth.py", "_snapshots.py", "_wrap.py", "_tree_storage.py",
        "_tree_check.py", "_tree_state.py", "_tree_nodes.py", "_tree_updates.py",
        "_tree_queries.py", "_tree_nearest.py", "_tree_casts.py", "_tree_pairs.py",
        "quadtree.py", "_grid.py",
    )
    for position, name in enumerate(line):
        tree = ast.parse((PACKAGE / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: only index modules earlier in the line
                    targets = [node.module] if node.module else [a.name for a in node.names]
                    for target in targets:  # or its own compiled twin (geometry: _cgeometry)
                        if target == f"_c{name.removesuffix('.py')}":
                            continue
                        assert f"{target}.py" in line[:position], (name, target)
                    continue
                roots = [(node.module or "").split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in sys.stdlib_module_names or root == "__future__", (name, root)


def test_the_reference_is_composed_of_its_units() -> None:
    """``quadtree.QuadTree`` is its units' mixins and nothing more: each ``_tree_*`` module
    holds one, of empty ``__slots__`` (an instance has the fields ``_Storage`` declares and no
    ``__dict__``), whose methods the class defines nowhere else; a unit imports no other
    unit's mixin (only ``_tree_storage``'s plain constants, and its ``TreeBase`` for the type
    checker); no module of the index is over 800 lines, and no function over 120."""
    units = sorted(path for path in PACKAGE.glob("_tree_*.py"))
    mixins = PyQuadTree.__mro__[1:-1]
    assert sorted(m.__module__.rsplit(".", 1)[1] + ".py" for m in mixins) == [
        path.name for path in units]
    # Nothing of the class's own but what a unit defines (a test that wraps a method and puts
    # it back by assignment, as test_native_index does, leaves the unit's function here).
    own = {name: member for name, member in vars(PyQuadTree).items() if name[:2] != "__"}
    assert all(any(vars(m).get(name) is member for m in mixins) for name, member in own.items())
    seen: dict[str, str] = {}
    for mixin in mixins:
        assert vars(mixin)["__slots__"] == () or mixin.__name__ == "_Storage", mixin
        for name, member in vars(mixin).items():
            if callable(member) or isinstance(member, property):
                assert name not in seen, (name, seen.get(name), mixin)
                seen[name] = mixin.__name__
    assert not hasattr(PyQuadTree(), "__dict__")
    for path in [*units, PACKAGE / "quadtree.py"]:
        text = path.read_text()
        assert text.count("\n") <= 800, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    "_tree_") and path.name != "quadtree.py":
                imported = [a.name for a in node.names]
                assert node.module == "_tree_storage", (path.name, node.module)
                assert not {m.__name__ for m in mixins} & set(imported), (path.name, imported)
            if isinstance(node, ast.FunctionDef):
                assert node.end_lineno is not None
                assert node.end_lineno - node.lineno < 125, (path.name, node.name)


# ---------------------------------------------------------------------------- stress seeds


def test_stress_seeds(tree_class: type[QuadTree]) -> None:
    """The seeded stress script's histories agree with brute force."""
    import stress_quadtree

    for seed in range(120):
        stress_quadtree.run_seed(seed, steps=80, tree_class=tree_class)


def test_stress_seeds_with_every_node_read_through_its_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reference's own layout: its histories agree with brute force with every internal
    node read through its sorted snapshot (``_snapshots.SNAP_MIN`` 1, not the shipped 12). The
    compiled core keeps no snapshots: nothing to patch there."""
    import stress_quadtree

    from ecs_spatial import _snapshots

    monkeypatch.setattr(_snapshots, "SNAP_MIN", 1)
    for seed in range(60):  # half test_stress_seeds' histories: a variant of one layout
        stress_quadtree.run_seed(seed, steps=80, tree_class=PyQuadTree)


# -- buffers: both classes take them, with the same answers and errors -------------------------


def random_box(rng: random.Random) -> tuple[float, float, float, float]:
    x, y = rng.uniform(0.0, 100.0), rng.uniform(0.0, 100.0)
    return (x, y, x + rng.uniform(0.0, 8.0), y + rng.uniform(0.0, 8.0))


def _flat(boxes: list[tuple[float, float, float, float]]) -> array[float]:
    return array("d", [c for box in boxes for c in box])


def _outcome(call: Callable[[], object]) -> object:
    try:
        return ("ok", call())
    except Exception as error:  # the error is the answer here
        return (type(error).__name__, str(error))


def test_batch_calls_take_buffers_as_the_lists_they_stand_for(tree_class: type[QuadTree]) -> None:
    rng = random.Random(5)
    ids = list(range(1, 301))
    boxes = [random_box(rng) for _ in ids]
    by_lists, by_buffers, by_rows = (tree_class(Box(0, 0, 100, 100)) for _ in range(3))
    by_lists.insert_many(ids, boxes)
    by_buffers.insert_many(array("q", ids), _flat(boxes))
    rows = memoryview(_flat(boxes)).cast("B").cast("d", shape=[len(boxes), 4])
    by_rows.insert_many(array("q", ids), rows)
    moved = [random_box(rng) for _ in ids]
    by_lists.move_many(ids, moved)
    by_buffers.move_many(array("q", ids), _flat(moved), atomic=False)
    by_rows.move_many(array("l", ids), memoryview(_flat(moved)).cast("B").cast("d", shape=[300, 4]))
    for tree in (by_buffers, by_rows):
        tree.check()
        assert list(tree.nodes()) == list(by_lists.nodes())
        assert tree.find_all_intersections() == by_lists.find_all_intersections()
    pairs = by_lists.find_all_intersections()
    flat_pairs = by_lists.find_all_intersections_array()
    assert flat_pairs.typecode == "q"
    assert list(flat_pairs) == [e for pair in pairs for e in pair]


def test_bad_buffers_are_refused_by_name_and_change_nothing(tree_class: type[QuadTree]) -> None:
    tree = tree_class(Box(0, 0, 100, 100))
    tree.insert_many(array("q", [1, 2]), array("d", [0, 0, 1, 1, 5, 5, 6, 6]))
    before = list(tree.nodes()), tree.find_all_intersections()
    with pytest.raises(ValueError, match=r"move_many: a buffer of boxes holds 4 floats per box"):
        tree.move_many(array("q", [1, 2]), array("d", [0.0] * 7))
    with pytest.raises(ValueError, match=r"insert_many: a buffer of ids is flat"):
        tree.insert_many(memoryview(array("q", [3, 4])).cast("B").cast("q", shape=[1, 2]),
                         array("d", [0, 0, 1, 1, 0, 0, 1, 1]))
    with pytest.raises(ValueError, match="entity 2"):  # NaN in the second box: undone
        tree.move_many(array("q", [1, 2]), array("d", [2, 2, 3, 3, math.nan, 0, 1, 1]))
    with pytest.raises(KeyError, match="9"):
        tree.move_many(array("q", [1, 9]), array("d", [2, 2, 3, 3, 0, 0, 1, 1]))
    with pytest.raises(ValueError, match="differ in length"):
        tree.insert_many(array("q", [3, 4, 5]), array("d", [0, 0, 1, 1, 0, 0, 1, 1]))
    with pytest.raises(ValueError, match="already"):
        tree.insert_many(array("q", [3, 1]), array("d", [0, 0, 1, 1, 0, 0, 1, 1]))
    tree.check()
    assert (list(tree.nodes()), tree.find_all_intersections()) == before


def test_buffer_errors_are_the_same_in_both_classes() -> None:
    """The compiled core reads buffers in place, the reference through lists: every
    outcome, the error's type and text included, is the same (when the core is built)."""
    from ecs_spatial import NATIVE

    Compiled = QuadTree
    if not NATIVE:
        pytest.skip("the compiled core is not in use")
    cases: list[tuple[str, object, object]] = [
        ("move_many", array("q", [1, 2]), array("d", [0.0] * 7)),
        ("move_many", array("q", [1, 2]), array("d", [2, 2, 3, 3, math.nan, 0, 1, 1])),
        ("move_many", array("q", [1, 2]), array("d", [2, 2, 3, 3, 1, 0, 0, 1])),
        ("move_many", array("q", [1, 9]), array("d", [2, 2, 3, 3, 0, 0, 1, 1])),
        ("move_many", array("q", [1]), array("d", [2, 2, 3, 3, 0, 0, 1, 1])),
        ("move_many", array("q", [1, 2]), array("f", [0.0] * 8)),  # not doubles: iterated
        ("move_many", array("i", [1, 2]), array("d", [0.0] * 8)),  # not 8-byte ids: iterated
        ("insert_many", array("q", [3, 3]), array("d", [0, 0, 1, 1, 0, 0, 1, 1])),
        ("insert_many", array("q", [3, 4, 5]), array("d", [0, 0, 1, 1, 0, 0, 1, 1])),
        ("insert_many", array("q", [3]), array("d", [0, 0, math.inf, 1])),
        ("insert_many", array("q", [2**62]), array("d", [1e308, 0, 1.7e308, 1])),
    ]
    for method, ids, boxes in cases:
        outcomes = []
        for cls in (PyQuadTree, Compiled):
            tree = cls(Box(0, 0, 100, 100))
            tree.insert_many([1, 2], [(0, 0, 1, 1), (5, 5, 6, 6)])
            outcomes.append(
                (_outcome(functools.partial(getattr(tree, method), ids, boxes)),
                 list(tree.nodes()), tree.find_all_intersections())
            )
        assert outcomes[0] == outcomes[1], (method, ids, boxes)


def test_records_are_what_insert_many_and_move_many_take(tree_class: type[QuadTree]) -> None:
    """insert_records and move_records: the batch calls for callers that keep their boxes as
    (min_x, min_y, max_x, max_y, entity) records (the SpatialProcessor)."""
    rng = random.Random(8)
    ids = list(range(1, 201))
    boxes = [random_box(rng) for _ in ids]
    by_records, by_many = tree_class(Box(0, 0, 100, 100)), tree_class(Box(0, 0, 100, 100))
    by_records.insert_records([(*box, e) for e, box in zip(ids, boxes, strict=True)])
    by_many.insert_many(ids, boxes)
    moved = [random_box(rng) for _ in ids]
    by_records.move_records((*box, e) for e, box in zip(ids, moved, strict=True))
    by_many.move_many(ids, moved)
    by_records.check()
    assert list(by_records.nodes()) == list(by_many.nodes())
    assert by_records.find_all_intersections() == by_many.find_all_intersections()


RECORD_CASES: list[tuple[str, list[object]]] = [
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, 3), [0.0, 0.0, 1.0, 1.0, 4]]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0)]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, 3), (2.0, 2.0, math.nan, 3.0, 4)]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, 3), (2.0, 2.0, 1.0, 3.0, 4)]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, 3), (0.0, 0.0, 1.0, 1.0, 3)]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, 1)]),
    ("insert_records", [(0, 0, 1, 1, 3), (2, 2, 3, 3, 4.0)]),
    ("insert_records", [(0.0, 0.0, 1.0, 1.0, True)]),
    ("insert_records", [(0, 0, 1, 1, 3), (2**60, 0, 2**60 + 1, 1, 5)]),
    ("move_records", [(2.0, 2.0, 3.0, 3.0, 1), (0.0, 0.0, 1.0, 1.0, 9)]),
    ("move_records", [(2.0, 2.0, 3.0, 3.0, 1), (0.0, 0.0, -1.0, 1.0, 2)]),
    ("move_records", [(2.0, 2.0, 3.0, 3.0, 1), "not a record"]),
    ("move_records", [(2, 2, 3, 3, 1)]),
]


@pytest.mark.parametrize(("method", "records"), RECORD_CASES)
def test_records_are_checked_as_ids_and_boxes_are(
    tree_class: type[QuadTree], method: str, records: list[object]
) -> None:
    """A bad record raises, naming the entity and the value; insert_records is all or
    nothing, and the two classes give the same outcome, error text included."""
    outcomes: list[tuple[Any, list[int], list[NodeInfo]]] = []
    for cls in {tree_class, PyQuadTree}:
        tree = cls(Box(0, 0, 100, 100))
        tree.insert_many([1, 2], [(0, 0, 1, 1), (5, 5, 6, 6)])
        outcome = _outcome(functools.partial(getattr(tree, method), records))
        tree.check()
        outcomes.append((outcome, sorted(tree), list(tree.nodes())))
    assert all(o == outcomes[0] for o in outcomes), outcomes
    if method == "insert_records" and outcomes[0][0][0] != "ok":
        assert outcomes[0][1] == [1, 2]  # all or nothing
