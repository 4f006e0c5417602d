"""The quadtree's straddler snapshots: each internal node's own entries (the *straddlers*,
which all touch its split lines) sorted for bisection, so that a query or a per-entity pair
search reads a window of them, or rules them all out in four comparisons.

The tree keeps one cache slot per node (a list it owns, beside its other per-node lists);
a slot is ``None`` until a search needs the node's snapshot and again as soon as the node's
entries change: the tree writes that ``None`` itself, inline on its update paths. Two
shapes, both tuples that are never changed in place (a copy of the tree shares them):

- ``Quick``, for a node of fewer than ``SNAP_MIN`` entries: four floats, the x-range of the
  entries across the vertical split line and the y-range of the others. The searches read
  these four inline (``snap[0] <= x1 and x0 <= snap[1]`` ...): most ancestors of a small box
  fail them, and a call per ancestor would cost more than the test.
- ``Snap``, from ``SNAP_MIN`` entries on: the same four floats first, then those across as
  ``(min_y, record)`` by min_y, their largest height and bounding box, then the others by
  min_x, their largest width and bounding box. ``len(snap) > 4`` tells the shapes apart.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable

from ._records import BBox, Rec, bbox

__all__ = ["SNAP_MIN", "Quick", "Snap", "StraddlerSnapshots", "build_snapshot"]

_INF = math.inf
_ulp = math.ulp

#: Below this many entries a node is scanned entry by entry; from it on, through its sorted
#: snapshot. Straddlers of the split lines near the root grow with the world's side (sqrt N):
#: 458 per query at N = 200,000, where a bisected window reads a handful.
SNAP_MIN = 12

Snap = tuple[
    float, float, float, float,
    list[tuple[float, Rec]], float, BBox, list[Rec], float, BBox,
]
#: A smaller node's snapshot: only the quick test, the first four floats of a ``Snap``.
Quick = tuple[float, float, float, float]
_Geom = tuple[float, float, float, float, float, float]
_Report = Callable[[int], None]


def build_snapshot(entries: dict[int, Rec], cx: float) -> Snap | Quick:
    """The snapshot of a node whose own entries are ``entries`` and whose vertical split
    line is ``x = cx``: those across the line sorted by min_y (they are spread along it),
    the others by min_x; a node with fewer than ``SNAP_MIN`` entries gets the quick test's
    four floats alone.

    The quick test on small ancestors spares the per-entity pair search most of their
    entries: -14% instructions per frame at N = 10,000 with 10% or 1% moving, -11% at
    N = 50,000, snapshots rebuilt after every frame's moves included."""
    if len(entries) < SNAP_MIN:
        ax0 = gy0 = _INF
        ax1 = gy1 = -_INF
        for rx0, ry0, rx1, ry1, _ in entries.values():
            if rx0 <= cx <= rx1:
                if rx0 < ax0:
                    ax0 = rx0
                if rx1 > ax1:
                    ax1 = rx1
            else:
                if ry0 < gy0:
                    gy0 = ry0
                if ry1 > gy1:
                    gy1 = ry1
        return (ax0, ax1, gy0, gy1)
    across: list[tuple[float, Rec]] = []
    along: list[Rec] = []
    for rec in entries.values():
        if rec[0] <= cx <= rec[2]:
            across.append((rec[1], rec))
        else:
            along.append(rec)
    across.sort()
    along.sort()
    boxes = [rec for _, rec in across]
    across_box = bbox(boxes)
    along_box = bbox(along)
    return (
        across_box[0],
        across_box[2],
        along_box[1],
        along_box[3],
        across,
        max([r[3] - r[1] for r in boxes], default=0.0),
        across_box,
        along,
        max([r[2] - r[0] for r in along], default=0.0),
        along_box,
    )


class StraddlerSnapshots:
    """The snapshots of one tree's nodes, read through the tree's own per-node lists (the
    same list objects, so a node the tree clears, reuses or empties is seen at once)."""

    __slots__ = ("_cache", "_geom", "_items")

    def __init__(
        self,
        items: list[dict[int, Rec]],
        geom: list[_Geom],
        cache: list[Snap | Quick | None],
    ) -> None:
        self._items = items
        self._geom = geom
        self._cache = cache

    def get(self, node: int) -> Snap | Quick:
        """The node's snapshot, built now and cached until its entries change."""
        snap = self._cache[node] = build_snapshot(self._items[node], self._geom[node][4])
        return snap

    def scan(self, node: int, x0: float, y0: float, x1: float, y1: float, report: _Report) -> None:
        """Report each entry of ``node`` itself whose box intersects ``(x0, y0, x1, y1)``.

        A node with many entries (an internal node near the root, whose straddlers grow
        with the world's side) is read through its sorted snapshot: a bisection finds the
        window of entries that can reach the box, instead of reading them all.
        """
        items = self._items[node]
        if len(items) < SNAP_MIN:
            for bx0, by0, bx1, by1, other in items.values():
                if bx0 <= x1 and x0 <= bx1 and by0 <= y1 and y0 <= by1:
                    report(other)
            return
        cached = self._cache[node]
        if cached is None:
            cached = self.get(node)
        # A node of SNAP_MIN entries or more has the whole snapshot, never the quick one
        # (an annotation, not typing.cast: that is a call, on the path of every query).
        snap: Snap = cached  # type: ignore[assignment]
        _, _, _, _, across, max_h, (ax0, ay0, ax1, ay1), along, max_w, (gx0, gy0, gx1, gy1) = snap
        # Straddlers hug their split lines; a box away from them misses the bounding box of
        # them all, and the node costs four comparisons (most ancestors of a small box).
        if across and ax0 <= x1 and x0 <= ax1 and ay0 <= y1 and y0 <= ay1:
            # An entry whose min_y is below y0 - max_h ends below y0; a few ulps of slack
            # keep the window exact under rounding.
            low = y0 - max_h
            low -= 2.0 * (_ulp(max_h) + _ulp(low))
            for k in range(bisect_left(across, (low,)), len(across)):
                by0, (bx0, _, bx1, by1, other) = across[k]
                if by0 > y1:
                    break
                if bx0 <= x1 and x0 <= bx1 and y0 <= by1:
                    report(other)
        if along and gx0 <= x1 and x0 <= gx1 and gy0 <= y1 and y0 <= gy1:
            low = x0 - max_w
            low -= 2.0 * (_ulp(max_w) + _ulp(low))
            for k in range(bisect_left(along, (low,)), len(along)):
                bx0, by0, bx1, by1, other = along[k]
                if bx0 > x1:
                    break
                if x0 <= bx1 and by0 <= y1 and y0 <= by1:
                    report(other)
