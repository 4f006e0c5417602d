"""Wrap-around (toroidal) worlds: the period of a wrapped ``QuadTree`` and the arithmetic of
its canonical boxes, points and images (issue 28). The class docstring of ``quadtree.QuadTree``
states the rules; this module computes them, and the units of the class call it when their
tree has a period (``tree._wrap`` is not ``None``).

A period is kept as ``(x0, y0, w, h, ex, ey)``: the wrap box's low corner, its width and
height (``x1 - x0`` and ``y1 - y0``, as floats compute them) and the ends of the canonical
range, ``ex = x0 + w`` and ``ey = y0 + h`` (as floats compute them too). A coordinate is
*canonical* when ``x0 <= v < ex``; the canonical image of any finite ``v`` is
``wrap_coord``'s.

It imports only ``_records`` and the standard library: the units import it, never the
reverse. Its name has no ``_tree_`` prefix because it is no mixin of the class (the mirror
rule of ``tests/test_house.py`` asks a compiled twin of each ``_tree_*`` unit).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable

from ._records import Rec, coords

__all__ = [
    "BAD_WRAP",
    "CAST_TOO_LONG",
    "FULL",
    "RADIUS_OVER_HALF",
    "Period",
    "canonical",
    "cast_shifts",
    "image_shifts",
    "period_of",
    "wrap_coord",
    "wrap_point",
]

#: (x0, y0, w, h, ex, ey): see the module docstring.
Period = tuple[float, float, float, float, float, float]

#: The refusal of a period (the value as given).
BAD_WRAP = "wrap must be a box (x0, y0, x1, y1) of finite width and height > 0, got {!r}"
#: The refusal of a box too wide for the period.
TOO_WIDE = (
    "entity {}: box {!r} is wider than half the period of the wrapped tree "
    "(at most {!r} by {!r})"
)
#: The refusal of a box whose canonical image is past the float range.
NO_IMAGE = (
    "entity {}: box {!r} has no image in the period {!r} of the wrapped tree (its distance "
    "from the period is past the float range)"
)
#: The refusal of a radius over half the smaller period.
RADIUS_OVER_HALF = (
    "radius {!r} is over half the smaller period ({!r}) of the wrapped tree: an entity "
    "could be within it through two of its images"
)
#: The refusal of a cast across more periods than ``MAX_CAST_CELLS`` cells.
CAST_TOO_LONG = (
    "a cast across {} cells of the period of the wrapped tree: at most {} (cast a shorter "
    "segment, or the same one in pieces)"
)
#: The most cells of the period a cast may cross (each costs a plain cast per image).
MAX_CAST_CELLS = 100_000
#: A query interval that covers a whole axis (a query box as wide as the period or wider).
FULL = (-sys.float_info.max, sys.float_info.max)


def period_of(value: object) -> Period:
    """The period a ``wrap=`` value gives: a ``Box`` or any ``(x0, y0, x1, y1)`` of finite
    floats whose width and height, as floats compute them, are finite and > 0; else
    ``ValueError`` (``TypeError`` for what is no box at all) naming the value."""
    try:
        x0, y0, x1, y1 = coords(value)
    except (TypeError, ValueError):
        raise ValueError(BAD_WRAP.format(value)) from None
    w = x1 - x0
    h = y1 - y0
    if not (0.0 < w < math.inf and 0.0 < h < math.inf):
        raise ValueError(BAD_WRAP.format(value))
    return (x0, y0, w, h, x0 + w, y0 + h)


def wrap_coord(v: float, origin: float, p: float, end: float) -> float:
    """The canonical image of ``v`` in ``[origin, end)`` (``end = origin + p``), or NaN if
    ``v - origin`` is past the float range.

    The rule: a canonical ``v`` is kept as it is, to the bit; else ``r = fmod(v - origin,
    p)`` (``fmod`` is exact), plus ``p`` if negative, and the image is ``origin + r``; an
    image that rounds to ``end`` or past it is ``origin`` (so a coordinate exactly at the
    seam, ``end``, is ``origin``). With ``origin == 0`` the image differs from ``v`` by a
    whole number of periods exactly, but for the one rounding of ``r + p`` for negative
    ``v``; elsewhere it is the nearest float to such an image."""
    if origin <= v < end:
        return v
    d = v - origin
    if not -math.inf < d < math.inf:
        return math.nan
    r = math.fmod(d, p)
    if r < 0.0:
        r += p
    c = origin + r
    return c if c < end else origin


def canonical(
    x0: float, y0: float, x1: float, y1: float, entity: int, period: Period
) -> tuple[float, float, float, float]:
    """The box as a wrapped tree keeps it: its min corner moved to its canonical image, its
    width and height kept (``max = min' + (max - min)``: a box of zero size stays one). A
    canonical box is kept to the bit. ``ValueError`` naming ``entity`` if the stored box
    would be wider than half the period, or if it has no finite image."""
    ox, oy, w, h, ex, ey = period
    cx = wrap_coord(x0, ox, w, ex)
    cy = wrap_coord(y0, oy, h, ey)
    if cx != cx or cy != cy:
        raise ValueError(NO_IMAGE.format(entity, (x0, y0, x1, y1), (ox, oy, ex, ey)))
    if cx == x0 and cy == y0:
        nx1, ny1 = x1, y1
    else:
        nx1 = cx + (x1 - x0)
        ny1 = cy + (y1 - y0)
    if not (nx1 - cx <= w * 0.5 and ny1 - cy <= h * 0.5):
        raise ValueError(TOO_WIDE.format(entity, (x0, y0, x1, y1), w * 0.5, h * 0.5))
    return cx, cy, nx1, ny1


def canonical_rec(rec: Rec, period: Period) -> Rec:
    """``canonical`` of a checked record, the same tuple if it is canonical already."""
    x0, y0, x1, y1, entity = rec
    box = canonical(x0, y0, x1, y1, entity, period)
    if box == (x0, y0, x1, y1):
        return rec
    return (*box, entity)


def wrap_point(x: float, y: float, period: Period) -> tuple[float, float]:
    """The canonical image of a checked point (every finite point has one: ``fmod`` of a
    finite difference; a difference past the float range refuses with ``ValueError``)."""
    ox, oy, w, h, ex, ey = period
    cx = wrap_coord(x, ox, w, ex)
    cy = wrap_coord(y, oy, h, ey)
    if cx != cx or cy != cy:
        raise ValueError(f"point ({x!r}, {y!r}) has no image in the period of the wrapped tree")
    return cx, cy


def image_shifts(lo: float, hi: float, origin: float, p: float, end: float) -> list[float]:
    """The shifts (``0``, ``p``, ``-p``) that bring the interval ``[lo, hi]`` (``lo``
    canonical) onto the stored boxes of its axis, which lie in ``[origin, end + p / 2]``:
    ``0`` and ``+p`` always (a stored box across the far seam reaches ``lo + p``), ``-p``
    when the interval reaches the seam itself (``hi >= end``)."""
    shifts = [0.0, p]
    if hi >= end or hi - p >= origin:
        shifts.append(-p)
    return shifts


def query_intervals(
    lo: float, hi: float, origin: float, p: float, end: float
) -> list[tuple[float, float]]:
    """The plain intervals that stand for the wrapped interval ``[lo, hi]`` (checked, any
    size): the whole axis when it is as wide as the period or wider, else its canonical
    image and the images ``image_shifts`` names."""
    if hi - lo >= p:
        return [FULL]
    c = wrap_coord(lo, origin, p, end)
    if c != c:
        return [FULL]  # unreachable: a checked interval narrower than p has an image
    d = c + (hi - lo)
    return [(c + s, d + s) for s in image_shifts(c, d, origin, p, end)]


def point_images(x: float, y: float, period: Period) -> Iterable[tuple[float, float]]:
    """The nine images of a canonical point, one period either way on each axis: every
    stored box's nearest image to the point is the box itself seen from one of them."""
    _, _, w, h, _, _ = period
    for sx in (0.0, w, -w):
        for sy in (0.0, h, -h):
            yield x + sx, y + sy


def _cell(v: float, origin: float, p: float) -> int:
    """The index of the period cell of ``v``: ``floor((v - origin) / p)``; ``ValueError``
    if it is past the float range."""
    q = (v - origin) / p
    if not -math.inf < q < math.inf:
        raise ValueError(
            f"a cast at {v!r} is past the float range from the period of the wrapped tree"
        )
    return math.floor(q)


def cast_shifts(
    ax: float, ay: float, bx: float, by: float, bw: float, bh: float, period: Period
) -> list[tuple[float, float]]:
    """The shifts by whole periods under which a cast meets every image of a stored box it
    may meet: the box of size ``bw`` by ``bh`` (0 by 0 for a ray) whose min corner moves
    from ``(ax, ay)`` to ``(bx, by)`` crosses the period cells ``(i, j)`` (column by
    column, the rows that the swept region covers in each); in cell ``(i, j)`` it may meet
    the images of boxes stored in cells ``(0, 0)`` to ``(1, 1)`` (a stored box reaches
    half a period past its own cell) moved to ``(i - a, j - b)``, a and b in 0 and 1; the
    cast is shifted by ``-((i - a) W, (j - b) H)`` instead, with ``a`` and ``b`` from -1
    to 1 (a cell boundary that the floats round either way is covered both ways).
    ``ValueError`` if the swept region crosses more than ``MAX_CAST_CELLS`` cells."""
    ox, oy, w, h, _, _ = period
    lx, hx = min(ax, bx), max(ax, bx)
    i_lo, i_hi = _cell(lx, ox, w), _cell(hx + bw, ox, w)
    if i_hi - i_lo + 1 > MAX_CAST_CELLS:
        raise ValueError(CAST_TOO_LONG.format(i_hi - i_lo + 1, MAX_CAST_CELLS))
    cells: set[tuple[int, int]] = set()
    for i in range(i_lo, i_hi + 1):
        # The min corner's x over which the swept box meets column i, and its y there.
        lo = max(lx, ox + i * w - bw)
        hi = min(hx, ox + (i + 1) * w)
        if ax == bx or lo > hi:
            ys = (ay, by)
        else:
            slope = (by - ay) / (bx - ax)
            ys = (ay + (lo - ax) * slope, ay + (hi - ax) * slope)
        j_lo, j_hi = _cell(min(ys), oy, h), _cell(max(ys) + bh, oy, h)
        if len(cells) + j_hi - j_lo + 1 > MAX_CAST_CELLS:
            raise ValueError(CAST_TOO_LONG.format(len(cells) + j_hi - j_lo + 1, MAX_CAST_CELLS))
        cells.update((i, j) for j in range(j_lo, j_hi + 1))
    near = {(i - a, j - b) for i, j in cells for a in (-1, 0, 1) for b in (-1, 0, 1)}
    return [(-i * w, -j * h) for i, j in sorted(near)]
