"""``QuadTree.nodes(box)``: the nodes whose box intersects ``box``, for both classes.

The model is the whole listing filtered by the one boundary rule:
``[n for n in tree.nodes() if n.box.intersects(box)]``, in that order (a subsequence of
``nodes()``), on every kind of world of the differential tests (uniform, clustered, grid,
points, huge, far, zero-size, extreme floats, ints past 2**53) and one whose boxes lie beyond
where the root may grow, with query boxes drawn from the world, from the nodes' own edges
and split lines (touching counts), and from the extremes. The walk is counted: it opens no
subtree whose root misses the box. The compiled class gives the same nodes, and refuses a bad
box with ``query``'s error, text for text, when ``nodes`` is called.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_native_quadtree import BAD_BOXES, WORLDS, canon, random_box

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import NodeInfo
from ecs_spatial.quadtree import QuadTree as PyQuadTree

MAX = sys.float_info.max
Coords = tuple[float, float, float, float]
#: query's bad boxes, but None: nodes(None) is nodes().
BAD = tuple(bad for bad in BAD_BOXES if bad is not None)

needs_core = pytest.mark.skipif(not index.NATIVE, reason=f"no compiled core: {index.REASON}")


def world_box(rng: random.Random, world: str) -> Coords:
    """A box of ``world``; "beyond": farther out than the root may grow (2**64 times its
    bounds), so that the root keeps it among its own entries."""
    if world == "beyond":
        x = rng.choice((1.0, -1.0)) * 10.0 ** rng.uniform(25, 300)
        y = rng.uniform(-50, 150)
        return (x, y, x + abs(x) * rng.uniform(0, 1e-3), y + rng.uniform(0, 10))
    return random_box(rng, world)


def build(cls: type[PyQuadTree], world: str, seed: int, n: int, threshold: int,
          max_depth: int, bounded: bool) -> tuple[PyQuadTree, random.Random]:
    """A tree of ``n`` boxes of ``world`` (a fifth of them from "beyond" when the world is
    "beyond"), some removed again: the same calls give the same tree in either class."""
    rng = random.Random(seed)
    tree = cls(Box(0, 0, 100, 100) if bounded else None, threshold=threshold,
               max_depth=max_depth)
    for e in range(n):
        kind = world if world != "beyond" or rng.random() < 0.2 else "uniform"
        tree.insert(e, world_box(rng, kind))
    for e in range(0, n, 7):
        tree.remove(e)
    return tree, rng


def query_boxes(tree: PyQuadTree, rng: random.Random, world: str) -> Iterator[Coords]:
    """Boxes to ask about: of the world; a node's own box, its corners and split lines
    (points and segments that only touch); the whole float range; far from everything."""
    for _ in range(6):
        yield world_box(rng, world)
    infos = list(tree.nodes())
    for info in rng.sample(infos, min(4, len(infos))):
        x0, y0, x1, y1 = info.box
        cx, cy = info.box.center
        yield (x0, y0, x1, y1)
        yield (x1, y1, x1, y1)  # a corner: the node and those that share it
        yield (cx, y0, cx, y1)  # the vertical split line, as a segment
        yield (x0, cy, cx, cy)
    yield (-MAX, -MAX, MAX, MAX)
    yield (MAX, MAX, MAX, MAX)
    yield (-MAX, 0.0, -MAX, 0.0)


def model(tree: PyQuadTree, box: Coords) -> list[NodeInfo]:
    return [n for n in tree.nodes() if n.box.intersects(box)]


@settings(max_examples=60, deadline=None)
@given(
    world=st.sampled_from((*WORLDS, "beyond")),
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 150),
    threshold=st.integers(1, 8),
    max_depth=st.integers(0, 8),
    bounded=st.booleans(),
)
def test_nodes_in_a_box_are_the_filtered_listing(
    tree_class: type[PyQuadTree], world: str, seed: int, n: int, threshold: int,
    max_depth: int, bounded: bool
) -> None:
    """nodes(box) is nodes() filtered by Box.intersects, in the same order, for a Box and
    for a tuple of the same coordinates; every node listed meets the box."""
    tree, rng = build(tree_class, world, seed, n, threshold, max_depth, bounded)
    everything = list(tree.nodes())
    for q in query_boxes(tree, rng, world):
        want = model(tree, q)
        got = list(tree.nodes(q))
        assert got == want, q
        assert list(tree.nodes(box=Box(*q))) == want
        position = iter(everything)  # a subsequence of nodes(), order kept
        assert all(any(info == other for other in position) for info in got)
    assert list(tree.nodes(None)) == everything


def test_touching_counts_and_a_split_line_meets_all_four(tree_class: type[PyQuadTree]) -> None:
    """A point on the root's centre meets the root and its four children (closed boxes);
    a point just off it meets one child; a box touching the root's edge from outside meets
    the nodes along that edge; one a float step beyond meets none."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=1, max_depth=3)
    for e, (x, y) in enumerate(((10, 10), (80, 10), (10, 80), (80, 80), (60, 60))):
        tree.insert(e, (float(x), float(y), x + 5.0, y + 5.0))
    depth1 = {n.box for n in tree.nodes() if n.depth == 1}
    assert len(depth1) == 4
    centre = [n for n in tree.nodes((50, 50, 50, 50)) if n.depth <= 1]
    assert [n.depth for n in centre] == [0, 1, 1, 1, 1]
    assert [n.box for n in tree.nodes((25, 25, 25, 25)) if n.depth == 1] == [Box(0, 0, 50, 50)]
    edge = list(tree.nodes((100, 20, 130, 30)))
    assert edge and all(n.box.max_x == 100 for n in edge)
    assert list(tree.nodes((100.00000000000001, 20, 130, 30))) == []


