"""QuadTree.query_radius_many: neighbours of many points as a CSR pair of arrays (issue 28).

Both classes against brute force (``box.distance_to_point(x, y) <= r``) and against a loop
of ``query_radius``; the compiled class against the reference, answer for answer and error
for error, for every kind of argument; Python run while the arguments are read that changes
the tree.
"""

from __future__ import annotations

import ctypes
import math
import random
import re
from array import array
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _budget import budget
from hypothesis import given
from hypothesis import strategies as st
from test_quadtree import boxes, coordinate, near_edge, subnormal

from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as PyQuadTree

try:
    from ecs_spatial._cquadtree import QuadTree as CQuadTree
except ImportError:  # a pure-Python build: nothing to compare
    CQuadTree = None  # type: ignore[assignment,misc]

needs_core = pytest.mark.skipif(CQuadTree is None, reason="the C core is not built")
CLASSES = [PyQuadTree] if CQuadTree is None else [PyQuadTree, CQuadTree]
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
MAX = 1.7976931348623157e308

radius = st.floats(0, 60) | near_edge.map(abs) | subnormal.map(abs) | st.just(0.0)
point = st.tuples(coordinate, coordinate)
hints = st.sampled_from([None, (0, 0, 100, 100), (-1e308, -1e308, 1e308, 1e308)])


def filled(cls: type, hint: object, world: list[Box]) -> Any:
    tree = cls(hint, threshold=2)
    for entity, box in enumerate(world):
        tree.insert(entity, box)
    return tree


def split(answer: tuple[array[int], array[int]], n: int) -> list[list[int]]:
    """The per-point lists of a CSR answer, its shape checked."""
    offsets, ids = answer
    assert type(offsets) is array and type(ids) is array
    assert offsets.typecode == "q" and ids.typecode == "q"
    assert len(offsets) == n + 1 and offsets[0] == 0 and offsets[-1] == len(ids)
    assert all(offsets[i] <= offsets[i + 1] for i in range(n))
    return [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(n)]


def as_points(pairs: list[tuple[float, float]], kind: str) -> object:
    flat = [c for pair in pairs for c in pair]
    if kind == "list":
        return pairs
    if kind == "generator":
        return (pair for pair in pairs)
    if kind == "flat":
        return array("d", flat)
    if kind == "rows":  # a (n, 2) C-contiguous buffer, as numpy's float64 arrays are
        return memoryview(array("d", flat)).cast("B").cast("d", (len(pairs), 2)) if pairs \
            else ((ctypes.c_double * 2) * 0)()
    return [list(pair) for pair in pairs]  # lists, not tuples: through many_point


# ---------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("cls", CLASSES)
@budget(60)
@given(
    hint=hints,
    world=st.lists(boxes, max_size=40),
    pairs=st.lists(point, max_size=12),
    radii=st.lists(radius, min_size=12, max_size=12),
    kind=st.sampled_from(["list", "generator", "flat", "rows", "lists"]),
    per_point=st.sampled_from(["one", "list", "array"]),
)
def test_each_point_s_ids_are_query_radius_s_and_brute_force_s(
    cls: type, hint: object, world: list[Box], pairs: list[tuple[float, float]],
    radii: list[float], kind: str, per_point: str,
) -> None:
    """``ids[offsets[i]:offsets[i + 1]]`` is ``query_radius(x_i, y_i, r_i)``, which is every
    id whose box is within r_i of the point (Box.distance_to_point), ascending: for uniform,
    clustered, zero-size, huge, far and float-range-edge worlds, radii of 0, subnormal,
    ordinary and near the float range."""
    tree = filled(cls, hint, world)
    rs = radii[:len(pairs)]
    given_radius: object = {"one": radii[0], "list": rs, "array": array("d", rs)}[per_point]
    got = split(tree.query_radius_many(as_points(pairs, kind), given_radius), len(pairs))
    for i, (x, y) in enumerate(pairs):
        r = radii[0] if per_point == "one" else rs[i]
        expected = sorted(e for e, b in enumerate(world) if b.distance_to_point(x, y) <= r)
        assert got[i] == tree.query_radius(x, y, r) == expected


