"""The baselines ecs_spatial is measured against: brute force, sort-and-sweep, numpy sweeps,
the Tuts+ tutorial quadtree and a port of the seed design.

All answer by the closed-box rule of ``ecs_spatial.Box`` (touching counts) and return the same
sorted pairs: both ports test boxes as closed on purpose (the seed's ``Box::intersects``
treats touching boxes as disjoint, the tutorial leaves the test to the reader), and their
quadrant rules separate siblings strictly, so the closed test loses nothing. The ports keep
their article's structure and algorithm (recursion, node objects, constants, what is rebuilt
when) and are otherwise written as a competent Python programmer would (the box test inlined,
locals for hot attributes): making them slower would flatter us. ``tests/test_bench.py``
holds every baseline to brute force, touching boxes included.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from bench.harness import BoxT, ByOldBox, IndexContender, Pair, in_radius, in_view, sweep_pairs
from bench.world import Step, World

np: Any  # numpy, where the bench extra is installed
try:
    np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover
    np = None


def brute_pairs(boxes: dict[int, BoxT]) -> list[Pair]:
    """Every intersecting pair, by testing all n(n-1)/2 pairs. Complexity: O(n^2)."""
    items = sorted(boxes.items())
    out: list[Pair] = []
    n = len(items)
    for i in range(n):
        a, (ax0, ay0, ax1, ay1) = items[i]
        for j in range(i + 1, n):
            b, (bx0, by0, bx1, by1) = items[j]
            if ax0 <= bx1 and bx0 <= ax1 and ay0 <= by1 and by0 <= ay1:
                out.append((a, b))
    return out  # already sorted: a ascends with i, b with j


class BruteContender(IndexContender):
    """Brute force over the world's current boxes: nothing to maintain, O(n^2) per frame."""

    name = "brute force"

    def fill(self, world: World) -> None:
        self.world = world

    def update(self, world: World, step: Step) -> None:
        pass

    def pairs(self) -> list[Pair]:
        return brute_pairs(self.world.boxes())

    def query(self, box: BoxT) -> list[int]:
        return in_view(self.world.boxes(), box)

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        return in_radius(self.world.boxes(), x, y, r)


class SweepContender(BruteContender):
    """Sort-and-sweep on x over the world's current boxes, sorted from scratch every frame."""

    name = "sort-and-sweep"

    def pairs(self) -> list[Pair]:
        return sweep_pairs(self.world.boxes())


def positions(world: World, ids: list[int]) -> Any:
    """The boxes' positions as a game keeping them in numpy would have them: an (N, 4)
    float64 array of rows ``(x, y, x, y)`` in ``ids`` order (add the sizes for the boxes),
    one array a frame shared by every contender that asks (do not modify it), as a game
    keeps one."""
    key = (id(world), world.frame, len(ids))
    if _positions[0] != key:
        xs = np.array(world.xs)[ids]
        ys = np.array(world.ys)[ids]
        _positions[:] = [key, np.stack([xs, ys, xs, ys], axis=1)]
    return _positions[1]


_positions: list[Any] = [None, None]