def test_a_root_holding_boxes_beyond_it_is_listed_by_its_own_box(
    tree_class: type[PyQuadTree],
) -> None:
    """A box beyond where the root may grow stays among the root's own entries; nodes(box)
    around it lists nothing, since a node is listed by its box (NodeInfo.box), not by what
    it holds; a box that meets the root lists it, its entries counted as nodes() counts them."""
    tree = tree_class(Box(0, 0, 100, 100), threshold=2)
    far = (1e300, 0.0, 1.0001e300, 10.0)
    tree.insert(1, far)
    tree.insert(2, (10.0, 10.0, 20.0, 20.0))
    root = next(tree.nodes())
    assert root.entries >= 1 and not root.box.intersects(far)
    assert tree.query(far) == [1]
    assert list(tree.nodes(far)) == []
    assert next(tree.nodes((0, 0, 1, 1))) == root


def test_an_empty_tree_lists_nothing(tree_class: type[PyQuadTree]) -> None:
    """No root yet: nothing, whatever the box; bounds alone: the root, if the box meets it."""
    assert list(tree_class().nodes((0, 0, 1, 1))) == []
    tree = tree_class(Box(0, 0, 10, 10))
    assert [n.box for n in tree.nodes((10, 10, 20, 20))] == [Box(0, 0, 10, 10)]
    assert list(tree.nodes((11, 11, 20, 20))) == []


def test_subtrees_that_miss_the_box_are_not_opened() -> None:
    """The reference's walk reads the bounds of the nodes it lists and of their children,
    never deeper: for a small box in a deep tree, a few dozen reads out of thousands."""
    rng = random.Random(5)
    tree = PyQuadTree(Box(0, 0, 1000, 1000), threshold=2, max_depth=10)
    for e in range(3000):
        x, y = rng.uniform(0, 995), rng.uniform(0, 995)
        tree.insert(e, (x, y, x + 2, y + 2))
    total = len(list(tree.nodes()))
    reads = 0

    class Counted(list[Any]):
        def __getitem__(self, i: Any) -> Any:
            nonlocal reads
            reads += 1
            return super().__getitem__(i)

    tree._geom = Counted(tree._geom)  # read by the walk alone from here on
    for q in ((500.0, 500.0, 510.0, 505.0), (0.0, 0.0, 3.0, 3.0), (-5.0, -5.0, -1.0, -1.0)):
        reads = 0
        listed = list(tree.nodes(q))
        walked = reads
        assert listed == [n for n in tree.nodes() if n.box.intersects(q)]
        # each listed node read once to report it, each child of a listed internal node once
        assert walked <= 1 + 5 * len(listed), (q, walked, len(listed))
        assert walked < total // 20, (walked, total)


def test_a_bad_box_is_refused_as_query_refuses_it(tree_class: type[PyQuadTree]) -> None:
    """Each bad box raises what query raises for it, the same type and text, at the call
    (before any iteration), on a tree with nodes and on one without a root."""
    for tree in (tree_class(Box(0, 0, 10, 10)), tree_class()):
        for bad in BAD:
            with pytest.raises(Exception) as queried:
                tree.query(bad)  # type: ignore[arg-type]
            with pytest.raises(type(queried.value)) as listed:
                tree.nodes(bad)  # type: ignore[arg-type]  # no next(): refused at once
            assert str(listed.value) == str(queried.value), bad
            with pytest.raises(type(queried.value), match=r"\w"):
                tree.nodes(box=bad)  # type: ignore[arg-type]


def outcome(call: Any, *args: Any) -> object:
    try:
        return canon([tuple(n) for n in call(*args)])
    except Exception as error:  # the error is the answer here
        return ("raised", type(error).__name__, str(error))


@needs_core
@settings(max_examples=40, deadline=None)
@given(world=st.sampled_from((*WORLDS, "beyond")), seed=st.integers(0, 2**32 - 1),
       n=st.integers(0, 200), threshold=st.integers(1, 6))
def test_the_compiled_class_lists_what_the_reference_lists(
    world: str, seed: int, n: int, threshold: int
) -> None:
    """Differential: the same calls, the same nodes (boxes to the bit) for every query box,
    and the same errors for bad ones."""
    ref, rng = build(PyQuadTree, world, seed, n, threshold, 8, bounded=seed % 2 == 0)
    nat, _ = build(index.QuadTree, world, seed, n, threshold, 8, bounded=seed % 2 == 0)
    assert outcome(nat.nodes) == outcome(ref.nodes)
    for q in query_boxes(ref, rng, world):
        assert outcome(nat.nodes, q) == outcome(ref.nodes, q), q
    for bad in BAD:
        assert outcome(nat.nodes, bad) == outcome(ref.nodes, bad), bad