@pytest.mark.parametrize("cls", CLASSES)
def test_no_point_gives_one_offset_and_no_id(cls: type) -> None:
    tree = filled(cls, (0, 0, 100, 100), [Box(1, 1, 2, 2)])
    no_points: list[object] = [[], array("d"), iter(()), ((ctypes.c_double * 2) * 0)()]
    for points in no_points:
        offsets, ids = tree.query_radius_many(points, 5.0)
        assert offsets == array("q", [0]) and ids == array("q")
    assert tree.query_radius_many([], []) == (array("q", [0]), array("q"))
    empty = cls()  # no root yet
    assert split(empty.query_radius_many([(0.0, 0.0)], 1.0), 1) == [[]]


@pytest.mark.parametrize("cls", CLASSES)
def test_arguments_bind_by_keyword_and_numbers_of_every_kind(cls: type) -> None:
    """The reference's signature (points, radius), by keyword too; ints and iterables of
    radii as query_radius takes each."""
    tree = filled(cls, (0, 0, 100, 100), [Box(i, i, i + 1, i + 1) for i in range(0, 100, 5)])
    want = split(tree.query_radius_many([(10.0, 10.0), (52.0, 50.0)], 3.0), 2)
    assert want == [tree.query_radius(10, 10, 3), tree.query_radius(52, 50, 3)]
    assert split(tree.query_radius_many(radius=3, points=[(10, 10), (52, 50)]), 2) == want
    assert split(tree.query_radius_many([(10, 10), (52, 50)], [3, 3.0]), 2) == want
    assert split(tree.query_radius_many([(10, 10), (52, 50)], (r for r in (3, 3))), 2) == want
    # A buffer of no dimension (a numpy scalar is one) is one radius, taken as query_radius
    # takes it: numpy.float64 is a float; a bare 0-d memoryview is no number to either.
    zero_d = memoryview(array("d", [3.0])).cast("B").cast("d", ())
    with pytest.raises(TypeError, match=r"^radius must be a real number, got <memory"):
        tree.query_radius_many([(10, 10)], zero_d)
    with pytest.raises(TypeError, match=r"^radius must be a real number, got <memory"):
        tree.query_radius(10, 10, zero_d)


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("points", "radius", "error", "text"), [
    ([(1.0, 2.0), (3.0,)], 1.0, TypeError,
     "point 1: a query point is a pair (x, y), got (3.0,)"),
    ([(1.0, 2.0), None], 1.0, TypeError, "point 1: a query point is a pair (x, y), got None"),
    ([(1.0, "a")], 1.0, TypeError, "point 0: query point y must be a real number, got 'a'"),
    ([(True, 1.0)], 1.0, TypeError, "point 0: query point x must be a real number, got True"),
    ([(0.0, 0.0), (math.nan, 1)], 1.0, ValueError,
     "point 1: query point (nan, 1) must have finite coordinates"),
    (array("d", [0, 0, 0, math.inf]), 1.0, ValueError,
     "point 1: query point (0.0, inf) must have finite coordinates"),
    (array("d", [1, 2, 3]), 1.0, ValueError,
     "query_radius_many: a buffer of points holds 2 floats per point (flat, or rows of 2), "
     "got 3 floats in 1 dimension(s)"),
    ([(0.0, 0.0)], -1, ValueError, "radius must be finite and >= 0, got -1"),
    ([(0.0, 0.0)], math.nan, ValueError, "radius must be finite and >= 0, got nan"),
    ([(0.0, 0.0)], math.inf, ValueError, "radius must be finite and >= 0, got inf"),
    ([(0.0, 0.0)], True, TypeError, "radius must be a real number, got True"),
    ([(0.0, 0.0), (1.0, 1.0)], [1.0, -0.5], ValueError,
     "point 1: radius must be finite and >= 0, got -0.5"),
    ([(0.0, 0.0)], array("d", [math.inf]), ValueError,
     "point 0: radius must be finite and >= 0, got inf"),
    ([(0.0, 0.0)], [1.0, 2.0], ValueError, "query_radius_many: points and radii differ in length"),
    ([(0.0, 0.0)] * 2, array("d", [1.0]), ValueError,
     "query_radius_many: points and radii differ in length"),
    ([(0.0, 0.0)] * 2, memoryview(array("d", [1.0] * 4)).cast("B").cast("d", (2, 2)),
     ValueError, "query_radius_many: a buffer of radii is flat"),
    (None, 1.0, TypeError, "'NoneType' object is not iterable"),
])
def test_refusals_name_the_point(cls: type, points: object, radius: object,
                                 error: type[Exception], text: str) -> None:
    """query_radius's errors led by the point's position; the buffers' shape and length
    errors in move_many's words; a bad radius for all is query_radius's own error."""
    tree = filled(cls, (0, 0, 100, 100), [Box(1, 1, 2, 2)])
    before = tree.__getstate__()
    with pytest.raises(error) as caught:
        tree.query_radius_many(points, radius)
    assert str(caught.value) == text
    assert tree.__getstate__() == before


