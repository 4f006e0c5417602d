"""The quadtree's window queries: ``query``, ``query_point``, ``query_radius`` and
``query_radius_many``, and the nodes themselves (``nodes``, ``depth``) for drawing and
debugging. Each is one explicit walk from the root, pruned by the nodes' bounds, the
straddlers of an internal node read through its sorted snapshot (``_snapshots``).
"""

from __future__ import annotations

import contextlib
import math
from array import array
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from . import _snapshots, _wrap
from ._records import BoxLike as _BoxLike
from ._records import Rec as _Rec
from ._records import _typed_view
from ._records import coords as _coords
from ._records import point as _point
from .geometry import Box, reach, shown, to_float

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_hypot = math.hypot
_INF = math.inf
#: query_radius's refusal (a template the compiled core formats too: _cquadtree_src/constants.h).
BAD_RADIUS = "radius must be finite and >= 0, got {!r}"
#: query_radius_many's refusals of its buffers (templates the compiled core formats too).
POINTS_SHAPE = (
    "query_radius_many: a buffer of points holds 2 floats per point (flat, or rows of 2), "
    "got {} floats in {} dimension(s)"
)
FLAT_RADII = "query_radius_many: a buffer of radii is flat"
RADII_DIFFER = "query_radius_many: points and radii differ in length"
_float = float


def many_point(item: object, i: int) -> tuple[float, float]:
    """Point ``i`` of ``query_radius_many`` as two finite floats, taken as ``query_radius``
    takes its ``x`` and ``y``; else its error led by ``"point {i}: "`` (a ``TypeError`` for
    an item that is no pair). The compiled core calls it for every point that is not a
    tuple of two finite floats, so that both classes say the same."""
    if type(item) is tuple and len(item) == 2:
        x, y = item
    else:
        try:
            x, y = item  # type: ignore[misc]
        except (TypeError, ValueError):
            raise TypeError(
                f"point {i}: a query point is a pair (x, y), got {shown(item)}"
            ) from None
    if type(x) is _float and type(y) is _float and -_INF < x < _INF and -_INF < y < _INF:
        return x, y
    fx = to_float(x, f"point {i}: query point x")
    fy = to_float(y, f"point {i}: query point y")
    if not (-_INF < fx < _INF and -_INF < fy < _INF):
        raise ValueError(f"point {i}: query point ({x!r}, {y!r}) must have finite coordinates")
    return fx, fy


def many_radius(value: object, i: int) -> float:
    """Radius ``i`` of ``query_radius_many`` as a float, taken as ``query_radius`` takes its
    ``r``; else its error led by ``"point {i}: "`` (the compiled core calls it as
    ``many_point``)."""
    r = value if type(value) is _float else to_float(value, f"point {i}: radius")
    if not (0.0 <= r < _INF):
        raise ValueError(f"point {i}: " + BAD_RADIUS.format(value))
    return r


def many_points(points: object) -> list[tuple[float, float]]:
    """``query_radius_many``'s points, read and checked in full: a buffer of doubles, 2 per
    point (flat, or rows of 2), or an iterable of pairs."""
    view = _typed_view(points, "d")
    items: Iterable[object]
    if view is not None:
        with view:
            floats = view.nbytes // 8
            if not (
                (view.ndim <= 1 and floats % 2 == 0)
                or (view.ndim == 2 and view.shape is not None and view.shape[1] == 2)
            ):
                raise ValueError(POINTS_SHAPE.format(floats, view.ndim))
            flat = array("d", view.tobytes()).tolist()
        items = zip(flat[::2], flat[1::2], strict=True)
    else:
        items = points  # type: ignore[assignment]
    return [many_point(item, i) for i, item in enumerate(items)]


def many_radii(radius: object, n: int) -> list[float] | float:
    """``query_radius_many``'s radii for ``n`` points: one float for all (a number, or a
    buffer of no dimension, such as a numpy scalar), or a list of ``n``, from a flat buffer
    of doubles or an iterable, each checked in turn and then the length."""
    view = _typed_view(radius, "d")
    items: Iterable[object] | None = None
    if view is not None:
        with view:
            if view.ndim > 1:
                raise ValueError(FLAT_RADII)
            if view.ndim == 1:
                items = array("d", view.tobytes()).tolist()
    else:
        with contextlib.suppress(TypeError):
            items = iter(radius)  # type: ignore[call-overload]
    if items is None:  # one radius for all, as query_radius takes it
        r = radius if type(radius) is _float else to_float(radius, "radius")
        if not (0.0 <= r < _INF):
            raise ValueError(BAD_RADIUS.format(radius))
        return r
    radii: list[float] = []
    for i, value in enumerate(items):
        if i == n:
            raise ValueError(RADII_DIFFER)
        radii.append(many_radius(value, i))
    if len(radii) != n:
        raise ValueError(RADII_DIFFER)
    return radii


