"""The compiled QuadTree against the pure-Python reference, side by side (issue 18).

Both trees get the same calls, in long random sequences of every update and query, on
ordinary and extreme boxes (huge, zero-size, far out of bounds, near +-1.7e308, subnormal,
ints past 2**53). Every answer must be the same (the same pairs in the same order, the same
``nearest`` ties, the same raycast fractions to the last bit, the same ``nodes()``), every
error the same (type and message), and both trees pass ``check()`` after every step.
Every list is compared in its order: sets of ids come in ascending order in both classes
(``query``, ``query_radius``, ``query_entity``, ``list(tree)``, a state's ids).

The seeded driver runs longer from the command line, which is how the AddressSanitizer soak
uses it (``scripts/asan-soak.sh``)::

    python tests/test_native_quadtree.py --seeds 500 --steps 400

Any failure prints the seed, so that ``--first SEED --seeds 1`` replays it.
"""

from __future__ import annotations

import argparse
import copy
import math
import pickle
import random
import struct
import sys
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

if __name__ == "__main__":  # run as a script: the checkout's package (imported: the caller's)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from ecs_spatial import geometry
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial import _cquadtree
except ImportError:  # a pure-Python build: nothing to compare
    _cquadtree = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(_cquadtree is None, reason="the C core is not built")

MAX = sys.float_info.max
TINY = 5e-324
INT64 = 2**63


# ---------------------------------------------------------------------------- comparing


def canon(value: object) -> object:
    """``value`` with every float as its exact bits (so -0.0 != 0.0 and 1 ulp counts), and
    every container's type kept: what "the same answer" means here."""
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, tuple):
        return (type(value).__name__, tuple(canon(v) for v in value))
    if isinstance(value, list):
        return [canon(v) for v in value]
    if isinstance(value, array):
        return ("array", value.typecode, value.tolist())
    return value


def outcome(call: Callable[[], object]) -> object:
    """What a call gives: its canonical answer, or its error's type and message."""
    try:
        result = call()
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))
    return canon(result)


def cquadtree() -> Any:
    assert _cquadtree is not None
    return _cquadtree


def state_of(tree: Any) -> dict[str, Any]:
    """The plain state both classes pickle to (``__getstate__``, the same format)."""
    return tree.__getstate__()  # type: ignore[no-any-return]


def reference_from_state(state: dict[str, Any]) -> PyQuadTree:
    """A reference tree rebuilt from a state, as pickle rebuilds one (``__new__``, then
    ``__setstate__``)."""
    tree = PyQuadTree.__new__(PyQuadTree)
    tree.__setstate__(state)
    return tree


class Pair:
    """The two trees, driven together; every call is compared."""

    def __init__(self, hint: Box | None, threshold: int, max_depth: int) -> None:
        self.hint = hint
        self.ref = PyQuadTree(hint, threshold=threshold, max_depth=max_depth)
        self.nat = cquadtree().QuadTree(hint, threshold=threshold, max_depth=max_depth)

    def same(self, name: str, *args: object, **kwargs: Any) -> object:
        """Call ``name`` on both; require the same outcome and both trees valid after it."""
        ref = outcome(lambda: getattr(self.ref, name)(*args, **kwargs))
        nat = outcome(lambda: getattr(self.nat, name)(*args, **kwargs))
        assert nat == ref, f"{name}{args!r} {kwargs!r}:\n  reference {ref!r}\n  compiled  {nat!r}"
        return ref

    def same_batch(
        self, name: str, ids: list[object], boxes: list[object], buffers: bool, **kwargs: object
    ) -> None:
        """A batch call, the compiled tree fed buffers when ``buffers`` (the reference always
        gets the lists, which is what the buffers stand for)."""
        ref = outcome(lambda: getattr(self.ref, name)(ids, boxes, **kwargs))
        if buffers:
            id_buffer = array("q", cast("list[int]", ids))
            box_buffer = array("d", [c for b in cast("list[Box]", boxes) for c in b])
            nat = outcome(lambda: getattr(self.nat, name)(id_buffer, box_buffer, **kwargs))
        else:
            nat = outcome(lambda: getattr(self.nat, name)(ids, boxes, **kwargs))
        assert nat == ref, f"{name} buffers={buffers}:\n  reference {ref!r}\n  compiled  {nat!r}"

    def check(self) -> None:
        self.ref.check()
        self.nat.check()
        assert len(self.ref) == len(self.nat)

    def compare_all(self) -> None:
        """Everything observable: boxes, bounds, pairs, shape, repr, the state."""
        self.check()
        assert list(self.ref) == list(self.nat) == sorted(self.ref)
        assert canon(sorted((e, self.ref[e]) for e in self.ref)) == canon(
            sorted((e, self.nat[e]) for e in self.nat)
        )
        self.same("find_all_intersections")
        pairs = self.ref.find_all_intersections()
        assert self.nat.find_all_intersections_array().tolist() == [i for p in pairs for i in p]
        assert canon(list(self.ref.nodes())) == canon(list(self.nat.nodes()))
        self.same("depth")
        assert canon(self.ref.bounds) == canon(self.nat.bounds)
        assert repr(self.ref) == repr(self.nat)
        ref_state, nat_state = state_of(self.ref), state_of(self.nat)
        assert canon(ref_state) == canon(nat_state)
        assert list(ref_state["ids"]) == sorted(ref_state["ids"])
        assert pickle.dumps(ref_state) == pickle.dumps(nat_state)  # the same bytes saved


# ---------------------------------------------------------------------------- worlds

WORLDS = ("uniform", "clustered", "grid", "points", "huge", "far", "zero", "extreme", "ints")
EDGES = (-MAX, -1.7e308, -1e308, -4.5e307, 0.0, -0.0, 4.5e307, 1e308, 1.6e308, MAX)


def _float(rng: random.Random) -> float:
    """Any finite float, edges, subnormals and ordinary values alike."""
    kind = rng.random()
    if kind < 0.3:
        return rng.choice(EDGES)
    if kind < 0.5:
        return rng.randint(-6, 6) * TINY
    if kind < 0.7:
        bits = rng.getrandbits(64)
        value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
        return value if math.isfinite(value) else 0.0
    return rng.uniform(-1, 1) * 10.0 ** rng.randint(-320, 308)


