"""The quadtree's nearest-neighbour search, ``nearest``: branch and bound outward from the
point, with an optional ``where=`` predicate (the tree busy while it runs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from heapq import heappush, heapreplace
from typing import TYPE_CHECKING

from . import _wrap
from ._records import Rec as _Rec
from ._records import point as _point
from .geometry import reach, to_float

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_hypot = math.hypot
_INF = math.inf
#: nearest's refusals (templates the compiled core formats too: _cquadtree_src/constants.h).
BAD_K = "k must be an int >= 1, got {!r}"
BAD_MAX_DISTANCE = "max_distance must be >= 0, got {!r}"
_float = float


class _Nearest(_Base):
    """``nearest``."""

    __slots__ = ()

    def nearest(
        self,
        x: float,
        y: float,
        k: int = 1,
        *,
        where: Callable[[int], object] | None = None,
        max_distance: float = _INF,
    ) -> list[int]:
        """The ``k`` ids with the smallest ``box.distance_to_point(x, y)``, nearest first,
        ties broken by id (fewer if the index holds fewer).

        ``where``, if given, decides which ids count: the ``k`` nearest of those for which
        ``where(id)`` is true (the nearest enemy, not the nearest thing), which no filter
        on the answer can give, since the ``k`` nearest overall may hold none of them. It is
        asked only about ids near enough to enter the answer when it is asked (roughly from
        the point outward; the order and number of calls are not promised); an error it
        raises comes out of the call unchanged. It may read the tree, never change it: the
        tree is busy while it runs, and a change raises ``RuntimeError`` before it touches
        anything (see "Calls back into Python" in the module docstring).
        ``max_distance`` keeps only ids within it (``distance_to_point <= max_distance``, as
        ``query_radius`` decides), as pymunk's ``point_query_nearest`` does: a turret's
        range. The search then never opens a node beyond it, so a miss costs little.

        Branch and bound, outward from the point: down to the leaf where the point lies, then
        back up, each ancestor's own entries and its other children in turn, nearest child
        first. The ``k`` best so far set a radius, and with it the box of ``geometry.reach``
        that every better entry intersects: a node or an entry that misses the box is never
        measured, and an ancestor's straddlers are read through the sorted snapshot the other
        queries use (a bisected window, or four comparisons that rule them all out). The
        best-first heap of every opened node's entries that this replaces took 10 times as
        long as ``query_point`` on 100,000 boxes (``python -m bench queries --scenario
        nearest`` has the ratio now).

        Complexity: O(log n + k log k) on average.
        """
        x, y = _point(x, y)
        if type(k) is bool or not issubclass(type(k), int) or k < 1:
            raise ValueError(BAD_K.format(k))
        limit = (
            max_distance if type(max_distance) is _float
            else to_float(max_distance, "max_distance")
        )
        if not limit >= 0.0:  # NaN fails too
            raise ValueError(BAD_MAX_DISTANCE.format(max_distance))
        if self._root < 0:
            return []
        search = self._nearest if self._wrap is None else self._wrapped_nearest
        if where is None:
            return search(x, y, k, limit, None)
        busy = self._busy  # True already if a where= of an outer search runs this one
        self._busy = True  # where may read the tree, never change it under the search
        try:
            return search(x, y, k, limit, where)
        finally:
            self._busy = busy
            if not busy and self._pending:
                self._settle()

    def _wrapped_nearest(
        self, x: float, y: float, k: int, limit: float, where: Callable[[int], object] | None
    ) -> list[int]:
        """``nearest`` on a wrapped tree: by the minimum-image distance (the least distance
        from one of the nine images of the wrapped point, ``_wrap.point_images``), ties by
        id. An id of the answer is among the ``k`` nearest to the image that gives its
        distance (whatever is nearer to that image is nearer on the torus too), so the
        plain searches of the nine images hold every id of the answer."""
        period = self._wrap
        assert period is not None
        images = list(_wrap.point_images(*_wrap.wrap_point(x, y, period), period))
        candidates: set[int] = set()
        for px, py in images:
            candidates.update(self._nearest(px, py, k, limit, where))
        items = self._items
        homes = self._home
        ranked: list[tuple[float, int]] = []
        for entity in candidates:
            bx0, by0, bx1, by1, _ = items[homes[entity][7]][entity]
            best = _INF
            for px, py in images:
                dx = bx0 - px if px < bx0 else (px - bx1 if px > bx1 else 0.0)
                dy = by0 - py if py < by0 else (py - by1 if py > by1 else 0.0)
                best = min(best, _hypot(dx, dy))
            ranked.append((best, entity))
        ranked.sort()
        return [entity for _, entity in ranked[:k]]

    def _nearest(
        self, x: float, y: float, k: int, limit: float, where: Callable[[int], object] | None
    ) -> list[int]:
        """``nearest``'s search, its arguments checked and the tree not empty."""
        root = self._root
        items = self._items
        kids_of = self._kids
        geom = self._geom
        count = self._count
        snaps = self._snap
        snapshot = self._snapshots.get
        scan = self._snapshots.scan
        # The k best so far as (-distance, -id): a heap whose first item is the worst of them.
        # An entry must beat it to get in: a distance below r, or r and an id below rid; until
        # there are k, r is the limit and any id at it will do.
        best: list[tuple[float, int]] = []
        r = limit
        rid: float = _INF
        qx0, qy0, qx1, qy1 = reach(x, y, r)
        # Down to the leaf where the point lies; then back up the path, each ancestor's own
        # entries and its other children in turn, with the radius the nearer ones have set:
        # a sibling is tested as its ancestor's turn comes, not stacked on the way down,
        # when there was no radius yet to rule it out (docs/design.md#decisions).
        path: list[int] = []
        node = root
        kids = kids_of[node]
        while kids is not None:
            path.append(node)
            _, _, _, _, cx, cy = geom[node]
            node = kids[(2 if y > cy else 0) + (1 if x > cx else 0)]
            kids = kids_of[node]
        came_from = node
        stack: list[int] = []  # subtrees to search (~node: a node's own entries alone)
        push = stack.append
        pop = stack.pop
        records: Iterable[_Rec] | None = items[node].values()
        found: list[int] = []
        keep = found.append
        while records is not None:
            for bx0, by0, bx1, by1, entity in records:
                if bx0 <= qx1 and qx0 <= bx1 and by0 <= qy1 and qy0 <= by1:
                    dx = bx0 - x if x < bx0 else (x - bx1 if x > bx1 else 0.0)
                    dy = by0 - y if y < by0 else (y - by1 if y > by1 else 0.0)
                    distance = _hypot(dx, dy)
                    if distance < r or (distance == r and entity < rid):
                        if where is not None and not where(entity):
                            continue
                        if len(best) < k:
                            heappush(best, (-distance, -entity))
                            if len(best) < k:
                                continue
                        else:
                            heapreplace(best, (-distance, -entity))
                        worst_distance, worst_id = best[0]
                        r = -worst_distance
                        rid = -worst_id
                        qx0, qy0, qx1, qy1 = reach(x, y, r)
            # The next entries worth reading: a subtree's, else the next ancestor's.
            records = None
            while True:
                if stack:
                    n = pop()
                    if n >= 0:
                        nx0, ny0, nx1, ny1, cx, cy = geom[n]
                        if not (nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1):
                            continue  # the node (never the root) and all it holds miss the box
                        kids = kids_of[n]
                        if kids is None:
                            records = items[n].values()
                            break
                        near = kids[(2 if y > cy else 0) + (1 if x > cx else 0)]
                        if qx0 <= cx <= qx1 or qy0 <= cy <= qy1:
                            for child in kids:
                                if child != near and count[child]:
                                    push(child)
                        if count[near]:
                            push(near)
                        # Its own entries next, then the child nearest the point.
                        n = ~n
                        push(n)
                        continue
                    n = ~n
                elif path:
                    n = path.pop()
                    # The box holds the point, so unless it crosses a split line it lies in
                    # the point's quadrant, and the other three are out: two comparisons
                    # for three bounds tests, here and for a subtree's children
                    # (docs/design.md#decisions).
                    _, _, _, _, cx, cy = geom[n]
                    if qx0 <= cx <= qx1 or qy0 <= cy <= qy1:
                        for child in kids_of[n]:  # type: ignore[union-attr]
                            if child != came_from and count[child]:
                                nx0, ny0, nx1, ny1, _, _ = geom[child]
                                if nx0 <= qx1 and qx0 <= nx1 and ny0 <= qy1 and qy0 <= ny1:
                                    push(child)
                    came_from = n
                else:
                    break
                # n's own entries (an internal node's straddlers, or the root's beyond it).
                own = items[n]
                if not own:
                    continue
                snap = snaps[n]
                if snap is None:
                    snap = snapshot(n)
                # Straddlers hug their split lines: most ancestors' miss the box (the quick
                # test of _intersecting).
                if not (
                    (snap[0] <= qx1 and qx0 <= snap[1]) or (snap[2] <= qy1 and qy0 <= snap[3])
                ):
                    continue
                if len(snap) > 4:  # a whole snapshot: the bisected window of the box
                    found.clear()
                    scan(n, qx0, qy0, qx1, qy1, keep)
                    records = [own[entity] for entity in found]
                else:
                    records = own.values()
                break
        best.sort(reverse=True)
        return [-negated for _, negated in best]
