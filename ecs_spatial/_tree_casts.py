"""The quadtree's casts: ``raycast`` and ``cast_box`` (every hit, sorted by ``t``), and
``raycast_first`` and ``cast_box_first`` (the first hit, best first through a heap, with an
optional ``where=`` predicate). A cast is one test of a box, a ``_Hit``: the kernels of
``geometry`` (``floats_segment_entry``, ``floats_sweep_time``) decide every ``t``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial
from heapq import heappop, heappush
from typing import TYPE_CHECKING

from . import _snapshots, _wrap
from ._records import BoxLike as _BoxLike
from ._records import Rec as _Rec
from ._records import coords as _coords
from ._records import point as _point
from ._snapshots import Snap as _Snap
from .geometry import floats_segment_entry, floats_sweep_time
from .geometry import motion_floats as _motion

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_INF = math.inf

#: A cast's test of one box (a record, a node's geometry): the fraction at which the ray or
#: the moving box first touches it, or None.
_Hit = Callable[[tuple[float, ...]], "float | None"]


def _ray_at(x0: float, y0: float, x1: float, y1: float) -> Callable[[float, float], _Hit]:
    """The hit test of the segment shifted by ``(sx, sy)``, for each shift."""

    def at(sx: float, sy: float) -> _Hit:
        a, b, c, d = x0 + sx, y0 + sy, x1 + sx, y1 + sy
        return lambda box: floats_segment_entry(box, a, b, c, d)

    return at


def _by_t(hit: tuple[int, float]) -> tuple[float, int]:
    """A hit's sort key: ``t``, then the id."""
    return hit[1], hit[0]