# ---------------------------------------------------------------------------- differential


class RealNumber(float):
    """A float subclass with a ``__float__`` of its own (Python run per coordinate)."""

    def __float__(self) -> float:
        return float.__float__(self) + 0.25

    def __repr__(self) -> str:
        return f"RealNumber({float.__float__(self)})"


class Broken(float):
    """A float subclass whose ``__float__`` raises."""

    def __float__(self) -> float:
        raise ArithmeticError("no float today")

    def __repr__(self) -> str:
        return "Broken()"


def flaky(items: list[object], stop: int) -> Iterator[object]:
    for i, item in enumerate(items):
        if i == stop:
            raise LookupError("the iterable broke")
        yield item


def hostile_points(rng: random.Random) -> object:
    """Points of every kind a caller may pass, good and bad, from ``rng``."""
    n = rng.randint(0, 6)
    pairs = [(rng.uniform(-10, 110), rng.uniform(-10, 110)) for _ in range(n)]
    flat = [c for p in pairs for c in p]
    kind = rng.randrange(17)
    if kind < 5:
        return as_points(pairs, ["list", "generator", "flat", "rows", "lists"][kind])
    bad: list[object] = [None, (1.0,), (1.0, 2.0, 3.0), "ab", (math.nan, 0.0), (0.0, -math.inf),
                         (True, 0.0), (10**400, 0.0), (RealNumber(3.0), 4), (Broken(1.0), 0.0),
                         (ctypes.c_double(1.0), 0.0), 7, {1.0: 0, 2.0: 0}, b"xy", Box(0, 0, 1, 1),
                         [math.nan, 0.0], [1.0, 2.0, 3.0], ["a", 1.0], [1, 2.5], [2.0]]
    if kind == 5 and n:
        items: list[object] = list(pairs)
        items[rng.randrange(n)] = rng.choice(bad)
        return items
    if kind == 6:
        return flaky(list(pairs), rng.randint(0, n))
    if kind == 7:
        return array("f", flat)
    if kind == 8:
        return array("i", [int(c) for c in flat])
    if kind == 9:
        return bytes(len(flat))
    if kind == 10:  # a 3-D buffer of doubles
        return memoryview(array("d", [0.0] * 8)).cast("B").cast("d", (2, 2, 2))
    if kind == 11:  # an odd flat length
        return array("d", [*flat, 1.0])
    if kind == 12:  # rows of 4: boxes, not points
        return memoryview(array("d", [0.0] * 8)).cast("B").cast("d", (2, 4))
    if kind == 13:  # not contiguous: read as an iterable of floats
        return memoryview(array("d", flat * 2))[::2]
    if kind == 14:
        return array("d", [*flat[:-1], rng.choice([math.nan, math.inf, -math.inf])]) if flat \
            else array("d", [math.nan, 0.0])
    if kind == 15:
        return rng.choice([None, 5, 1.5, "abcd", ctypes.c_double(2.0)])
    return [(RealNumber(x), y) for x, y in pairs]


