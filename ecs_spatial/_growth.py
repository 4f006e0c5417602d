"""How the quadtree's root grows toward a box outside it (the *Bounds* section of
``quadtree``'s docstring): the first root of a tree made without bounds, one doubling, and
as many doublings as a box takes, each edge clamped to the finite floats and the whole
limited to ``MAX_GROWTH`` doublings past the bounds the tree was made with.
"""

from __future__ import annotations

import math
import sys

from .geometry import midpoint

__all__ = ["MAX_GROWTH", "can_grow_toward", "doubled_toward", "first_root", "grown", "within"]

_MAX = sys.float_info.max
_ulp = math.ulp

#: How many times the root may double beyond the bounds it was made with (2**64 times wider).
#: The compiled core's ``MAX_GROWTH`` is the same number.
MAX_GROWTH = 64


def within(bounds: tuple[float, ...], box: tuple[float, ...]) -> bool:
    """Whether the closed ``bounds`` contain ``box`` (both ``(min_x, min_y, max_x, max_y,
    ...)``): for a root, the same as lying strictly inside its fit bounds."""
    return (
        bounds[0] <= box[0] and box[2] <= bounds[2] and bounds[1] <= box[1] and box[3] <= bounds[3]
    )


def first_root(box: tuple[float, ...]) -> tuple[float, float, float, float]:
    """The bounds of a root made around the first box of a tree without a bounds hint: a
    square of side four times the box's larger side about its centre (side 2 about a point),
    clamped to the finite range (a box wider than half the range would overflow it)."""
    x0, y0, x1, y1 = box[0], box[1], box[2], box[3]
    cx = midpoint(x0, x1)
    cy = midpoint(y0, y1)
    # x1 - x0 may overflow to inf: the clamps below then take the whole finite range. A
    # point far out gets a few float steps on each side, not 1.0, which 1e300 would absorb.
    half = max(x1 - x0, y1 - y0) * 2.0 or max(1.0, _ulp(cx), _ulp(cy))
    return (
        min(x0, max(cx - half, -_MAX)),
        min(y0, max(cy - half, -_MAX)),
        max(x1, min(cx + half, _MAX)),
        max(y1, min(cy + half, _MAX)),
    )


def doubled_toward(
    bounds: tuple[float, ...], box: tuple[float, ...]
) -> tuple[float, float, float, float] | None:
    """``bounds`` doubled on each axis toward ``box`` (on an axis the box does not pass, away
    from the lower edge), each new edge clamped to the finite range; ``None`` if that
    changes nothing (the bounds span the whole range on the sides toward the box)."""
    x0, y0, x1, y1 = bounds[0], bounds[1], bounds[2], bounds[3]
    # A degenerate (zero-width) root still grows: by 1, or by a float step where 1 is
    # absorbed. The width itself may overflow to inf: the clamp then stops at the range.
    w = x1 - x0 or max(1.0, _ulp(x0))
    h = y1 - y0 or max(1.0, _ulp(y0))
    if box[0] < x0:
        x0 = max(x0 - w, -_MAX)
    else:
        x1 = min(x1 + w, _MAX)
    if box[1] < y0:
        y0 = max(y0 - h, -_MAX)
    else:
        y1 = min(y1 + h, _MAX)
    result = (x0, y0, x1, y1)
    return None if result == tuple(bounds[:4]) else result


def grown(
    bounds: tuple[float, ...], level: int, box: tuple[float, ...]
) -> tuple[tuple[float, float, float, float], int]:
    """The root's bounds and level once doubled toward ``box`` as often as it takes to contain
    it, or as often as allowed (``MAX_GROWTH`` doublings past the original bounds)."""
    x0, y0, x1, y1 = bounds[0], bounds[1], bounds[2], bounds[3]
    current = (x0, y0, x1, y1)
    while level > -MAX_GROWTH and not within(current, box):
        doubled = doubled_toward(current, box)
        if doubled is None:
            break
        current = doubled
        level -= 1
    return current, level


def can_grow_toward(bounds: tuple[float, ...], level: int, box: tuple[float, ...]) -> bool:
    """Whether a root with these bounds and level may still double toward ``box``."""
    return level > -MAX_GROWTH and doubled_toward(bounds, box) is not None