class NumpySweep(IndexContender):
    """A sort-and-sweep in numpy over the positions a game keeps in numpy (copied from the
    world untimed, in ``before``): sorted on x, then each box against the box ``d`` places
    further, for d = 1, 2, ... while any still overlap in x (the strongest numpy sweep we
    wrote), or (``lists``) every x-candidate pair built by ``searchsorted`` + ``repeat``."""

    def __init__(self, *, lists: bool = False) -> None:
        self.lists = lists
        self.name = "numpy sweep, lists" if lists else "numpy sweep"

    def fill(self, world: World) -> None:
        self.order = ids = world.ids()
        self.ids = np.array(ids, dtype=np.int64)
        self.ws = np.array([world.ws[e] for e in ids])
        self.hs = np.array([world.hs[e] for e in ids])

    def before(self, world: World, step: Step) -> None:
        self.pos = positions(world, self.order)

    def update(self, world: World, step: Step) -> None:
        pass

    def pairs(self) -> tuple[Any, Any]:
        pos = self.pos
        x0 = pos[:, 0]
        order = np.argsort(x0, kind="stable") if self.lists else np.argsort(x0)
        sx0 = x0[order]
        sx1 = sx0 + self.ws[order]
        sy0 = pos[:, 1][order]
        sy1 = sy0 + self.hs[order]
        sid = self.ids[order]
        if self.lists:
            ends = np.searchsorted(sx0, sx1, side="right")
            counts = np.maximum(ends - np.arange(1, len(sx0) + 1), 0)
            i = np.repeat(np.arange(len(sx0)), counts)
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            j = np.arange(len(i)) - starts + i + 1
            keep = (sy0[j] <= sy1[i]) & (sy0[i] <= sy1[j])
            firsts, seconds = [sid[i[keep]]], [sid[j[keep]]]
        else:
            firsts, seconds = [], []
            d = 1
            # Box i against box i + d of the x order, for all i at once: whole-array slices,
            # no gathers; d stops at the most boxes starting inside one box's x extent.
            while d < len(sx0):
                hit = sx0[d:] <= sx1[:-d]
                if not hit.any():
                    break
                hit &= sy0[d:] <= sy1[:-d]
                hit &= sy0[:-d] <= sy1[d:]
                k = np.flatnonzero(hit)
                firsts.append(sid[k])
                seconds.append(sid[k + d])
                d += 1
        none = np.zeros(0, dtype=np.int64)
        return ordered(np.concatenate(firsts) if firsts else none,
                       np.concatenate(seconds) if seconds else none)

    def normal(self, raw: Any) -> list[Any]:
        return [pair_list(*raw[0])]