def hostile_radius(rng: random.Random, n: int) -> object:
    """A radius for all or one per point, good and bad, from ``rng``."""
    rs = [rng.choice([0.0, 5e-324, rng.uniform(0, 40), 1e308]) for _ in range(n)]
    kind = rng.randrange(12)
    if kind < 3:
        return [rng.uniform(0, 40), rs, array("d", rs)][kind]
    if kind == 3:
        return iter(rs)
    if kind == 4:
        return rng.choice([-1, -0.0, math.nan, math.inf, True, 10**400, 7, RealNumber(2.0),
                           Broken(1.0), None, "a", ctypes.c_double(3.0), 2**60])
    if kind == 5:  # the wrong length
        return rng.choice([[*rs, 1.0], rs[:-1], array("d", [*rs, 2.0]), array("d", rs[1:])])
    if kind == 6 and n:
        items: list[object] = list(rs)
        items[rng.randrange(n)] = rng.choice([-1.0, math.nan, math.inf, True, "r", None,
                                              10**400, RealNumber(1.0), Broken(0.0)])
        return items
    if kind == 7:
        return array("d", [*rs[:-1], rng.choice([-1.0, math.nan, math.inf])]) if rs \
            else array("d", [math.nan])
    if kind == 8:
        small = [min(r, 1e6) for r in rs]
        return rng.choice([array("f", small), array("q", [int(r) for r in small]), bytes(n)])
    if kind == 9:
        return memoryview(array("d", [1.0] * 4)).cast("B").cast("d", (2, 2))
    if kind == 10:
        return flaky(list(rs), rng.randint(0, n))
    return memoryview(array("d", [4.0])).cast("B").cast("d", ())  # a 0-d buffer: one radius


def outcome(call: Callable[..., Any], *args: object) -> tuple[object, ...]:
    """The answer as plain values, or the error's type and text."""
    try:
        offsets, ids = call(*args)
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, ADDRESS.sub(" at 0x", str(error)))
    return (type(offsets).__name__, offsets.typecode, offsets.tolist(),
            type(ids).__name__, ids.typecode, ids.tolist())


@needs_core
@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_class_answers_and_refuses_as_the_reference(seed: int) -> None:
    """Hostile arguments of every kind (buffers of each shape and of other formats, bytes,
    odd lengths, iterables with bad items or that break, bools, huge ints, numbers whose
    __float__ runs or raises): the same answer, or the same error type and text."""
    rng = random.Random(seed)
    world = [Box(x, y, x + rng.uniform(0, 12), y + rng.uniform(0, 12))
             for x, y in ((rng.uniform(-10, 100), rng.uniform(-10, 100)) for _ in range(300))]
    trees = [filled(cls, (0, 0, 100, 100), world) for cls in (PyQuadTree, CQuadTree)]
    kinds = set()
    for _ in range(400):
        state = rng.getstate()
        answers = []
        for tree in trees:  # the arguments built twice: an iterator is consumed by its call
            rng.setstate(state)
            points = hostile_points(rng)
            n = rng.randint(0, 6) if rng.random() < 0.2 else _length(points)
            answers.append(outcome(tree.query_radius_many, points, hostile_radius(rng, n)))
        assert answers[0] == answers[1]
        kinds.add(answers[0][0] == "raised")
    assert kinds == {True, False}


def _length(points: object) -> int:
    try:
        return len(points)  # type: ignore[arg-type]
    except TypeError:
        return 3


@needs_core
@pytest.mark.parametrize("args", [(), ([],), ([], 1.0, 2.0)], ids=["none", "one", "three"])
def test_a_call_that_does_not_bind_is_refused_alike(args: tuple[object, ...]) -> None:
    answers = [outcome(cls().query_radius_many, *args) for cls in (PyQuadTree, CQuadTree)]
    assert answers[0] == answers[1] and answers[0][0] == "raised"


# ---------------------------------------------------------------------------- Python inside


class Inserter(float):
    """A coordinate whose ``__float__`` inserts ``entity`` at (50, 50) into ``tree``."""

    tree: Any = None
    entity = 99

    def __float__(self) -> float:
        type(self).tree.insert(type(self).entity, (50.0, 50.0, 51.0, 51.0))
        return 50.0


class Remover(float):
    """A radius whose ``__float__`` removes entity 0 from ``tree``."""

    tree: Any = None

    def __float__(self) -> float:
        type(self).tree.discard(0)
        return 30.0


