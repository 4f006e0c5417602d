"""A uniform grid of boxes keyed by int, for the small local questions of the culling and
proximity processors ("which of these boxes may touch this box").

Private: the index of the package is the QuadTree. This grid answers where a tree answers
slowly: many queries with small boxes of about one size, against a set of boxes that is
small and local (the watchers' reach squares; the entities around a camera): reach squares
straddle a tree's split lines and pile up near its root (the measurement:
``docs/design.md``, "Decisions").

``query`` answers a superset (every box sharing a cell with the query box); callers test
exactly with :class:`~ecs_spatial.geometry.Box`'s own predicates, so exactness never depends
on the cell size. A box spanning more than ``MAX_CELLS`` cells is kept apart, in a set that
every query returns, and a query box spanning more cells than are occupied scans the
occupied cells instead: no box, however large, costs more than that.

Any finite box and any positive cell size work, from subnormals to the largest floats. A
coordinate's cell is ``floor(x / cell)`` (computed as ``x * (1 / cell)``); where that
product overflows to an infinity (a tiny cell, a coordinate near the end of the float
range) the cell is ``+-FAR``, beyond every finite one. The superset promise needs only that
the cell of a coordinate never decreases as the coordinate grows: then two intersecting
boxes span overlapping ranges of cells. Rounding, overflow and ``FAR`` all keep that order;
far coordinates merely share their edge cells.

Invariants (``check`` asserts them): ``boxes``, ``_where`` and the members of the cells and
of ``_big`` name the same keys; a key is in ``_big`` exactly when its box spans more than
``MAX_CELLS`` cells, and otherwise ``_where`` holds its span and it is a member of exactly
the cells of that span; no cell is empty.

This module imports nothing outside the standard library and ``geometry``.
"""

from __future__ import annotations

import math
import sys

from .geometry import Box

__all__ = ["CellGrid"]

#: Boxes spanning more cells than this are kept apart and returned by every query.
MAX_CELLS = 64

#: The cell of a coordinate whose ``x / cell`` overflows: beyond ``floor`` of every finite
#: float (which is below 2**1024), so cells stay in the order of the coordinates.
FAR = 2**1024

_floor = math.floor
_MAX = sys.float_info.max


class CellGrid:
    """Boxes keyed by int, hashed into square cells. ``boxes`` maps each key to its box."""

    __slots__ = ("_big", "_cells", "_inv", "_where", "boxes")

    def __init__(self, cell: float = 1.0) -> None:
        self._inv = _inverse(cell)
        self._cells: dict[tuple[int, int], set[int]] = {}
        self._where: dict[int, tuple[int, int, int, int] | None] = {}  # None: in _big
        self._big: set[int] = set()
        self.boxes: dict[int, Box] = {}

    def __len__(self) -> int:
        return len(self.boxes)

    def __contains__(self, key: object) -> bool:
        return key in self.boxes

    def reset(self, cell: float) -> None:
        """Empty the grid and use square cells of side ``cell`` (1 if not positive; the
        smallest side is about 5.6e-309, the inverse of the largest float)."""
        self._inv = _inverse(cell)
        self._cells.clear()
        self._where.clear()
        self._big.clear()
        self.boxes.clear()

    def _span(self, box: tuple[float, float, float, float]) -> tuple[int, int, int, int]:
        """The cells ``(x0, y0, x1, y1)`` of the box's corners (see the module docstring)."""
        inv = self._inv
        try:  # a try costs nothing while nothing raises (docs/design.md#decisions)
            return (
                _floor(box[0] * inv),
                _floor(box[1] * inv),
                _floor(box[2] * inv),
                _floor(box[3] * inv),
            )
        except OverflowError:  # floor(+-inf), or an int coordinate beyond every float
            span = (
                _far_cell(box[0], inv),
                _far_cell(box[1], inv),
                _far_cell(box[2], inv),
                _far_cell(box[3], inv),
            )
            # FAR keeps the cells in order (module docstring); were it wrong, a span turned
            # inside out would also send put round a loop of 2**1024 cells.
            assert span[0] <= span[2] and span[1] <= span[3], (box, span)
            return span

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

    def check(self) -> None:
        """Assert every invariant listed in the module docstring (``AssertionError`` naming
        the first broken one). O(n + cells spanned); for tests."""
        where = self._where
        assert where.keys() == self.boxes.keys(), "_where and boxes name different keys"
        assert self._big == {k for k, span in where.items() if span is None}, "_big"
        spanned: dict[tuple[int, int], set[int]] = {}
        for key, box in self.boxes.items():
            x0, y0, x1, y1 = span = self._span(box)
            big = (x1 - x0 + 1) * (y1 - y0 + 1) > MAX_CELLS
            assert big == (where[key] is None), f"key {key}: big is {big}, _where disagrees"
            if not big:
                assert where[key] == span, f"key {key}: _where {where[key]} != span {span}"
                for ix in range(x0, x1 + 1):
                    for iy in range(y0, y1 + 1):
                        spanned.setdefault((ix, iy), set()).add(key)
        assert self._cells == spanned, "the cells' members are not the keys spanning them"


def _inverse(cell: float) -> float:
    """``1 / cell`` as the grid uses it: finite and positive for any positive cell (the
    largest float for a cell so small that its inverse overflows); 1 for a cell that is not
    positive (or NaN); 0, one cell for everything, for a cell beyond every float."""
    try:
        if not cell > 0.0:
            return 1.0
        inv = 1.0 / cell
    except OverflowError:  # an int cell too large for a float
        return 0.0
    return inv if inv <= _MAX else _MAX


def _far_cell(x: float, inv: float) -> int:
    """``floor(x * inv)``, or ``+-FAR`` where that product overflows (``inv`` >= 0)."""
    try:
        return _floor(x * inv)
    except OverflowError:
        return FAR if x > 0 else -FAR