class NodeInfo(NamedTuple):
    """One node of the tree, as ``QuadTree.nodes()`` reports it (for drawing and debugging)."""

    box: Box
    depth: int
    entries: int


# Published as ``quadtree.NodeInfo``, where the compiled core and users import it: its pickles
# name it there, as they did when it was defined there.
NodeInfo.__module__ = "ecs_spatial.quadtree"


class _Queries(_Base):
    """The window queries and the listing of the nodes."""

    __slots__ = ()

    def query(self, box: _BoxLike) -> list[int]:
        """Every id whose box intersects ``box`` (touching counts), each once, in ascending
        order.

        The order is the compiled class's too, and no history of inserts, moves or pickles
        changes it, so that game code that acts on the hits in turn does the same on every
        machine (a lockstep game, a replay). Every answer that is a set of ids comes in
        ascending order: ``query_point``, ``query_radius``, ``query_entity``, iterating
        over the tree; ``nearest`` comes by distance, the casts by ``t``, both then by id.

        Complexity: O(log n + k log k) on average (the sort); a subtree wholly inside
        ``box`` is reported without testing its entries one by one.
        """
        x0, y0, x1, y1 = _coords(box)
        if self._wrap is not None:
            return self._wrapped_query(x0, y0, x1, y1)
        return self._query(x0, y0, x1, y1)

    def _wrapped_query(self, x0: float, y0: float, x1: float, y1: float) -> list[int]:
        """``query`` of a checked box on a wrapped tree: the box taken modulo the period
        (``_wrap.query_intervals``: as wide as the period or wider, it covers the axis),
        each of its images searched as a plain box, the ids merged."""
        ox, oy, w, h, ex, ey = self._wrap  # type: ignore[misc]
        found: set[int] = set()
        for qx0, qx1 in _wrap.query_intervals(x0, x1, ox, w, ex):
            for qy0, qy1 in _wrap.query_intervals(y0, y1, oy, h, ey):
                found.update(self._query(qx0, qy0, qx1, qy1))
        return sorted(found)

    def _query(self, x0: float, y0: float, x1: float, y1: float) -> list[int]:
        """``query`` of a checked box, as a plain (unwrapped) tree answers it."""
        out: list[int] = []
        root = self._root
        if root < 0:
            return out
        append = out.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        stack = [root]
        pop = stack.pop
        push = stack.append
        scan = self._snapshots.scan
        covered: list[int] = []  # subtrees wholly inside the box: every id, untested
        cover = covered.append
        while stack:
            node = pop()
            kids = kids_of[node]
            if kids is None:
                for bx0, by0, bx1, by1, entity in items[node].values():
                    if bx0 <= x1 and x0 <= bx1 and by0 <= y1 and y0 <= by1:
                        append(entity)
            else:
                scan(node, x0, y0, x1, y1, append)  # straddlers: a sorted window
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= x1 and x0 <= nx1 and ny0 <= y1 and y0 <= ny1:
                            if x0 <= nx0 and nx1 <= x1 and y0 <= ny0 and ny1 <= y1:
                                cover(child)
                            else:
                                push(child)
        if covered:
            self._collect(covered, out)  # one walk for all, not a call per subtree
        out.sort()
        return out

    def query_point(self, x: float, y: float) -> list[int]:
        """Every id whose box contains the point ``(x, y)`` (edges included), each once, in
        ascending order (as ``query``)."""
        x, y = _point(x, y)
        if self._wrap is not None:
            return self._wrapped_query(x, y, x, y)
        return self._query(x, y, x, y)

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        """Every id whose box has a point within distance ``r`` of ``(x, y)``, that is
        ``box.distance_to_point(x, y) <= r``, each once, in ascending order (as ``query``).

        Complexity: O(log n + k log k) on average.
        """
        x, y = _point(x, y)
        radius = r if type(r) is _float else to_float(r, "radius")
        if not (0.0 <= radius < _INF):
            raise ValueError(BAD_RADIUS.format(r))
        if self._wrap is not None:
            self._check_wrapped_radius(radius)
            return self._wrapped_radius_ids(x, y, radius)
        return self._radius_ids(x, y, radius)

    def _check_wrapped_radius(self, r: float) -> None:
        """Refuse a radius over half the smaller period of a wrapped tree."""
        _, _, w, h, _, _ = self._wrap  # type: ignore[misc]
        half = min(w, h) * 0.5
        if r > half:
            raise ValueError(_wrap.RADIUS_OVER_HALF.format(r, half))

    def _wrapped_radius_ids(self, x: float, y: float, r: float) -> list[int]:
        """``query_radius`` on a wrapped tree, point and radius checked: the ids within
        ``r`` of one of the nine images of the wrapped point (``_wrap.point_images``), that
        is within the minimum-image distance."""
        period = self._wrap
        assert period is not None
        found: set[int] = set()
        for px, py in _wrap.point_images(*_wrap.wrap_point(x, y, period), period):
            found.update(self._radius_ids(px, py, r))
        return sorted(found)

    def query_radius_many(
        self, points: Iterable[tuple[float, float]] | array[float] | memoryview,
        radius: float | Iterable[float] | array[float] | memoryview,
    ) -> tuple[array[int], array[int]]:
        """``query_radius`` for many points at once, the answers as arrays: ``(offsets,
        ids)``, two ``array('q')``, ``offsets`` of ``n + 1`` entries from 0, and
        ``ids[offsets[i]:offsets[i + 1]]`` exactly ``query_radius(x_i, y_i, r_i)`` (the
        same ids in the same order) for each point ``i`` (CSR: a numpy user takes both with
        ``numpy.frombuffer(..., dtype=numpy.int64)``, and ``numpy.diff(offsets)`` counts).

        ``points``: a buffer of doubles, 2 per point, flat or in rows of 2 (``array('d')``,
        a numpy ``float64`` array of shape ``(n, 2)``), or an iterable of ``(x, y)`` pairs
        (each coordinate taken as ``query_radius`` takes ``x`` and ``y``). ``radius``: one
        number for every point (as ``query_radius``'s ``r``), or one per point: a flat
        buffer of doubles or an iterable of ``n`` numbers. A buffer of another format is
        read as an iterable, as ``move_many`` reads one.

        The points are read and checked in full, then the radii, then the tree: a bad
        point or radius raises ``query_radius``'s error led by its position (``"point 3:
        ..."``), radii of another length than the points a ``ValueError``; nothing is
        answered then. Python code run while the arguments are read (an iterator, a
        ``__float__``) may change the tree: the answer is the tree's after it, as when
        ``query_radius``'s own arguments do so (the tree is not held busy: it is not read
        until they are). The compiled class copies a buffer's points and radii into C
        memory, answers the points in an order of its own that keeps neighbouring points
        together (for the CPU's cache; the answers do not depend on it), and makes no Python
        object per point or per id.

        Complexity: O(n (log N + k)) on average, for n points, N entries and k ids found
        per point (each point's ids sorted: O(k log k)).
        """
        pairs = many_points(points)
        radii = many_radii(radius, len(pairs))
        offsets = array("q", [0])
        ids: array[int] = array("q")
        extend = ids.extend
        mark = offsets.append
        find = self._radius_ids
        if self._wrap is not None:
            if isinstance(radii, _float):
                self._check_wrapped_radius(radii)
            for i, r in enumerate(() if isinstance(radii, _float) else radii):
                try:
                    self._check_wrapped_radius(r)
                except ValueError as error:
                    raise ValueError(f"point {i}: {error}") from None
            find = self._wrapped_radius_ids
        if isinstance(radii, _float):
            for x, y in pairs:
                extend(find(x, y, radii))
                mark(len(ids))
        else:
            for (x, y), r in zip(pairs, radii, strict=True):
                extend(find(x, y, r))
                mark(len(ids))
        return offsets, ids

    def _radius_ids(self, x: float, y: float, r: float) -> list[int]:
        """``query_radius``'s answer for a checked point and radius."""
        out: list[int] = []
        root = self._root
        if root < 0:
            return out
        append = out.append
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        # Candidates first pass the box around the circle (geometry.reach: widened a little,
        # since x + r is rounded and a box one float step past it can still be at a computed
        # distance <= r; infinite where the circle passes the float range), then the same
        # hypot expression as Box.distance_to_point decides.
        qx0, qy0, qx1, qy1 = reach(x, y, r)
        stack = [root]
        candidates: list[int] = []
        keep = candidates.append
        snaps = self._snap
        snap_min = _snapshots.SNAP_MIN  # read here, not imported: a test patches it there
        while stack:
            node = stack.pop()
            kids = kids_of[node]
            records: Iterable[_Rec]
            if kids is None:
                records = items[node].values()
            else:
                node_items = items[node]
                snap = snaps[node]
                if snap is not None and not (
                    (snap[0] <= qx1 and qx0 <= snap[1]) or (snap[2] <= qy1 and qy0 <= snap[3])
                ):
                    # Its straddlers all lie far from the circle's box (as in _intersecting;
                    # this, the box test for children instead of a distance, and no empty
                    # comprehension: docs/design.md#decisions).
                    records = ()
                elif len(node_items) < snap_min:
                    records = node_items.values()
                else:  # straddlers: a sorted window of those that reach the circle's box
                    candidates.clear()
                    self._snapshots.scan(node, qx0, qy0, qx1, qy1, keep)
                    records = [node_items[entity] for entity in candidates] if candidates else ()
            for bx0, by0, bx1, by1, entity in records:
                if bx0 <= qx1 and qx0 <= bx1 and by0 <= qy1 and qy0 <= by1:
                    dx = bx0 - x if x < bx0 else (x - bx1 if x > bx1 else 0.0)
                    dy = by0 - y if y < by0 else (y - by1 if y > by1 else 0.0)
                    if _hypot(dx, dy) <= r:
                        append(entity)
            if kids is not None:
                for child in kids:
                    if count[child]:
                        nx0, ny0, nx1, ny1, _, _ = geom[child]
                        if nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1:
                            stack.append(child)
        out.sort()
        return out

    def _collect(self, stack: list[int], out: list[int]) -> None:
        """Append every id in the subtrees of the nodes in ``stack`` (emptied) to ``out``."""
        items = self._items
        kids_of = self._kids
        pop = stack.pop
        extend = stack.extend
        add = out.extend
        while stack:
            n = pop()
            add(items[n])
            kids = kids_of[n]
            if kids is not None:
                # Every child, empty ones too: cheaper than a generator that skips them
                # (docs/design.md#decisions).
                extend(kids)

    def nodes(self, box: _BoxLike | None = None) -> Iterator[NodeInfo]:
        """Each node's box, depth below the root and number of entries held in the node
        itself, root first, depth-first: each node followed by its children's subtrees in
        the order low-left, low-right, high-left, high-right (``x`` then ``y`` below or
        above the split point). Both classes build the same tree from the same boxes, so
        they give the same nodes in the same order. For drawing the tree and for debugging.

        With ``box`` (taken and checked as ``query`` takes it, when ``nodes`` is called),
        only the nodes whose box intersects it (touching counts): exactly
        ``[n for n in nodes() if n.box.intersects(box)]``, in the same order, found without
        opening a subtree whose root misses it (a child lies inside its parent). A node's box
        is its quadrant, the ``NodeInfo.box`` it is reported with, not the extent of what it
        holds: a root that keeps boxes beyond it (grown as far as it may) is not listed for
        them. A debug overlay draws the nodes in a camera's view at the cost of those alone.

        The nodes are listed when ``nodes`` is called: a change to the tree during the
        iteration leaves them as they were.

        Complexity: O(nodes); with ``box``, O(k) for the k nodes listed (each one's four
        children tested).
        """
        # A list: the nodes as they are now, as the compiled class gives them, whatever
        # happens to the tree while the caller iterates (a generator walked the live tree).
        nodes = self._nodes_meeting(None if box is None else _coords(box))
        return iter(list(nodes))

    def _nodes_meeting(self, box: tuple[float, float, float, float] | None) -> Iterator[NodeInfo]:
        """``nodes(box)``'s walk, ``box`` already four checked floats (or None: every node)."""
        root = self._root
        if root < 0:
            return
        geom = self._geom
        if box is None:
            qx0, qy0, qx1, qy1 = -_INF, -_INF, _INF, _INF  # every node meets it
        else:
            qx0, qy0, qx1, qy1 = box
            x0, y0, x1, y1, _, _ = geom[root]
            if not (x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1):
                return
        stack = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            g = geom[node]
            yield NodeInfo(Box(g[0], g[1], g[2], g[3]), depth, len(self._items[node]))
            kids = self._kids[node]
            if kids is not None:
                for child in reversed(kids):
                    x0, y0, x1, y1, _, _ = geom[child]
                    if x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1:
                        stack.append((child, depth + 1))

    def depth(self) -> int:
        """The number of levels below the root of the deepest node (0 for a lone root)."""
        return max((info.depth for info in self.nodes()), default=0)
