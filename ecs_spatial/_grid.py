"""A uniform grid of boxes keyed by int, for the small local questions of the culling and
proximity processors ("which of these boxes may touch this box").

Private: the index of the package is the QuadTree. This grid answers where a tree answers
slowly: many queries with small boxes of about one size, against a set of boxes that is
small and local (the watchers' reach squares; the entities around a camera). Measured on
CPython 3.11: a proximity look-up per moved entity fell from 34 us with a QuadTree of the
reach squares to 11.5 us with this grid (N = 10,000, 1,000 watchers of radius 50: reach
squares of side 100 straddle the tree's split lines and pile up near its root).

``query`` answers a superset (every box sharing a cell with the query box); callers test
exactly with :class:`~ecs_spatial.geometry.Box`'s own predicates, so exactness never depends
on the cell size. A box spanning more than ``MAX_CELLS`` cells is kept apart, in a set that
every query returns, and a query box spanning more cells than are occupied scans the
occupied cells instead.

This module imports nothing outside the standard library and ``geometry``.
"""

from __future__ import annotations

import math

from .geometry import Box

__all__ = ["CellGrid"]

#: Boxes spanning more cells than this are kept apart and returned by every query.
MAX_CELLS = 64

_floor = math.floor


class CellGrid:
    """Boxes keyed by int, hashed into square cells. ``boxes`` maps each key to its box."""

    __slots__ = ("_big", "_cells", "_inv", "_where", "boxes")

    def __init__(self, cell: float = 1.0) -> None:
        self._inv = 1.0 / cell if cell > 0.0 else 1.0
        self._cells: dict[tuple[int, int], set[int]] = {}
        self._where: dict[int, tuple[int, int, int, int] | None] = {}  # None: in _big
        self._big: set[int] = set()
        self.boxes: dict[int, Box] = {}

    def __len__(self) -> int:
        return len(self.boxes)

    def __contains__(self, key: object) -> bool:
        return key in self.boxes

    def reset(self, cell: float) -> None:
        """Empty the grid and use square cells of side ``cell`` (1 if not positive)."""
        self._inv = 1.0 / cell if cell > 0.0 else 1.0
        self._cells.clear()
        self._where.clear()
        self._big.clear()
        self.boxes.clear()

    def _span(self, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        inv = self._inv
        return (
            _floor(box[0] * inv),
            _floor(box[1] * inv),
            _floor(box[2] * inv),
            _floor(box[3] * inv),
        )

    def put(self, key: int, box: Box) -> None:
        """Insert ``key`` with ``box``, or move it there. Complexity: O(cells spanned)."""
        self.boxes[key] = box
        span = self._span(box)
        where = self._where
        if key in where:
            if where[key] == span:
                return  # same cells: the usual case for a small step
            self._unbucket(key)
        x0, y0, x1, y1 = span
        if (x1 - x0 + 1) * (y1 - y0 + 1) > MAX_CELLS:
            self._big.add(key)
            where[key] = None
            return
        cells = self._cells
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                members = cells.get((ix, iy))
                if members is None:
                    cells[(ix, iy)] = {key}
                else:
                    members.add(key)
        where[key] = span

    def discard(self, key: int) -> None:
        """Forget ``key``, if present."""
        if self.boxes.pop(key, None) is not None:
            self._unbucket(key)

    def _unbucket(self, key: int) -> None:
        span = self._where.pop(key)
        if span is None:
            self._big.discard(key)
            return
        cells = self._cells
        x0, y0, x1, y1 = span
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                members = cells[(ix, iy)]
                members.discard(key)
                if not members:
                    del cells[(ix, iy)]

    def query(self, box: tuple[float, float, float, float]) -> set[int]:
        """Every key whose box shares a cell with ``box`` (a superset of those whose box
        intersects it), as a new set. Complexity: O(cells spanned + keys returned)."""
        x0, y0, x1, y1 = self._span(box)
        cells = self._cells
        out = set(self._big)
        if x0 == x1 and y0 == y1:  # the usual case: a small box in one cell
            members = cells.get((x0, y0))
            if members:
                out |= members
            return out
        if (x1 - x0 + 1) * (y1 - y0 + 1) > len(cells):
            for (ix, iy), members in cells.items():
                if x0 <= ix <= x1 and y0 <= iy <= y1:
                    out |= members
            return out
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                members = cells.get((ix, iy))
                if members:
                    out |= members
        return out