def random_box(rng: random.Random, world: str) -> tuple[float, float, float, float]:
    """A box of the given kind of world, as four floats."""
    if world == "uniform":
        x, y = rng.uniform(0, 100), rng.uniform(0, 100)
        return (x, y, x + rng.uniform(0, 10), y + rng.uniform(0, 10))
    if world == "clustered":
        cx, cy = rng.choice(((20.0, 20.0), (70.0, 40.0), (50.0, 90.0)))
        x, y = rng.gauss(cx, 3.0), rng.gauss(cy, 3.0)
        return (x, y, x + rng.uniform(0, 4), y + rng.uniform(0, 4))
    if world == "grid":  # small integers: many boxes touch exactly, on split lines too
        x, y = float(rng.randint(-5, 105)), float(rng.randint(-5, 105))
        return (x, y, x + rng.randint(0, 12), y + rng.randint(0, 12))
    if world == "points":  # identical points, more than a leaf holds, on split lines
        x, y = rng.choice((25.0, 50.0, 75.0)), rng.choice((25.0, 50.0, 75.0))
        return (x, y, x, y)
    if world == "huge":
        x, y = rng.uniform(-1e6, 1e6), rng.uniform(-1e6, 1e6)
        return (x, y, x + rng.uniform(0, 1e5), y + rng.uniform(0, 10))
    if world == "far":
        x, y = rng.uniform(-1e15, 1e15), rng.uniform(-1e15, 1e15)
        return (x, y, x + rng.uniform(0, 1e3), y + rng.uniform(0, 1e3))
    if world == "zero":
        x, y = rng.uniform(-100, 200), rng.uniform(-100, 200)
        return (x, y, x, y) if rng.random() < 0.5 else (x, y, x, y + rng.uniform(0, 5))
    if world == "ints":  # past 2**53, rounded to floats on the way in
        base = rng.choice((2**53, -(2**53), 2**60))
        a, b, c, d = (float(base + rng.randint(-9, 9)) for _ in range(4))
        return (min(a, c), min(b, d), max(a, c), max(b, d))
    a, b, c, d = (_float(rng) for _ in range(4))
    if rng.random() < 0.1:
        return rng.choice(((-MAX, -MAX, MAX, MAX), (1e308, 0.0, 1e308, 0.0), (MAX, MAX, MAX, MAX),
                           (TINY, TINY, TINY, TINY), (0.0, 0.0, TINY, TINY)))
    return (min(a, c), min(b, d), max(a, c), max(b, d))


class _IntLike:
    """An integer-like id (numpy integers have ``__index__`` and are no int)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"_IntLike({self.value})"


BAD_BOXES: tuple[object, ...] = (
    (math.nan, 0.0, 1.0, 1.0), (0.0, 0.0, math.inf, 1.0), (5.0, 0.0, 1.0, 1.0),
    (0.0, 5.0, 1.0, 1.0), (0.0, 0.0, 1.0), "abcd", None, (0, 0, 10**400, 1), (True, 0, 1, 1),
    (-math.inf, 0.0, 0.0, 0.0),
)
NOT_IDS: tuple[object, ...] = (1.0, True, "7", None, 7.5)


def given_box(rng: random.Random, box: tuple[float, float, float, float]) -> object:
    """The box as a caller may pass it: a Box, a tuple, a list, with int coordinates."""
    kind = rng.random()
    if kind < 0.3:
        return Box(*box)
    if kind < 0.4:
        return list(box)
    if kind < 0.5 and all(c.is_integer() and abs(c) < 1e18 for c in box):
        return tuple(int(c) for c in box)
    return box


class Driver:
    """Random sequences of every update and query on a Pair, from one seed."""

    def __init__(self, seed: int) -> None:
        self.rng = rng = random.Random(seed)
        hint = rng.choice([
            None, Box(0, 0, 100, 100), Box(0, 0, 0, 0), Box(-50, 20, 50, 30),
            Box(1e308, 1e308, 1.7e308, 1.7e308), Box(-MAX, -MAX, MAX, MAX),
            Box(0, 0, TINY, TINY), Box(2**53, 2**53, 2**53 + 2, 2**53 + 8),
        ])
        self.pair = Pair(hint, rng.choice([1, 2, 4, 16]), rng.choice([0, 1, 3, 8, 30]))
        self.worlds = rng.sample(WORLDS, rng.randint(1, 3))
        self.next_id = rng.choice([1, 1000, INT64 - 10_000, -(2**40)])
        self.ids: list[int] = []

    def box(self) -> tuple[float, float, float, float]:
        return random_box(self.rng, self.rng.choice(self.worlds))

    def some_id(self) -> object:
        rng = self.rng
        kind = rng.random()
        if self.ids and kind < 0.8:
            e = rng.choice(self.ids)
            return _IntLike(e) if rng.random() < 0.05 else e
        if kind < 0.9:
            return self.next_id + rng.randint(0, 50)  # mostly absent
        return rng.choice(NOT_IDS)

    def new_id(self) -> int:
        self.next_id += self.rng.randint(1, 3)
        return self.next_id

    def step(self) -> None:
        rng, pair = self.rng, self.pair
        op = rng.choices(
            ["insert", "insert_many", "move", "move_many", "nudge", "remove", "bad", "query",
             "point", "radius", "nearest", "raycast", "entity", "pairs_for", "lookup", "clear",
             "pickle"],
            [14, 4, 12, 5, 8, 5, 3, 4, 3, 4, 5, 3, 3, 3, 3, 0.3, 1],
        )[0]
        if op == "insert":
            e = self.new_id()
            pair.same("insert", e, given_box(rng, self.box()))
            if e in pair.ref:
                self.ids.append(e)
        elif op == "insert_many":
            k = rng.randint(0, 12)
            ids: list[object] = [self.new_id() for _ in range(k)]
            boxes: list[object] = [self.box() for _ in range(k)]
            buffers = rng.random() < 0.5
            if ids and rng.random() < 0.2:  # a duplicate, a present id, a length error
                spoil = rng.randint(0, 2)
                if spoil == 0:
                    ids[-1] = ids[0]
                elif spoil == 1 and self.ids:
                    ids[-1] = rng.choice(self.ids)
                else:
                    boxes.pop()
            if not buffers and rng.random() < 0.3:
                boxes = [given_box(rng, b) for b in boxes]  # type: ignore[arg-type]
            pair.same_batch("insert_many", ids, boxes, buffers)
            self.ids.extend(e for e in ids if isinstance(e, int) and e in pair.ref
                            and e not in self.ids)
        elif op == "move" and self.ids:
            pair.same("move", self.some_id(), given_box(rng, self.box()))
        elif op == "nudge" and self.ids:  # small steps: the fast path and its edges
            e = rng.choice(self.ids)
            x0, y0, x1, y1 = pair.ref[e]
            dx, dy = rng.uniform(-3, 3), rng.uniform(-3, 3)
            box = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
            if all(math.isfinite(c) for c in box):
                pair.same("move", e, box)
        elif op == "move_many" and self.ids:
            k = rng.randint(0, 10)
            movers: list[object] = [rng.choice(self.ids) for _ in range(k)]
            targets: list[object] = [self.box() for _ in range(k)]
            if movers and rng.random() < 0.25:
                spoil = rng.randint(0, 2)
                if spoil == 0:
                    movers[rng.randrange(k)] = self.next_id + 99
                elif spoil == 1:
                    targets[rng.randrange(k)] = rng.choice(BAD_BOXES[:4])
                else:
                    movers.append(movers[0])
            pair.same_batch("move_many", movers, targets, rng.random() < 0.5,
                            atomic=rng.random() < 0.7)
        elif op == "remove":
            pair.same(rng.choice(["remove", "discard"]), self.some_id())
            self.ids = [i for i in self.ids if i in pair.ref]
        elif op == "bad":
            if rng.random() < 0.5:
                pair.same("insert", rng.choice((*NOT_IDS, self.new_id())), rng.choice(BAD_BOXES))
            elif self.ids:
                pair.same("move", rng.choice(self.ids), rng.choice(BAD_BOXES))
        elif op == "query":
            pair.same("query", self.box() if rng.random() < 0.9 else rng.choice(BAD_BOXES))
        elif op == "point":
            x, y = self._point()
            pair.same("query_point", x, y)
        elif op == "radius":
            x, y = self._point()
            r = rng.choice([rng.uniform(0, 60), abs(_float(rng)), 0.0, -1.0, math.nan, 5])
            pair.same("query_radius", x, y, r)
        elif op == "nearest":
            x, y = self._point()
            kwargs: dict[str, Any] = {}
            if rng.random() < 0.4:
                residue = rng.randint(0, 2)
                kwargs["where"] = lambda e, r=residue: e % 3 != r
            if rng.random() < 0.4:
                kwargs["max_distance"] = rng.choice([rng.uniform(0, 60), abs(_float(rng)), 0.0])
            k = rng.choice([1, 1, 2, 3, 6, 50, 0, 10**30])
            pair.same("nearest", x, y, k, **kwargs)
        elif op == "raycast":
            x0, y0 = self._point()
            x1, y1 = self._point()
            pair.same("raycast", x0, y0, x1, y1)
        elif op == "entity":
            pair.same("query_entity", self.some_id())
        elif op == "pairs_for":
            pair.same("find_intersections_for", [self.some_id() for _ in range(rng.randint(0, 6))])
        elif op == "lookup":
            value = self.some_id()
            pair.same("__contains__", value)
            pair.same("__getitem__", value)
            pair.same("get", value, "absent")
        elif op == "clear":
            pair.same("clear")
            self.ids.clear()
        elif op == "pickle":
            self.cross_pickle()
        pair.check()

    def _point(self) -> tuple[float, float]:
        rng = self.rng
        if rng.random() < 0.7:
            return (rng.uniform(-20, 120), rng.uniform(-20, 120))
        if rng.random() < 0.9:
            return (_float(rng), _float(rng))
        return (rng.choice([math.nan, math.inf, 1]), 0.0)

    def cross_pickle(self) -> None:
        """Each tree rebuilt from the other's state is the other tree, node for node."""
        pair = self.pair
        pair.compare_all()
        state = state_of(pair.ref)
        nat = cquadtree().QuadTree(pair.hint)
        nat.__setstate__(state)
        nat.check()
        ref = reference_from_state(state_of(pair.nat))
        ref.check()
        assert canon(list(nat.nodes())) == canon(list(pair.ref.nodes()))
        assert canon(list(ref.nodes())) == canon(list(pair.nat.nodes()))
        copied = pickle.loads(pickle.dumps(pair.nat))
        copied.check()
        assert canon(list(copied.nodes())) == canon(list(pair.nat.nodes()))
        assert copied.find_all_intersections() == pair.nat.find_all_intersections()
        for duplicate in (copy.copy(pair.nat), copy.deepcopy(pair.nat)):
            duplicate.check()
            assert repr(duplicate) == repr(pair.nat)

    def run(self, steps: int, compare_every: int = 25) -> None:
        for i in range(steps):
            self.step()
            if i % compare_every == compare_every - 1:
                self.pair.compare_all()
        self.pair.compare_all()