def ordered(a: Any, b: Any) -> tuple[Any, Any]:
    """Two id arrays as the pairs ``(lo, hi)``, ``lo < hi``, sorted: two arrays."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    by = np.lexsort((hi, lo))
    return lo[by], hi[by]


def pair_list(lo: Any, hi: Any) -> list[Pair]:
    """The pairs of two id arrays as a list of tuples."""
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


# -- the Tuts+ tutorial quadtree ----------------------------------------------------------

#: The tutorial's objects are ``Rectangle``s; ours carry the entity id along:
#: ``(x, y, width, height, id)``.
Rect = tuple[float, float, float, float, int]


class TutorialQuadtree:
    """"Quick Tip: Use Quadtrees to Detect Likely Collisions in 2D Space" (Tuts+): its
    ``Quadtree`` ported from its Java with its names and constants.

    Node bounds are integers, as in the tutorial (``(int)(bounds.getWidth() / 2)``); that
    only makes nodes slightly inexact, never answers wrong, because an object goes to a child
    only when it lies strictly on one side of the node's midlines.
    """

    MAX_OBJECTS = 10
    MAX_LEVELS = 5

    __slots__ = ("bounds", "level", "nodes", "objects")

    def __init__(self, level: int, bounds: tuple[int, int, int, int]) -> None:
        self.level = level
        self.objects: list[Rect] = []
        self.bounds = bounds
        self.nodes: list[TutorialQuadtree | None] = [None, None, None, None]

    def clear(self) -> None:
        """Clears the quadtree."""
        self.objects.clear()
        nodes = self.nodes
        for i in range(4):
            node = nodes[i]
            if node is not None:
                node.clear()
                nodes[i] = None

    def split(self) -> None:
        """Splits the node into 4 subnodes (0: top right, 1: top left, 2: bottom left,
        3: bottom right, counter-clockwise as in the tutorial)."""
        bx, by, bw, bh = self.bounds
        sub_width = int(bw / 2)
        sub_height = int(bh / 2)
        x = int(bx)
        y = int(by)
        level = self.level + 1
        self.nodes[0] = TutorialQuadtree(level, (x + sub_width, y, sub_width, sub_height))
        self.nodes[1] = TutorialQuadtree(level, (x, y, sub_width, sub_height))
        self.nodes[2] = TutorialQuadtree(level, (x, y + sub_height, sub_width, sub_height))
        self.nodes[3] = TutorialQuadtree(
            level, (x + sub_width, y + sub_height, sub_width, sub_height)
        )

    def get_index(self, rect: Rect) -> int:
        """Which node the object belongs to; -1 if it does not fit completely in a child."""
        index = -1
        bx, by, bw, bh = self.bounds
        vertical_midpoint = bx + bw / 2
        horizontal_midpoint = by + bh / 2
        x, y, w, h = rect[0], rect[1], rect[2], rect[3]
        top_quadrant = y < horizontal_midpoint and y + h < horizontal_midpoint
        bottom_quadrant = y > horizontal_midpoint
        if x < vertical_midpoint and x + w < vertical_midpoint:
            if top_quadrant:
                index = 1
            elif bottom_quadrant:
                index = 2
        elif x > vertical_midpoint:
            if top_quadrant:
                index = 0
            elif bottom_quadrant:
                index = 3
        return index

    def insert(self, rect: Rect) -> None:
        """Insert the object; split and push objects down when the node exceeds capacity."""
        nodes = self.nodes
        if nodes[0] is not None:
            index = self.get_index(rect)
            if index != -1:
                nodes[index].insert(rect)  # type: ignore[union-attr]
                return
        objects = self.objects
        objects.append(rect)
        if len(objects) > self.MAX_OBJECTS and self.level < self.MAX_LEVELS:
            if nodes[0] is None:
                self.split()
            i = 0
            while i < len(objects):
                index = self.get_index(objects[i])
                if index != -1:
                    nodes[index].insert(objects.pop(i))  # type: ignore[union-attr]
                else:
                    i += 1

    def retrieve(self, return_objects: list[Rect], rect: Rect) -> list[Rect]:
        """Return all objects that could collide with the given object: those on the path
        from this node down to the deepest node the object fits in (itself included)."""
        index = self.get_index(rect)
        if index != -1 and self.nodes[0] is not None:
            self.nodes[index].retrieve(return_objects, rect)  # type: ignore[union-attr]
        return_objects.extend(self.objects)
        return return_objects

    def query(self, box: BoxT, out: list[int]) -> None:
        """Extension, not in the tutorial (its ``retrieve`` is not a region query: it skips
        the descendants of the node where a straddling box stops): every id whose box
        intersects ``box``, descending into each child whose side of the midlines the box
        reaches."""
        qx0, qy0, qx1, qy1 = box
        for x, y, w, h, e in self.objects:
            if x <= qx1 and qx0 <= x + w and y <= qy1 and qy0 <= y + h:
                out.append(e)
        nodes = self.nodes
        if nodes[0] is not None:
            bx, by, bw, bh = self.bounds
            vm = bx + bw / 2
            hm = by + bh / 2
            # Child i holds only objects strictly on its side of both midlines.
            if qx1 > vm and qy0 < hm:
                nodes[0].query(box, out)
            if qx0 < vm and qy0 < hm:
                nodes[1].query(box, out)  # type: ignore[union-attr]
            if qx0 < vm and qy1 > hm:
                nodes[2].query(box, out)  # type: ignore[union-attr]
            if qx1 > vm and qy1 > hm:
                nodes[3].query(box, out)  # type: ignore[union-attr]


class TutorialContender(IndexContender):
    """The tutorial's method: every frame, clear the tree and insert every object; then
    ``retrieve`` the candidates of each object and test them, pairs de-duplicated by a set."""

    name = "tutorial quadtree (rebuilt)"
    _boxes: dict[int, BoxT] | None

    def fill(self, world: World) -> None:
        side = int(world.side)
        self._quad = TutorialQuadtree(0, (0, 0, side, side))
        self.update(world, Step([], [], []))

    def update(self, world: World, step: Step) -> None:
        quad = self._quad
        quad.clear()
        self._boxes = None
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        self._rects = rects = [(xs[e], ys[e], ws[e], hs[e], e) for e in world.alive]
        insert = quad.insert
        for rect in rects:
            insert(rect)

    def pairs(self) -> list[Pair]:
        retrieve = self._quad.retrieve
        found: set[Pair] = set()
        add = found.add
        return_objects: list[Rect] = []
        for rect in self._rects:
            return_objects.clear()
            retrieve(return_objects, rect)
            x, y, w, h, a = rect
            x1 = x + w
            y1 = y + h
            for ox, oy, ow, oh, b in return_objects:
                if b != a and x <= ox + ow and ox <= x1 and y <= oy + oh and oy <= y1:
                    add((a, b) if a < b else (b, a))
        return sorted(found)

    def query(self, box: BoxT) -> list[int]:
        out: list[int] = []
        self._quad.query(box, out)
        return out

    def boxes_now(self) -> dict[int, BoxT]:
        if self._boxes is None:  # once per frame, for the first radius query
            self._boxes = {e: (x, y, x + w, y + h) for x, y, w, h, e in self._rects}
        return self._boxes


# -- the seed design: Quadtree.h, ported ---------------------------------------------------

#: The article's ``Box<Float>``: ``(left, top, width, height)``.
ArticleBox = tuple[float, float, float, float]


class SeedNode:
    """The article's ``Node``: four children (all or none) and the values stored here."""

    __slots__ = ("children", "values")

    def __init__(self) -> None:
        self.children: list[SeedNode] | None = None
        self.values: list[int] = []