@pytest.mark.parametrize("cls", CLASSES)
def test_python_that_changes_the_tree_while_the_arguments_are_read(cls: type) -> None:
    """The arguments are read in full before the tree (the tree is not held busy: the change
    goes through): an insert by point 1's ``__float__`` is in every point's answer, point
    0's too, and a removal by a radius's is in none; the tree is whole afterwards."""
    tree = filled(cls, (0, 0, 100, 100), [Box(49, 49, 50, 50), Box(52, 52, 53, 53)])
    Inserter.tree = Remover.tree = tree
    try:
        got = split(tree.query_radius_many([(50.0, 50.0), (Inserter(0.0), 50.0)], 5.0), 2)
        assert got == [[0, 1, 99], [0, 1, 99]]
        tree.remove(99)
        got = split(tree.query_radius_many([(50.0, 50.0), (51.0, 51.0)],
                                           [10.0, Remover(0.0)]), 2)
        assert got == [[1], [1]] and 0 not in tree
    finally:
        Inserter.tree = Remover.tree = None
    tree.check()


@pytest.mark.parametrize("cls", CLASSES)
def test_a_read_while_the_tree_is_busy_answers(cls: type) -> None:
    """Called from a where= predicate (the tree busy in nearest), it reads the tree as the
    other queries do there: the answer, no busy error."""
    tree = filled(cls, (0, 0, 100, 100), [Box(i, i, i + 1, i + 1) for i in range(10)])
    seen: list[list[list[int]]] = []

    def where(entity: int) -> bool:
        seen.append(split(tree.query_radius_many([(0.0, 0.0), (9.5, 9.5)], 1.0), 2))
        return True

    tree.nearest(5.0, 5.0, where=where)
    assert seen and all(s == [[0], [8, 9]] for s in seen)


@pytest.mark.parametrize("cls", CLASSES)
def test_extreme_points_and_radii(cls: type) -> None:
    """Points and radii at the float range's edges: the sums overflow, the answer is still
    brute force's."""
    world = [Box(-MAX, -MAX, -MAX, -MAX), Box(MAX, MAX, MAX, MAX), Box(0, 0, 5e-324, 5e-324),
             Box(-1e308, 0, 1e308, 0), Box(-MAX, -MAX, MAX, MAX)]
    tree = filled(cls, None, world)
    pairs = [(MAX, MAX), (-MAX, 0.0), (0.0, 0.0), (1e308, -1e308), (5e-324, 0.0)]
    for r in (0.0, 5e-324, 1.0, 1e308, MAX):
        got = split(tree.query_radius_many(array("d", [c for p in pairs for c in p]), r), 5)
        for (x, y), ids in zip(pairs, got, strict=True):
            assert ids == sorted(e for e, b in enumerate(world) if b.distance_to_point(x, y) <= r)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("seed", range(4))
def test_straddlers_read_through_their_snapshots_are_brute_force_s(cls: type, seed: int) -> None:
    """Hundreds of boxes across the split lines (own entries of the root and its children,
    read through their sorted snapshots), moved between the queries so that the snapshots
    go stale and are rebuilt: each point's ids are still brute force's, at the boundary too
    (radii that reach a box exactly)."""
    rng = random.Random(seed)
    world: list[Box] = []
    for _ in range(400):
        c = rng.choice([25.0, 50.0, 75.0])
        a, w = rng.uniform(-5, 105), rng.uniform(0, 3)
        side = rng.uniform(0.5, 2)
        world.append(Box(c - side, a, c + side, a + w) if rng.random() < 0.5
                     else Box(a, c - side, a + w, c + side))
    tree = filled(cls, (0, 0, 100, 100), world)
    for _ in range(6):
        pairs = [(rng.uniform(-10, 110), rng.uniform(-10, 110)) for _ in range(60)]
        radii = [rng.choice([0.0, rng.uniform(0, 4), rng.uniform(0, 30)]) for _ in pairs]
        near = rng.randrange(len(world))  # a radius that reaches a box exactly
        radii[0] = world[near].distance_to_point(*pairs[0])
        got = split(tree.query_radius_many(as_points(pairs, "flat"), array("d", radii)), 60)
        for (x, y), r, ids in zip(pairs, radii, got, strict=True):
            assert ids == sorted(e for e, b in enumerate(world) if b.distance_to_point(x, y) <= r)
        assert near in got[0]
        for _ in range(40):  # moves that make the snapshots stale
            e = rng.randrange(len(world))
            b = world[e]
            dx = rng.uniform(-2, 2)
            world[e] = Box(b.min_x + dx, b.min_y, b.max_x + dx, b.max_y)
            tree.move(e, world[e])