# ---------------------------------------------------------------------------- tests


@pytest.mark.parametrize("seed", range(24))
def test_seeded_sequences_agree(seed: int) -> None:
    """A random sequence of every update and query gives the same answers and errors."""
    Driver(seed).run(120)


class DifferentialMachine(RuleBasedStateMachine):
    """hypothesis drives both trees; answers, errors and check() after every step."""

    @initialize(
        bounds=st.sampled_from([None, Box(0, 0, 100, 100), Box(0, 0, 0, 0),
                                Box(1e308, 1e308, 1.7e308, 1.7e308), Box(-MAX, -MAX, MAX, MAX)]),
        threshold=st.sampled_from([1, 2, 4, 16]),
        max_depth=st.sampled_from([0, 1, 3, 8]),
        worlds=st.lists(st.sampled_from(WORLDS), min_size=1, max_size=3, unique=True),
    )
    def start(self, bounds: Box | None, threshold: int, max_depth: int, worlds: list[str]) -> None:
        self.driver = Driver(0)
        self.driver.pair = Pair(bounds, threshold, max_depth)
        self.driver.worlds = worlds

    @rule(seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 6))
    def steps(self, seed: int, steps: int) -> None:
        self.driver.rng = random.Random(seed)
        for _ in range(steps):
            self.driver.step()

    @rule()
    def pickle_across(self) -> None:
        self.driver.cross_pickle()

    @invariant()
    def agree(self) -> None:
        if hasattr(self, "driver"):
            self.driver.pair.check()


TestDifferential = DifferentialMachine.TestCase
TestDifferential.settings = settings(max_examples=15, stateful_step_count=20, deadline=None)


def test_hypot_is_math_hypot_to_the_bit() -> None:
    """The distance the index measures is math.hypot's, bit for bit (CPython 3.11's
    vector_norm, not libm's hypot), subnormals and the edges of the range included."""
    rng = random.Random(7)
    for _ in range(60_000):
        a, b = _float(rng), _float(rng)
        assert cquadtree()._hypot(a, b).hex() == math.hypot(a, b).hex(), (a, b)


def test_segment_entry_is_the_reference_to_the_bit() -> None:
    """Raycast fractions are geometry.segment_entry's, bit for bit."""
    rng = random.Random(8)
    for _ in range(40_000):
        box = random_box(rng, rng.choice(("uniform", "extreme", "zero", "huge")))
        seg = [rng.uniform(-20, 120) if rng.random() < 0.5 else _float(rng) for _ in range(4)]
        expected = geometry.segment_entry(box, *seg)
        got = cquadtree()._segment_entry(box, *seg)
        assert canon(got) == canon(expected), (box, seg)


def test_midpoint_and_ulp_are_the_reference() -> None:
    rng = random.Random(9)
    for _ in range(40_000):
        a, b = sorted((_float(rng), _float(rng)))
        assert cquadtree()._midpoint(a, b).hex() == geometry.midpoint(a, b).hex()
        assert cquadtree()._ulp(a) == math.ulp(a)


def test_the_compiled_box_constructor_is_installed_with_the_compiled_core() -> None:
    """One switch: with the compiled index, Box.__new__ is the compiled one (``_cgeometry``,
    which geometry.py installs)."""
    from ecs_spatial import index

    if index.NATIVE:
        assert geometry.COMPILED
        assert Box.__dict__["__new__"].__func__.__module__ == "ecs_spatial._cgeometry"
    else:
        assert Box.__dict__["__new__"] is geometry._reference_box_new