class SeedQuadtree:
    """``Quadtree.h`` of "Quadtree and Collision Detection" (pvigier): ``Quadtree<T, GetBox>``
    with ``T = int`` (entity ids) and ``GetBox`` a dict from id to its box that the caller
    keeps current; each value in the smallest node that contains its box, split on
    overflow, merge on removal, ``findAllIntersections`` as the article does it."""

    THRESHOLD = 16
    MAX_DEPTH = 8

    def __init__(self, box: ArticleBox, get_box: dict[int, BoxT]) -> None:
        self.box = box
        self.root = SeedNode()
        self.get_box = get_box

    # Helpers ----------------------------------------------------------------------------

    @staticmethod
    def compute_box(box: ArticleBox, i: int) -> ArticleBox:
        left, top, width, height = box
        cw = width / 2
        ch = height / 2
        if i == 0:  # North West
            return (left, top, cw, ch)
        if i == 1:  # North East
            return (left + cw, top, cw, ch)
        if i == 2:  # South West
            return (left, top + ch, cw, ch)
        return (left + cw, top + ch, cw, ch)  # South East

    @staticmethod
    def get_quadrant(node_box: ArticleBox, value_box: BoxT) -> int:
        left, top, width, height = node_box
        cx = left + width / 2
        cy = top + height / 2
        min_x, min_y, max_x, max_y = value_box
        if max_x < cx:  # West
            if max_y < cy:
                return 0
            if min_y >= cy:
                return 2
            return -1
        if min_x >= cx:  # East
            if max_y < cy:
                return 1
            if min_y >= cy:
                return 3
            return -1
        return -1

    # Insertion ---------------------------------------------------------------------------

    def add(self, value: int, box: object = None) -> None:
        """(``box``: what a caller of an index by old boxes passes; read here by ``get_box``.)"""
        self._add(self.root, 0, self.box, value)

    def _add(self, node: SeedNode, depth: int, box: ArticleBox, value: int) -> None:
        if node.children is None:
            # Insert the value in this node if possible, otherwise split and try again.
            if depth >= self.MAX_DEPTH or len(node.values) < self.THRESHOLD:
                node.values.append(value)
            else:
                self._split(node, box)
                self._add(node, depth, box, value)
        else:
            i = self.get_quadrant(box, self.get_box[value])
            if i != -1:
                self._add(node.children[i], depth + 1, self.compute_box(box, i), value)
            else:
                node.values.append(value)

    def _split(self, node: SeedNode, box: ArticleBox) -> None:
        children = [SeedNode(), SeedNode(), SeedNode(), SeedNode()]
        node.children = children
        new_values = []
        get_box = self.get_box
        get_quadrant = self.get_quadrant
        for value in node.values:
            i = get_quadrant(box, get_box[value])
            if i != -1:
                children[i].values.append(value)
            else:
                new_values.append(value)
        node.values = new_values

    # Removal -----------------------------------------------------------------------------

    def remove(self, value: int, box: object = None) -> None:
        self._remove(self.root, self.box, value)

    def _remove(self, node: SeedNode, box: ArticleBox, value: int) -> bool:
        if node.children is None:
            self._remove_value(node, value)
            return True
        i = self.get_quadrant(box, self.get_box[value])
        if i != -1:
            if self._remove(node.children[i], self.compute_box(box, i), value):
                return self._try_merge(node)
        else:
            self._remove_value(node, value)
        return False

    @staticmethod
    def _remove_value(node: SeedNode, value: int) -> None:
        # Swap with the last value and pop back, as the article does.
        values = node.values
        i = values.index(value)
        last = values.pop()
        if i < len(values):
            values[i] = last

    def _try_merge(self, node: SeedNode) -> bool:
        assert node.children is not None
        nb_values = len(node.values)
        for child in node.children:
            if child.children is not None:
                return False
            nb_values += len(child.values)
        if nb_values <= self.THRESHOLD:
            for child in node.children:
                node.values.extend(child.values)
            node.children = None
            return True
        return False

    # Queries -----------------------------------------------------------------------------

    def query(self, query_box: BoxT) -> list[int]:
        values: list[int] = []
        self._query(self.root, self.box, query_box, values)
        return values

    def _query(self, node: SeedNode, box: ArticleBox, query_box: BoxT, values: list[int]) -> None:
        qx0, qy0, qx1, qy1 = query_box
        get_box = self.get_box
        for value in node.values:
            x0, y0, x1, y1 = get_box[value]
            if x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1:
                values.append(value)
        if node.children is not None:
            for i in range(4):
                left, top, w, h = child_box = self.compute_box(box, i)
                if left <= qx1 and qx0 <= left + w and top <= qy1 and qy0 <= top + h:
                    self._query(node.children[i], child_box, query_box, values)

    def find_all_intersections(self) -> list[Pair]:
        intersections: list[Pair] = []
        self._find_all_intersections(self.root, intersections)
        return intersections

    def _find_all_intersections(self, node: SeedNode, intersections: list[Pair]) -> None:
        get_box = self.get_box
        values = node.values
        # Intersections between values stored in this node, each pair once.
        for i in range(len(values)):
            a = values[i]
            ax0, ay0, ax1, ay1 = get_box[a]
            for j in range(i):
                b = values[j]
                bx0, by0, bx1, by1 = get_box[b]
                if ax0 <= bx1 and bx0 <= ax1 and ay0 <= by1 and by0 <= ay1:
                    intersections.append((a, b))
        if node.children is not None:
            # Values in this node can intersect values in descendants.
            for child in node.children:
                for value in values:
                    self._find_intersections_in_descendants(child, value, intersections)
            # Intersections in children.
            for child in node.children:
                self._find_all_intersections(child, intersections)

    def _find_intersections_in_descendants(
        self, node: SeedNode, value: int, intersections: list[Pair]
    ) -> None:
        get_box = self.get_box
        ax0, ay0, ax1, ay1 = get_box[value]
        for other in node.values:
            bx0, by0, bx1, by1 = get_box[other]
            if ax0 <= bx1 and bx0 <= ax1 and ay0 <= by1 and by0 <= ay1:
                intersections.append((value, other))
        if node.children is not None:
            for child in node.children:
                self._find_intersections_in_descendants(child, value, intersections)


class SeedContender(ByOldBox):
    """The seed design kept current either by a rebuild every frame (``mode="rebuild"``) or
    by ``remove`` then ``add`` of every moved value (``mode="remove-add"``: the article's
    ``remove`` finds the value by its old box)."""

    def __init__(self, mode: str = "rebuild") -> None:
        if mode not in ("rebuild", "remove-add"):
            raise ValueError(f"mode must be 'rebuild' or 'remove-add', got {mode!r}")
        self.name = f"seed port ({mode})"
        self.rebuild_above = -1.0 if mode == "rebuild" else math.inf

    def load(self, world: World) -> None:
        self._tree = tree = SeedQuadtree((0.0, 0.0, world.side, world.side), self._boxes)
        self._remove, self._insert = tree.remove, tree.add
        for e in self._boxes:
            tree.add(e)

    def pairs(self) -> list[Pair]:
        out = [(a, b) if a < b else (b, a) for a, b in self._tree.find_all_intersections()]
        out.sort()
        return out

    def query(self, box: BoxT) -> list[int]:
        return self._tree.query(box)