class _Casts(_Base):
    """The casts of a segment or a moving box."""

    __slots__ = ()

    def raycast(self, x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, float]]:
        """``(entity, t)`` for every box the segment ``(x0, y0) -> (x1, y1)`` touches, ``t``
        in [0, 1] the fraction of the segment at which it enters the box (0 when it starts
        inside), sorted by ``t`` then id. The first element is the first thing hit.

        Complexity: O(nodes crossed + k log k).
        """
        x0, y0 = _point(x0, y0)
        x1, y1 = _point(x1, y1)
        if self._wrap is not None:
            return self._wrapped_hits(_ray_at(x0, y0, x1, y1), x0, y0, x1, y1, 0.0, 0.0)
        hits: list[tuple[float, int]] = []
        root = self._root
        if root < 0:
            return []
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        entry = floats_segment_entry
        stack = [root]
        while stack:
            node = stack.pop()
            for rec in items[node].values():
                t = entry(rec, x0, y0, x1, y1)
                if t is not None:
                    hits.append((t, rec[4]))
            kids = kids_of[node]
            if kids is not None:
                for child in kids:
                    if count[child] and entry(geom[child], x0, y0, x1, y1) is not None:
                        stack.append(child)
        hits.sort()
        return [(entity, t) for t, entity in hits]

    def cast_box(self, box: _BoxLike, dx: float, dy: float) -> list[tuple[int, float]]:
        """``(entity, t)`` for every box that ``box`` touches while it moves by ``(dx, dy)``,
        ``t`` in [0, 1] the fraction of the motion at which it first touches it (0 when they
        touch at the start), sorted by ``t`` then id: :func:`geometry.sweep_time` of every
        entry, found without testing them all. "Touch" is ``query``'s (a shared edge or
        corner counts), so ``cast_box(box, 0, 0)`` finds what ``query(box)`` finds, at 0.

        ``box`` is taken as ``query`` takes it; ``dx`` and ``dy`` must be finite real
        numbers (``TypeError`` or ``ValueError`` naming them). A box of zero size gives
        ``raycast`` from its corner (to the bit, wherever ``x + dx - x == dx``).

        >>> tree = QuadTree(Box(0, 0, 100, 100))
        >>> tree.insert(1, Box(50, 0, 60, 10)); tree.insert(2, Box(0, 20, 10, 30))
        >>> tree.cast_box(Box(0, 0, 10, 10), 80, 0)
        [(1, 0.5)]

        Complexity: O(nodes the swept box crosses + k log k).
        """
        moving = _coords(box)
        dx, dy = _motion(dx, dy)
        if self._wrap is not None:
            return self._wrapped_box_hits(moving, dx, dy)
        return self._all_hits(partial(floats_sweep_time, moving, dx, dy))

    def raycast_first(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None:
        """The first thing the segment ``(x0, y0) -> (x1, y1)`` hits, as ``(entity, t)``:
        exactly ``raycast(x0, y0, x1, y1)[0]`` (the smallest ``t``, then the smallest id),
        or ``None`` if it hits nothing.

        ``where``, if given, decides which ids count, as ``nearest``'s does: the first hit
        among the ids for which ``where(id)`` is true (the first enemy the bullet meets, past
        the friends in the way), exactly ``[h for h in raycast(...) if where(h[0])][0]`` or
        ``None``. It is asked only about ids that would be the answer when it is asked (a hit
        before the best accepted so far; the order and number of calls are not promised); an
        error it raises comes out of the call unchanged, the tree as it was. It may read the
        tree, never change it: a change raises ``RuntimeError``, the tree as it was, as in
        ``nearest``.

        The search stops as soon as nothing nearer can exist: nodes are opened in the order
        the segment enters them, and one entered after the best hit so far is never opened
        (a node entered at the same ``t`` still is: it may hold a smaller id at that ``t``).
        A bullet's ray across the whole world costs what lies before what it hits (with
        ``where``, before the first hit it accepts).

        >>> tree = QuadTree(Box(0, 0, 100, 100))
        >>> tree.insert(1, Box(20, 0, 30, 10)); tree.insert(2, Box(60, 0, 70, 10))
        >>> tree.raycast_first(0, 5, 100, 5)
        (1, 0.2)
        >>> tree.raycast_first(0, 5, 100, 5, where=lambda e: e != 1)
        (2, 0.6)

        Complexity: O(m log m), m the nodes the segment enters before its first (accepted) hit.
        """
        x0, y0 = _point(x0, y0)
        x1, y1 = _point(x1, y1)
        if self._wrap is not None:
            hits = self._wrapped_hits(_ray_at(x0, y0, x1, y1), x0, y0, x1, y1, 0.0, 0.0)
            return self._first_accepted(hits, where)
        return self._first_hit(lambda b: floats_segment_entry(b, x0, y0, x1, y1), where)

    def cast_box_first(
        self,
        box: _BoxLike,
        dx: float,
        dy: float,
        *,
        where: Callable[[int], object] | None = None,
    ) -> tuple[int, float] | None:
        """The first box that ``box`` touches while it moves by ``(dx, dy)``, as
        ``(entity, t)``: exactly ``cast_box(box, dx, dy)[0]``, or ``None``. ``where``, if
        given, keeps only the ids for which ``where(id)`` is true, as ``raycast_first``'s
        does: exactly ``[h for h in cast_box(...) if where(h[0])][0]`` or ``None``. It stops
        as ``raycast_first`` does, as soon as nothing nearer can exist.

        Complexity: O(m log m), m the nodes the swept box enters before its first (accepted)
        hit.
        """
        moving = _coords(box)
        dx, dy = _motion(dx, dy)
        if self._wrap is not None:
            return self._first_accepted(self._wrapped_box_hits(moving, dx, dy), where)
        return self._first_hit(partial(floats_sweep_time, moving, dx, dy), where)

    def _wrapped_box_hits(
        self, moving: tuple[float, float, float, float], dx: float, dy: float
    ) -> list[tuple[int, float]]:
        """``cast_box``'s answer on a wrapped tree (its arguments checked)."""
        x0, y0, x1, y1 = moving

        def at(sx: float, sy: float) -> _Hit:
            return partial(floats_sweep_time, (x0 + sx, y0 + sy, x1 + sx, y1 + sy), dx, dy)

        return self._wrapped_hits(at, x0, y0, x0 + dx, y0 + dy, x1 - x0, y1 - y0)

    def _wrapped_hits(
        self, hit_at: Callable[[float, float], _Hit], ax: float, ay: float, bx: float,
        by: float, bw: float, bh: float,
    ) -> list[tuple[int, float]]:
        """A cast on a wrapped tree: the segment (or the box of size ``bw`` by ``bh`` whose
        min corner moves from ``(ax, ay)`` to ``(bx, by)``) followed across the seams. The
        cast shifted by each of ``_wrap.cast_shifts`` (whole periods, one for each image of
        a stored box that the swept region may reach) is cast against the stored boxes as
        a plain tree's (``hit_at(sx, sy)``: the hit test of the shifted cast); an entity's
        ``t`` is the least over its images, so ``t`` runs on over the whole segment.
        Sorted by ``t`` then id, as a plain tree's."""
        period = self._wrap
        assert period is not None
        best: dict[int, float] = {}
        get = best.get
        for sx, sy in _wrap.cast_shifts(ax, ay, bx, by, bw, bh, period):
            for entity, t in self._all_hits(hit_at(sx, sy)):
                if t < get(entity, _INF):
                    best[entity] = t
        return sorted(best.items(), key=_by_t)

    def _first_accepted(
        self, hits: list[tuple[int, float]], where: Callable[[int], object] | None
    ) -> tuple[int, float] | None:
        """The first of ``hits`` that ``where`` accepts (the first, without ``where``),
        the tree busy while ``where`` runs (as in ``_first_hit``)."""
        if where is None:
            return hits[0] if hits else None
        busy = self._busy
        self._busy = True
        try:
            for hit in hits:
                if where(hit[0]):
                    return hit
            return None
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()

    def _all_hits(self, hit: _Hit) -> list[tuple[int, float]]:
        """``(entity, t)`` for every entry with ``hit(record)`` not None, sorted by ``t``
        then id. A node's subtree is searched only if ``hit`` of its bounds is not None: the
        two tests are monotonic (an entry inside a node gives a subinterval of the node's
        ``t``), so a node that is never touched holds nothing that is. The root is always
        read, since it may hold boxes beyond its bounds."""
        root = self._root
        if root < 0:
            return []
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        hits: list[tuple[float, int]] = []
        stack = [root]
        while stack:
            node = stack.pop()
            for rec in items[node].values():
                t = hit(rec)
                if t is not None:
                    hits.append((t, rec[4]))
            kids = kids_of[node]
            if kids is not None:
                for child in kids:
                    if count[child] and hit(geom[child]) is not None:
                        stack.append(child)
        hits.sort()
        return [(entity, t) for t, entity in hits]

    def _first_hit(
        self, hit: _Hit, where: Callable[[int], object] | None
    ) -> tuple[int, float] | None:
        """``_first_search``, the tree busy while ``where`` may run (as in ``nearest``)."""
        if where is None:
            return self._first_search(hit, None)
        busy = self._busy
        self._busy = True
        try:
            return self._first_search(hit, where)
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()

    def _first_search(
        self, hit: _Hit, where: Callable[[int], object] | None
    ) -> tuple[int, float] | None:
        """The least ``(t, id)`` over the entries with ``hit(record)`` not None (and, if
        ``where`` is given, ``where(id)`` true), as ``(id, t)``, or None: best first by the
        ``t`` at which ``hit`` enters a bounding box, a lower bound of every ``t`` inside it
        (see ``_all_hits``). A box whose bound is strictly greater than the best ``t`` found
        is never opened, and the search ends at the first such box the heap gives; an equal
        bound is opened, since a smaller id may wait there at the same ``t``. ``where`` is
        asked only about an entry that beats the best so far: the best is then always the
        best accepted one, and the same bound holds for it (a refused entry sets nothing).

        The heap holds subtrees, by their node's bounds, and the own entries of nodes of
        ``SNAP_MIN`` or more, as the two groups of their snapshot (across the vertical split
        line, and the others), by each group's bounding box: near the root they grow with
        the world's side, hug the split lines, and are read only if the cast gets to them
        first. (Read with their node, they were most of the cost: 162 box tests for a first
        hit near the start of a ray across 50,000 boxes, 51 without them; the full raycast
        made 1,297. ``tests/test_casts.py`` counts them.)"""
        root = self._root
        if root < 0:
            return None
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        snaps = self._snap
        snapshot = self._snapshots.get
        snap_min = _snapshots.SNAP_MIN  # read here, not imported: a test patches it there
        best_t = _INF  # every t is in [0, 1], so the first hit beats it
        best_id = 0
        # (bound, code): code >= 0 a subtree; ~(2 * node + group) a group of a node's own.
        heap: list[tuple[float, int]] = [(0.0, root)]  # the root first: it may hold boxes beyond it
        while heap:
            bound, code = heappop(heap)
            if bound > best_t:
                break  # everything left is entered after the best hit
            records: Iterable[_Rec]
            if code < 0:
                node, group = divmod(~code, 2)
                snap: _Snap = snaps[node]  # type: ignore[assignment]  # fresh: nothing changed
                records = [rec for _, rec in snap[4]] if group == 0 else snap[7]
            else:
                node = code
                own = items[node]
                kids = kids_of[node]
                if len(own) < snap_min or kids is None:  # a leaf's snapshot is not kept fresh
                    records = own.values()
                else:
                    records = ()
                    cached = snaps[node]
                    full: _Snap = cached if cached is not None else snapshot(node)  # type: ignore[assignment]
                    for group, members, box in ((0, full[4], full[6]), (1, full[7], full[9])):
                        if members:  # an empty group's box is inverted: no bound at all
                            t = hit(box)
                            if t is not None and t <= best_t:
                                heappush(heap, (t, ~(2 * node + group)))
                if kids is not None:
                    for child in kids:
                        if count[child]:
                            t = hit(geom[child])
                            if t is not None and t <= best_t:
                                heappush(heap, (t, child))
            for rec in records:
                t = hit(rec)
                if t is not None and (t < best_t or (t == best_t and rec[4] < best_id)):
                    if where is not None and not where(rec[4]):
                        continue
                    best_t = t
                    best_id = rec[4]
        return None if best_t == _INF else (best_id, best_t)