def test_buffers_are_the_lists_they_stand_for() -> None:
    """move_many and insert_many take array('q') ids with array('d') boxes, flat or (if
    numpy is there) as rows of 4: the same tree as the lists of tuples."""
    rng = random.Random(3)
    ids = list(range(1, 2001))
    boxes = [random_box(rng, "uniform") for _ in ids]
    by_lists = cquadtree().QuadTree(Box(0, 0, 100, 100))
    by_lists.insert_many(ids, boxes)
    by_buffers = cquadtree().QuadTree(Box(0, 0, 100, 100))
    by_buffers.insert_many(array("q", ids), array("d", [c for b in boxes for c in b]))
    moved = [random_box(rng, "uniform") for _ in ids]
    by_lists.move_many(ids, moved)
    by_buffers.move_many(array("q", ids), array("d", [c for b in moved for c in b]))
    by_buffers.check()
    assert list(by_lists.nodes()) == list(by_buffers.nodes())
    assert by_lists.find_all_intersections() == by_buffers.find_all_intersections()
    with pytest.raises(ValueError, match="4 floats per box"):
        by_buffers.move_many(array("q", [1]), array("d", [0.0, 0.0, 1.0]))
    numpy = pytest.importorskip("numpy")
    rows = numpy.array(moved[::-1], dtype=numpy.float64)
    by_buffers.move_many(numpy.array(ids, dtype=numpy.int64), rows)
    by_lists.move_many(ids, moved[::-1])
    assert by_lists.find_all_intersections() == by_buffers.find_all_intersections()


@pytest.mark.parametrize("native", [False, True])
def test_ids_past_64_bits_are_refused_by_name(native: bool) -> None:
    """Ids are 64-bit ints in both classes: one outside that range is refused on the way in
    (OverflowError naming it, shortened past 4,300 digits), and looking one up finds
    nothing, as for any absent id."""
    tree = cquadtree().QuadTree() if native else PyQuadTree()
    with pytest.raises(OverflowError, match=r"64-bit ints .* got 9223372036854775808$"):
        tree.insert(INT64, (0.0, 0.0, 1.0, 1.0))
    with pytest.raises(OverflowError, match=r"got an int of 15001 bits$"):
        tree.insert_many([1 << 15000], [(0.0, 0.0, 1.0, 1.0)])
    tree.insert(INT64 - 1, (0.0, 0.0, 1.0, 1.0))
    tree.insert(-INT64, (0.0, 0.0, 1.0, 1.0))
    assert INT64 not in tree and tree.get(INT64) is None
    assert tree.find_all_intersections() == [(-INT64, INT64 - 1)]
    with pytest.raises(KeyError, match="is not in the index"):
        tree.move(INT64, (0.0, 0.0, 1.0, 1.0))


def test_a_where_predicate_may_read_but_not_change_the_tree() -> None:
    """nearest(where=...) calls back into Python: reading the tree is fine, changing it in
    the middle of the search raises instead of pulling the nodes from under it."""
    tree = cquadtree().QuadTree(Box(0, 0, 100, 100), threshold=2)
    for e in range(1, 50):
        tree.insert(e, (float(e), float(e), e + 1.0, e + 1.0))
    assert tree.nearest(10, 10, 2, where=lambda e: len(tree.query_entity(e)) > 0) == [9, 10]

    def meddle(e: int) -> bool:
        tree.remove(e)
        return True

    with pytest.raises(RuntimeError, match="changed while it was busy"):
        tree.nearest(10, 10, where=meddle)
    tree.check()
    assert len(tree) == 49


def _straddling(rng: random.Random) -> tuple[float, float, float, float]:
    """A small box across one of the split lines of the top three levels of (0, 0, 128, 128)
    (multiples of 16), which stays in the node that line splits."""
    line = 16.0 * rng.randint(1, 7)
    at = rng.uniform(0.0, 124.0)
    w, h = rng.uniform(0.0, 3.0), rng.uniform(0.0, 3.0)
    if rng.random() < 0.5:
        return (line - w, at, line + rng.uniform(0.0, 3.0), at + h)
    return (at, line - h, at + w, line + rng.uniform(0.0, 3.0))


@pytest.mark.parametrize("seed", range(6))
def test_straddler_snapshots_follow_every_change(seed: int) -> None:
    """The per-entity pair search reads a node of many entries through a cached snapshot
    (Snap in _cquadtree_src/tree.h): every change to those entries (a straddler moved in
    place, moved off its line or onto one, removed, inserted; slots renumbered by a removal or a
    compaction; subtrees merged) must make it stale. Snapshots are built by a search after
    every step, and the answers compared with the reference's all-pairs walk, with brute
    force for query_entity, and check() (which rebuilds each fresh snapshot) after each."""
    rng = random.Random(seed)
    pair = Pair(Box(0, 0, 128, 128), 4, 6)
    ref, nat = pair.ref, pair.nat
    next_id = 1
    for _ in range(400):  # hundreds of straddlers: nodes of 12 entries or more near the root
        box = _straddling(rng) if rng.random() < 0.6 else random_box(rng, "uniform")
        pair.same("insert", next_id, box)
        next_id += 1
    for _ in range(150):
        ids = sorted(ref)
        op = rng.random()
        e = rng.choice(ids)
        if op < 0.35:  # a nudge: mostly in place, now and then across a line
            x0, y0, x1, y1 = ref[e]
            dx, dy = rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)
            pair.same("move", e, (x0 + dx, y0 + dy, x1 + dx, y1 + dy))
        elif op < 0.5:
            pair.same("move", e, _straddling(rng))
        elif op < 0.6:
            pair.same("move", e, random_box(rng, "uniform"))
        elif op < 0.7:
            moved = rng.sample(ids, 20)
            pair.same("move_many", moved, [_straddling(rng) for _ in moved])
        elif op < 0.8:
            pair.same("remove", e)  # the last slot takes e's: renumbered
        elif op < 0.9:
            pair.same("insert", next_id, _straddling(rng))
            next_id += 1
        elif op < 0.95:
            for gone in rng.sample(ids, len(ids) // 3):  # merges, then a compaction
                pair.same("remove", gone)
            for _ in range(len(ids) // 3):
                pair.same("insert", next_id, _straddling(rng))
                next_id += 1
        else:
            pair.same("nearest", 64.0, 64.0, 3)
        pair.check()
        everyone = sorted(ref)
        assert nat.find_intersections_for(everyone) == ref.find_all_intersections()
        for e in rng.sample(everyone, 5):
            box = ref[e]
            brute = sorted(o for o in everyone if o != e and ref[o].intersects(box))
            assert sorted(nat.query_entity(e)) == brute
        nat.check()


def test_a_merge_drops_the_snapshots_of_the_nodes_it_frees() -> None:
    """A node freed by a merge while it had a fresh snapshot (one of 12 own entries or more)
    must not lend it to the node that next takes its index."""
    pair = Pair(Box(0, 0, 128, 128), 16, 6)
    ys = (2, 6, 10, 14, 18, 22, 26, 36, 40, 44, 48, 52, 56, 60)
    across = [(31.0, y, 33.0, y + 1.0) for y in ys]
    below = [(2.0 + 3 * i, 2.0, 3.0 + 3 * i, 3.0) for i in range(6)]
    far = [(70.0 + 2 * i, 70.0, 71.0 + 2 * i, 71.0) for i in range(20)]
    boxes = across + below + far  # 14 entries across x = 32 in the low-left quadrant's node
    pair.same("insert_many", list(range(1, len(boxes) + 1)), boxes)
    ids = list(range(1, len(boxes) + 1))
    pair.same("find_intersections_for", ids)  # builds that node's snapshot
    for e in range(21, 41):
        pair.same("remove", e)
    for e in range(15, 19):
        pair.same("remove", e)  # the root falls to 16 entries: one leaf, that node freed
        pair.check()
    for e, box in enumerate(far, 41):  # the root splits again: the freed indices return
        pair.same("insert", e, box)
    pair.check()
    pair.same("find_intersections_for", sorted(pair.ref))
    pair.check()


def test_a_leaf_that_turns_internal_again_rebuilds_its_snapshot() -> None:
    """A node merged with nothing below it keeps its snapshot as a leaf, where a box moved in
    place marks nothing (leaves are never read through one); turning internal again must."""
    pair = Pair(Box(0, 0, 128, 128), 12, 6)
    ys = (2, 6, 10, 14, 18, 22, 26, 36, 40, 44, 48, 52)
    across = [(31.0, y, 33.0, y + 1.0) for y in ys]  # 12 own entries of the low-left node
    far = [(70.0 + 2 * i, 70.0, 71.0 + 2 * i, 71.0) for i in range(20)]
    boxes = [*across, (2.0, 2.0, 3.0, 3.0), *far]
    ids = list(range(1, len(boxes) + 1))
    pair.same("insert_many", ids, boxes)
    pair.same("find_intersections_for", ids)  # builds the low-left node's snapshot
    pair.same("remove", 13)  # its subtree falls to 12: a leaf, nothing merged into it
    pair.same("move", 1, (31.5, 2.5, 32.5, 3.5))  # in place, in a leaf
    pair.same("insert_many", [100, 101], [(5.0, 5.0, 6.0, 6.0), (8.0, 8.0, 9.0, 9.0)])
    pair.check()  # internal again: its snapshot must not be the old one
    pair.same("find_intersections_for", sorted(pair.ref))
    pair.same("query_entity", 2)


def test_pickles_cross_between_the_classes() -> None:
    """A state written by either class rebuilds the same tree in the other."""
    rng = random.Random(5)
    ref = PyQuadTree(Box(0, 0, 100, 100), threshold=4)
    for e in range(1, 300):
        ref.insert(e, random_box(rng, rng.choice(("uniform", "huge", "points"))))
    nat = pickle.loads(pickle.dumps(cquadtree().QuadTree(Box(0, 0, 100, 100), threshold=4)))
    nat.__setstate__(state_of(ref))
    nat.check()
    assert canon(list(nat.nodes())) == canon(list(ref.nodes()))
    assert nat.find_all_intersections() == ref.find_all_intersections()
    back = reference_from_state(pickle.loads(pickle.dumps(state_of(nat))))
    back.check()
    assert canon(list(back.nodes())) == canon(list(ref.nodes()))


@pytest.mark.parametrize("native", [False, True])
def test_a_state_with_ids_past_64_bits_is_refused_by_name(native: bool) -> None:
    """A state with an id past 64 bits is refused as insert refuses the id (OverflowError
    naming it), and the tree stays as it was."""
    state = state_of(PyQuadTree(Box(0, 0, 10, 10)))
    state.update(ids=[3, INT64], boxes=[1.0, 1.0, 2.0, 2.0] * 2)
    tree = cquadtree().QuadTree(Box(0, 0, 100, 100), threshold=2) if native else PyQuadTree(
        Box(0, 0, 100, 100), threshold=2
    )
    for e in range(1, 20):
        tree.insert(e, (float(e), float(e), e + 1.0, e + 1.0))
    before = state_of(tree)
    with pytest.raises(
        OverflowError, match=r"^QuadTree state: entity ids are 64-bit .* got 9223372036854775808$"
    ):
        tree.__setstate__(state)
    tree.check()
    assert state_of(tree) == before


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args(None if argv is None else list(argv))
    for seed in range(args.first, args.first + args.seeds):
        try:
            Driver(seed).run(args.steps)
        except Exception:
            print(f"seed {seed} failed: --first {seed} --seeds 1", file=sys.stderr)
            raise
    print(f"{args.seeds} seeds x {args.steps} steps: the compiled tree agrees")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# -- the buffered move's slot hints, the bucketed pair sort, a deep frame stack ---------------


@pytest.mark.parametrize("seed", range(8))
def test_slot_hints_never_outlive_the_slots_they_name(seed: int) -> None:
    """move_many of buffers tries the slot the last buffered call found at the same position
    before hashing: buffered moves mixed with removes, inserts, clears, reordered and
    shortened id lists and atomic moves that fail must still move the right entries."""
    rng = random.Random(seed)
    side = 400.0
    ref = PyQuadTree((0, 0, side, side), threshold=4)
    core = cquadtree().QuadTree((0, 0, side, side), threshold=4)
    boxes: dict[int, tuple[float, float, float, float]] = {}
    next_id = 1

    def new_box() -> tuple[float, float, float, float]:
        x, y = rng.uniform(-20, side), rng.uniform(-20, side)
        return (x, y, x + rng.uniform(0, 20), y + rng.uniform(0, 20))

    for _ in range(60):
        boxes[next_id] = new_box()
        ref.insert(next_id, boxes[next_id])
        core.insert(next_id, boxes[next_id])
        next_id += 1
    order = list(boxes)
    for _ in range(150):
        op = rng.random()
        if op < 0.6:
            ids = [e for e in order if e in boxes]
            if rng.random() < 0.2:
                rng.shuffle(ids)
            if rng.random() < 0.2:
                ids = ids[: rng.randrange(len(ids) + 1)]
            flat = array("d")
            for e in ids:
                if rng.random() < 0.3:
                    box = new_box()
                else:
                    x, y = boxes[e][0] + rng.uniform(-3, 3), boxes[e][1] + rng.uniform(-3, 3)
                    box = (x, y, x + 5, y + 5)
                flat.extend(box)
            rows = [tuple(flat[4 * i: 4 * i + 4]) for i in range(len(ids))]
            if ids and rng.random() < 0.05:
                flat[4 * rng.randrange(len(ids))] = math.nan
                rows = [tuple(flat[4 * i: 4 * i + 4]) for i in range(len(ids))]
                outcomes = []
                for tree, args in ((ref, (ids, rows)), (core, (array("q", ids), flat))):
                    try:
                        tree.move_many(*args, atomic=True)
                        outcomes.append("ok")
                    except ValueError as error:
                        outcomes.append(str(error))
                assert outcomes[0] == outcomes[1]
            else:
                ref.move_many(ids, rows, atomic=False)  # type: ignore[arg-type]
                core.move_many(array("q", ids), flat, atomic=False)
                boxes.update(zip(ids, rows, strict=True))  # type: ignore[arg-type]
        elif op < 0.75 and boxes:
            e = rng.choice(sorted(boxes))
            del boxes[e]
            ref.remove(e)
            core.remove(e)
        elif op < 0.9:
            boxes[next_id] = new_box()
            ref.insert(next_id, boxes[next_id])
            core.insert(next_id, boxes[next_id])
            order.append(next_id)
            next_id += 1
        elif rng.random() < 0.1:
            ref.clear()
            core.clear()
            boxes.clear()
        core.check()
        assert sorted(core) == sorted(ref)
        assert core.find_all_intersections() == ref.find_all_intersections()
        for e in ref:
            assert tuple(core[e]) == tuple(ref[e])


@pytest.mark.parametrize("seed", range(5))
def test_the_bucketed_pair_sort_orders_any_int64_ids(seed: int) -> None:
    rng = random.Random(seed)
    ref, core = PyQuadTree((0, 0, 100, 100)), cquadtree().QuadTree((0, 0, 100, 100))
    pool = [-(2**63), 2**63 - 1, -1, 0, 1] + [
        rng.choice([rng.randrange(-(2**63), 2**63), rng.randrange(-50, 50),
                    rng.randrange(2**40, 2**40 + 100)])
        for _ in range(400)
    ]
    for e in dict.fromkeys(pool):
        if rng.random() < 0.05:
            low, high = rng.uniform(0, 50), rng.uniform(50, 100)
            box = (low, rng.uniform(0, 50), high, rng.uniform(50, 100))
        else:
            x, y, w = rng.uniform(0, 95), rng.uniform(0, 95), rng.uniform(0, 6)
            box = (x, y, x + w, y + w)
        ref.insert(e, box)
        core.insert(e, box)
    pairs = ref.find_all_intersections()
    assert core.find_all_intersections() == pairs
    flat = list(core.find_all_intersections_array())
    assert [tuple(flat[i: i + 2]) for i in range(0, len(flat), 2)] == pairs


def test_the_pair_search_stack_grows_with_a_deep_tree() -> None:
    rng = random.Random(5)
    ref = PyQuadTree((0, 0, 1, 1), threshold=1, max_depth=60)
    core = cquadtree().QuadTree((0, 0, 1, 1), threshold=1, max_depth=60)
    e = 0
    for scale in [2.0**-k for k in range(50)]:
        for _ in range(6):
            x, y, w = rng.uniform(0, scale), rng.uniform(0, scale), scale * rng.uniform(0, 0.3)
            ref.insert(e, (x, y, x + w, y + w))
            core.insert(e, (x, y, x + w, y + w))
            e += 1
    assert core.depth() > 40
    assert core.find_all_intersections() == ref.find_all_intersections()


@pytest.mark.parametrize("wrap", [False, True])
def test_crowded_nodes_and_moves_between_searches_find_the_reference_pairs(wrap: bool) -> None:
    # Nodes of hundreds of entries (threshold 400) where about half the boxes met on x also
    # meet on y, so the search keeps and drops pairs in every mix, grows its output many
    # times over, and re-sorts lists that moves between searches left out of order.
    rng = random.Random(11)
    world = (0.0, 0.0, 60.0, 60.0)
    make = cquadtree().QuadTree
    ref = PyQuadTree(wrap=world, threshold=400) if wrap else PyQuadTree(world, threshold=400)
    core = make(wrap=world, threshold=400) if wrap else make(world, threshold=400)
    boxes: dict[int, tuple[float, float, float, float]] = {}
    for e in range(1500):
        x, y, w, h = rng.uniform(0, 55), rng.uniform(0, 55), rng.uniform(0, 5), rng.uniform(0, 5)
        boxes[e] = (x, y, x + w, y + h)
        ref.insert(e, boxes[e])
        core.insert(e, boxes[e])
    for _ in range(4):
        pairs = ref.find_all_intersections()
        assert len(pairs) > 3000
        assert core.find_all_intersections() == pairs
        flat = list(core.find_all_intersections_array())
        assert [tuple(flat[i: i + 2]) for i in range(0, len(flat), 2)] == pairs
        for e in rng.sample(sorted(boxes), 600):
            x0, y0, x1, y1 = boxes[e]
            dx, dy = rng.uniform(-1, 1), rng.uniform(-1, 1)
            if not wrap:
                dx, dy = min(max(dx, -x0), 60 - x1), min(max(dy, -y0), 60 - y1)
            boxes[e] = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
            ref.move(e, boxes[e])
            core.move(e, boxes[e])


def brute_pairs(boxes: dict[int, tuple[float, float, float, float]]) -> list[tuple[int, int]]:
    """Every pair of ids whose boxes meet (touching counts), sorted: the model."""
    ids = sorted(boxes)
    return [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
            if boxes[a][0] <= boxes[b][2] and boxes[b][0] <= boxes[a][2]
            and boxes[a][1] <= boxes[b][3] and boxes[b][1] <= boxes[a][3]]


def same_pairs_three_ways(ref: PyQuadTree, core: Any,
                          boxes: dict[int, tuple[float, float, float, float]]) -> None:
    """Both trees' pairs, listed and flat, are the model's (a plain tree's boxes)."""
    pairs = brute_pairs(boxes)
    assert ref.find_all_intersections() == pairs
    assert core.find_all_intersections() == pairs
    flat = core.find_all_intersections_array()
    assert list(flat) == [e for pair in pairs for e in pair]


# Nodes of every make for the pair search: it tests every pair of a node's records when they
# are few, and sorts and sweeps them when that would cost more (many own records, or a few
# against a long inherited list, which arrives in no order): each of these trees has both.
CROWDS = {
    # a leaf at the depth limit holding hundreds: swept
    "deep leaf": dict(threshold=2, max_depth=2),
    # long strips across the root's split lines, inherited by every node below, against a
    # few own boxes each: tested, and swept where a leaf holds enough of its own
    "strips": dict(threshold=12, max_depth=4),
    # the default: most nodes tested, the root's straddlers swept
    "default": dict(threshold=16, max_depth=8),
}


def crowd_boxes(kind: str, rng: random.Random,
                n: int) -> dict[int, tuple[float, float, float, float]]:
    """``n`` boxes in [0, 100]^2 for CROWDS[kind]: identical boxes, zero-size ones, boxes
    touching exactly, and (``strips``) long strips across the middle."""
    boxes: dict[int, tuple[float, float, float, float]] = {}
    for e in range(n):
        roll = rng.random()
        if kind == "strips" and roll < 0.3:
            y = rng.uniform(0, 99)
            boxes[e] = (rng.uniform(0, 45), y, rng.uniform(55, 100), y + rng.choice([0.0, 0.5]))
        elif roll < 0.1 and boxes:
            boxes[e] = boxes[rng.choice(list(boxes))]  # identical to another
        elif roll < 0.2:
            x, y = float(rng.randrange(100)), float(rng.randrange(100))
            boxes[e] = (x, y, x, y)  # zero-size, on the integer grid other boxes touch
        else:
            x, y = float(rng.randrange(97)), float(rng.randrange(97))
            boxes[e] = (x, y, x + rng.choice([1.0, 2.0, 3.0]), y + rng.choice([0.0, 1.0, 3.0]))
    return boxes


@pytest.mark.parametrize("kind", sorted(CROWDS))
def test_the_pair_search_tests_and_sweeps_nodes_of_every_make(kind: str) -> None:
    # The model is brute force; boxes move between searches (a leaf's list out of order) and
    # some leave and come back, so the search re-reads lists that changed since it last ran.
    rng = random.Random(23)
    options: dict[str, Any] = CROWDS[kind]
    ref = PyQuadTree((0, 0, 100, 100), **options)
    core = cquadtree().QuadTree((0, 0, 100, 100), **options)
    boxes = crowd_boxes(kind, rng, 600)
    for e, box in boxes.items():
        ref.insert(e, box)
        core.insert(e, box)
    for _ in range(3):
        same_pairs_three_ways(ref, core, boxes)
        for e in rng.sample(sorted(boxes), 200):
            x0, y0, x1, y1 = boxes[e]
            dx, dy = float(rng.randrange(-2, 3)), float(rng.randrange(-2, 3))
            dx, dy = min(max(dx, -x0), 100 - x1), min(max(dy, -y0), 100 - y1)
            boxes[e] = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
            ref.move(e, boxes[e])
            core.move(e, boxes[e])
        for e in rng.sample(sorted(boxes), 20):
            ref.remove(e)
            core.remove(e)
            ref.insert(e, boxes[e])
            core.insert(e, boxes[e])
    assert len(ref.find_all_intersections()) > 200


@pytest.mark.parametrize("strips", [40, 63, 64, 65, 200])
def test_a_few_boxes_against_a_long_inherited_list(strips: int) -> None:
    # Strips across the root's split lines, inherited by every child, and one small box in
    # each child: a node of one own record against dozens to hundreds inherited is tested
    # pair by pair (around 64 records the tests change how they step through the pairs).
    rng = random.Random(strips)
    boxes: dict[int, tuple[float, float, float, float]] = {}
    for e in range(strips):
        y = rng.uniform(0, 99)
        boxes[e] = (rng.uniform(0, 49), y, rng.uniform(51, 100), y + rng.uniform(0, 1))
    for e, (x, y) in enumerate([(20.0, 20.0), (70.0, 30.0), (10.0, 80.0), (90.0, 60.0)]):
        boxes[strips + e] = (x, y, x + 5.0, y + 10.0)
    ref = PyQuadTree((0, 0, 100, 100), threshold=1, max_depth=1)
    core = cquadtree().QuadTree((0, 0, 100, 100), threshold=1, max_depth=1)
    ref.insert_many(list(boxes), list(boxes.values()))
    core.insert_many(list(boxes), list(boxes.values()))
    same_pairs_three_ways(ref, core, boxes)
    assert any(max(pair) >= strips for pair in brute_pairs(boxes))  # the small boxes meet some


#: Coordinates a pair search can trip on: the float range's ends, subnormals, signed zeros,
#: and values that differ by one step.
PAIR_EDGES = [-MAX, -1e300, -1.0, -TINY, -0.0, 0.0, TINY, 1.0, 1.0 + 2**-52, 1e300, MAX]

edge_box = st.tuples(st.sampled_from(PAIR_EDGES), st.sampled_from(PAIR_EDGES),
                     st.sampled_from(PAIR_EDGES), st.sampled_from(PAIR_EDGES)).map(
    lambda c: (min(c[0], c[2]), min(c[1], c[3]), max(c[0], c[2]), max(c[1], c[3])))


@settings(max_examples=60, deadline=None)
@given(st.lists(edge_box, min_size=1, max_size=60),
       st.lists(st.sampled_from([-(2**63), -1, 0, 1, 2**62, 2**63 - 1]), max_size=6),
       st.sampled_from([(1, 1), (2, 3), (4, 8), (16, 8)]))
def test_the_pair_search_on_extreme_boxes_and_ids(
    listed: list[tuple[float, float, float, float]], extreme_ids: list[int],
    shape: tuple[int, int],
) -> None:
    # Identical boxes pile up (a leaf at the depth limit: swept), the rest spread over
    # nodes from the float range's ends to zero (tested); ids from the int64 range's ends
    # come out as the smaller first.
    ids = list(dict.fromkeys(extreme_ids + list(range(len(listed)))))[: len(listed)]
    boxes = dict(zip(ids, listed, strict=True))
    ref = PyQuadTree(threshold=shape[0], max_depth=shape[1])
    core = cquadtree().QuadTree(threshold=shape[0], max_depth=shape[1])
    ref.insert_many(list(boxes), list(boxes.values()))
    core.insert_many(list(boxes), list(boxes.values()))
    same_pairs_three_ways(ref, core, boxes)


# -- wrapped (toroidal) trees, side by side (issue 28) -----------------------------------------

#: Periods: plain, offset and unequal, tiny, subnormal, huge, and one near the float range
#: (its width 1.6e308, its images past the range).
TORUS_PERIODS = (
    (0.0, 0.0, 10.0, 10.0),
    (-3.0, 5.0, 9.5, 13.0),
    (0.0, 0.0, 1e-3, 1e-3),
    (0.0, 0.0, 2.0**-10, 2.0**-9),
    (0.0, 0.0, 1e-310, 3e-310),
    (0.0, -1e15, 1e15, 1e15),
    (-8e307, -8e307, 8e307, 8e307),
    (1e300, 0.0, 1.5e300, 7.0),
)


class Chooser:
    """The random choices of ``TorusDriver``: from a seed (``random.Random``), or drawn by
    hypothesis (``Drawn``), so that one driver serves the seeded soak and the shrinking
    test."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def randint(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def random(self) -> float:
        return self.rng.random()

    def choice(self, options: list[Any] | tuple[Any, ...]) -> Any:
        return options[self.randint(0, len(options) - 1)]


class Drawn(Chooser):
    """``Chooser`` whose every choice hypothesis draws."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def randint(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def random(self) -> float:
        return self.randint(0, 1023) / 1024


class TorusDriver:
    """Random sequences of every update and query on a Pair of wrapped trees: boxes near
    the period and far from it, across one seam or both, exactly half a period wide or
    wider (refused), radii past half the period (refused), casts across the seams, states
    crossing between the classes, and the errors of each."""

    def __init__(self, choose: Chooser) -> None:
        self.c = c = choose
        self.period: tuple[float, float, float, float] = c.choice(TORUS_PERIODS)
        x0, y0, x1, y1 = self.period
        self.w, self.h = x1 - x0, y1 - y0
        hint = c.choice([None, None, Box(x0, y0, x1, y1), Box(0.0, 0.0, 1.0, 1.0)])
        self.pair = Pair(hint, c.choice([1, 2, 4, 16]), c.choice([0, 3, 8]))
        self.pair.ref = PyQuadTree(hint, threshold=self.pair.ref.threshold,
                                   max_depth=self.pair.ref.max_depth, wrap=self.period)
        self.pair.nat = cquadtree().QuadTree(hint, threshold=self.pair.nat.threshold,
                                             max_depth=self.pair.nat.max_depth, wrap=self.period)
        self.next_id = 1
        self.ids: list[int] = []

    def coord(self, axis: int) -> float:
        """A coordinate on a grid of 1/64 of the period, mostly near it, some periods away,
        some seams exactly; now and then any float."""
        c = self.c
        origin, p = (self.period[0], self.w) if axis == 0 else (self.period[1], self.h)
        if c.random() < 0.05:
            return _float(c.rng) if type(c) is Chooser else float(c.choice(EDGES))
        span = c.choice([(-64, 128), (-64, 128), (-64 * 40, 64 * 40)])
        lo, hi = span
        return float(origin + c.randint(lo, hi) * (p / 64))

    def box(self) -> tuple[float, float, float, float]:
        c = self.c
        x, y = self.coord(0), self.coord(1)
        if c.random() < 0.15:  # across both seams at once
            x, y = self.period[2] - self.w / 64, self.period[3] - self.h / 64
        sizes = [0, 1, 5, 16, 32, 32, 33]  # 32/64 is exactly half, 33 too wide
        bw, bh = c.choice(sizes) * (self.w / 64), c.choice(sizes) * (self.h / 64)
        return (x, y, x + bw, y + bh)

    def some_id(self) -> int:
        if self.ids and self.c.random() < 0.85:
            return int(self.c.choice(self.ids))
        return self.next_id + self.c.randint(0, 5)

    def new_id(self) -> int:
        self.next_id += self.c.randint(1, 2)
        return self.next_id

    def point(self) -> tuple[float, float]:
        return self.coord(0), self.coord(1)

    def radius(self) -> float:
        half = min(self.w, self.h) * 0.5
        return float(self.c.choice([0.0, half / 8, half / 2, half, half * 1.5, self.w * 3]))

    def step(self) -> None:
        c, pair = self.c, self.pair
        op = c.choice([
            "insert", "insert", "insert_many", "insert_records", "move", "move", "move_many",
            "move_records", "remove", "query", "point", "radius", "radius_many", "nearest",
            "cast", "pairs", "state",
        ])
        getattr(self, "op_" + op)()
        pair.check()

    def op_insert(self) -> None:
        e = self.new_id()
        self.pair.same("insert", e, self.box())
        if e in self.pair.ref:
            self.ids.append(e)

    def op_insert_many(self) -> None:
        ids: list[object] = [self.new_id() for _ in range(self.c.randint(0, 6))]
        if ids and self.ids and self.c.random() < 0.2:
            ids[-1] = self.c.choice(self.ids)  # already indexed
        boxes: list[object] = [self.box() for _ in ids]
        self.pair.same_batch("insert_many", ids, boxes, self.c.random() < 0.5)
        self.ids = sorted(self.pair.ref)

    def op_insert_records(self) -> None:
        recs = [(*self.box(), self.new_id()) for _ in range(self.c.randint(0, 4))]
        self.pair.same("insert_records", recs)
        self.ids = sorted(self.pair.ref)

    def op_move(self) -> None:
        self.pair.same("move", self.some_id(), self.box())

    def op_move_many(self) -> None:
        ids: list[object] = [self.some_id() for _ in range(self.c.randint(0, 6))]
        boxes: list[object] = [self.box() for _ in ids]
        self.pair.same_batch("move_many", ids, boxes, self.c.random() < 0.5,
                             atomic=self.c.random() < 0.5)

    def op_move_records(self) -> None:
        self.pair.same("move_records", [(*self.box(), self.some_id()) for _ in range(3)])

    def op_remove(self) -> None:
        e = self.some_id()
        self.pair.same("remove" if self.c.random() < 0.5 else "discard", e)
        self.ids = sorted(self.pair.ref)

    def op_query(self) -> None:
        x, y = self.point()
        k = self.c.choice([0, 1, 32, 63, 64, 65, 200])
        high = self.c.choice([0, 64]) * self.h / 64
        self.pair.same("query", (x, y, x + k * self.w / 64, y + high))

    def op_point(self) -> None:
        self.pair.same("query_point", *self.point())

    def op_radius(self) -> None:
        self.pair.same("query_radius", *self.point(), self.radius())

    def op_radius_many(self) -> None:
        points = [self.point() for _ in range(self.c.randint(0, 4))]
        radius: float | list[float] = self.radius() if self.c.random() < 0.5 else [
            self.radius() for _ in points]
        ref = outcome(lambda: self.pair.ref.query_radius_many(points, radius))
        nat = outcome(lambda: self.pair.nat.query_radius_many(points, radius))
        assert nat == ref, f"query_radius_many({points!r}, {radius!r})"
        flat = array("d", [v for p in points for v in p])
        assert outcome(lambda: self.pair.nat.query_radius_many(flat, radius)) == ref

    def op_nearest(self) -> None:
        x, y = self.point()
        k = self.c.choice([1, 2, 5])
        if self.c.random() < 0.5:
            self.pair.same("nearest", x, y, k)
        else:
            self.pair.same("nearest", x, y, k, where=lambda e: e % 3 != 0,
                           max_distance=self.radius())

    def op_cast(self) -> None:
        c = self.c
        (ax, ay), (bx, by) = self.point(), self.point()
        if c.random() < 0.5:
            self.pair.same("raycast", ax, ay, bx, by)
            self.pair.same("raycast_first", ax, ay, bx, by, where=lambda e: e % 2 == 1)
        else:
            bw, bh = c.randint(0, 40) * self.w / 64, c.randint(0, 40) * self.h / 64
            moving = (ax, ay, ax + bw, ay + bh)
            self.pair.same("cast_box", moving, bx - ax, by - ay)
            self.pair.same("cast_box_first", moving, bx - ax, by - ay)

    def op_pairs(self) -> None:
        self.pair.same("find_all_intersections")
        self.pair.same("find_all_intersections_array")
        self.pair.same("find_intersections_for", [self.some_id() for _ in range(3)])
        self.pair.same("query_entity", self.some_id())

    def op_state(self) -> None:
        """A state saved by either class loads in the other; a bad period in it is refused
        alike; copies keep the period."""
        pair = self.pair
        pair.compare_all()
        ref_state, nat_state = state_of(pair.ref), state_of(pair.nat)
        into_nat = cquadtree().QuadTree.__new__(cquadtree().QuadTree)
        into_nat.__setstate__(ref_state)
        into_ref = reference_from_state(nat_state)
        for tree in (into_nat, into_ref, copy.copy(pair.nat), copy.deepcopy(pair.nat)):
            tree.check()
            assert canon(state_of(tree)) == canon(ref_state)
            assert tree.state_hash() == pair.ref.state_hash()
        bad = {**ref_state, "wrap": self.c.choice([(0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1e-3, 1e-3)])}
        targets = (PyQuadTree(Box(0, 0, 1, 1)), cquadtree().QuadTree(Box(0, 0, 1, 1)))
        got = [outcome(lambda t=t: t.__setstate__(bad)) for t in targets]  # type: ignore[misc]
        assert got[0] == got[1]
        assert canon(state_of(targets[0])) == canon(state_of(targets[1]))

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
        self.pair.compare_all()


@pytest.mark.parametrize("seed", range(16))
def test_wrapped_trees_agree(seed: int) -> None:
    TorusDriver(Chooser(random.Random(seed))).run(60)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_wrapped_trees_agree_drawn(data: st.DataObject) -> None:
    TorusDriver(Drawn(data)).run(25)
