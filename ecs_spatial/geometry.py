"""Axis-aligned boxes and the one boundary rule that every part of ecs_spatial shares.

Boxes are **closed**: a box contains its edges, so two boxes that share only an edge or a
corner intersect, as in Box2D and pymunk. A zero-width or zero-height box (a point or a
segment) is a valid box and intersects whatever it touches.

Every predicate the index answers is defined here, once:

- ``intersects``: ``a.min_x <= b.max_x and b.min_x <= a.max_x`` and the same on y;
- ``distance_to_point``: ``sqrt(dx*dx + dy*dy)`` with ``dx``, ``dy`` the gaps to the box on
  each axis (0 inside), and "within ``r``" means ``distance_to_point(x, y) <= r``;
- ``segment_entry``: the fraction of a segment at which it first touches the box (slab test).

The quadtree inlines these expressions in its hot loops for speed; it inlines exactly these
expressions (same comparisons, same arithmetic), so that the index and a brute-force scan
agree to the last bit. The tests hold them to it.

This module imports nothing outside the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple, TypeVar

__all__ = ["Box", "segment_entry"]

_INF = math.inf
_sqrt = math.sqrt
_B = TypeVar("_B", bound="Box")


class _BoxFields(NamedTuple):
    min_x: float
    min_y: float
    max_x: float
    max_y: float


class Box(_BoxFields):
    """An immutable closed axis-aligned box ``[min_x, max_x] x [min_y, max_y]``.

    A ``Box`` is a tuple, so it unpacks (``x0, y0, x1, y1 = box``), compares and hashes as
    one. Construction validates: every coordinate must be finite and each min must not
    exceed its max, otherwise ``ValueError`` names the offending value.

    >>> Box(0, 0, 10, 5).intersects(Box(10, 5, 20, 20))   # touching corners intersect
    True
    >>> Box(0, 0, 10, 5).center
    (5.0, 2.5)
    """

    __slots__ = ()

    def __new__(cls, min_x: float, min_y: float, max_x: float, max_y: float) -> Box:
        # One chained comparison rejects NaN (every comparison with NaN is false), +-inf and
        # inverted extents; only the rare failure pays for the detailed message.
        try:
            valid = -_INF < min_x <= max_x < _INF and -_INF < min_y <= max_y < _INF
        except TypeError:
            valid = False
        if not valid:
            raise bad_box_error(min_x, min_y, max_x, max_y)
        return tuple.__new__(cls, (min_x, min_y, max_x, max_y))

    @classmethod
    def _make(cls: type[_B], iterable: Iterable[Any]) -> _B:  # type: ignore[override]
        """Build from an iterable, validated like every Box (NamedTuple's own ``_make``,
        which ``_replace`` uses, would skip ``__new__`` and let a bad box through)."""
        return cls(*iterable)

    @classmethod
    def from_center(cls, x: float, y: float, width: float, height: float) -> Box:
        """The box of the given size centred on ``(x, y)``."""
        hw = width * 0.5
        hh = height * 0.5
        return cls(x - hw, y - hh, x + hw, y + hh)

    @classmethod
    def from_size(cls, x: float, y: float, width: float, height: float) -> Box:
        """The box whose lower-left corner is ``(x, y)``."""
        return cls(x, y, x + width, y + height)

    @property
    def width(self) -> float:
        """``max_x - min_x``."""
        return self.max_x - self.min_x

    @property
    def height(self) -> float:
        """``max_y - min_y``."""
        return self.max_y - self.min_y

    @property
    def area(self) -> float:
        """``width * height`` (0 for a point or a segment)."""
        return (self.max_x - self.min_x) * (self.max_y - self.min_y)

    @property
    def center(self) -> tuple[float, float]:
        """The centre point ``(x, y)``."""
        return ((self.min_x + self.max_x) * 0.5, (self.min_y + self.max_y) * 0.5)

    def intersects(self, other: tuple[float, float, float, float]) -> bool:
        """Whether the two closed boxes share at least one point (touching counts)."""
        return (
            self.min_x <= other[2]
            and other[0] <= self.max_x
            and self.min_y <= other[3]
            and other[1] <= self.max_y
        )

    def contains(self, other: tuple[float, float, float, float]) -> bool:
        """Whether ``other`` lies entirely inside this box (its edges included)."""
        return (
            self.min_x <= other[0]
            and other[2] <= self.max_x
            and self.min_y <= other[1]
            and other[3] <= self.max_y
        )

    def contains_point(self, x: float, y: float) -> bool:
        """Whether the point lies inside the box or on its edge."""
        return self.min_x <= x <= self.max_x and self.min_y <= y <= self.max_y

    def distance_to_point(self, x: float, y: float) -> float:
        """Euclidean distance from the point to the nearest point of the box (0 inside)."""
        min_x, min_y, max_x, max_y = self
        dx = min_x - x if x < min_x else (x - max_x if x > max_x else 0.0)
        dy = min_y - y if y < min_y else (y - max_y if y > max_y else 0.0)
        return _sqrt(dx * dx + dy * dy)

    def union(self, other: tuple[float, float, float, float]) -> Box:
        """The smallest box containing both boxes."""
        return Box(
            min(self.min_x, other[0]),
            min(self.min_y, other[1]),
            max(self.max_x, other[2]),
            max(self.max_y, other[3]),
        )

    def expanded(self, margin: float) -> Box:
        """This box grown by ``margin`` on every side (``ValueError`` if that inverts it)."""
        return Box(
            self.min_x - margin, self.min_y - margin, self.max_x + margin, self.max_y + margin
        )

    def segment_entry(self, x0: float, y0: float, x1: float, y1: float) -> float | None:
        """See :func:`segment_entry`."""
        return segment_entry(self, x0, y0, x1, y1)


def segment_entry(
    box: tuple[float, float, float, float], x0: float, y0: float, x1: float, y1: float
) -> float | None:
    """The fraction ``t`` in [0, 1] of the segment ``(x0, y0) -> (x1, y1)`` at which it first
    touches the closed ``box``, 0 if it starts inside, or ``None`` if it never touches it.

    The slab test: on each axis the segment is inside the box's slab for an interval of
    ``t``; the segment touches the box where the two intervals overlap. Grazing an edge or a
    corner counts as touching. A zero-length segment is a point test.
    """
    min_x, min_y, max_x, max_y = box
    t_enter = 0.0
    t_exit = 1.0
    dx = x1 - x0
    if dx == 0.0:
        if x0 < min_x or x0 > max_x:
            return None
    else:
        ta = (min_x - x0) / dx
        tb = (max_x - x0) / dx
        if ta > tb:
            ta, tb = tb, ta
        if ta > t_enter:
            t_enter = ta
        if tb < t_exit:
            t_exit = tb
        if t_enter > t_exit:
            return None
    dy = y1 - y0
    if dy == 0.0:
        if y0 < min_y or y0 > max_y:
            return None
    else:
        ta = (min_y - y0) / dy
        tb = (max_y - y0) / dy
        if ta > tb:
            ta, tb = tb, ta
        if ta > t_enter:
            t_enter = ta
        if tb < t_exit:
            t_exit = tb
        if t_enter > t_exit:
            return None
    return t_enter


def bad_box_error(min_x: object, min_y: object, max_x: object, max_y: object) -> Exception:
    """The error that says precisely what is wrong with the coordinates of a refused box:
    ``TypeError`` for a value that is not a real number, ``ValueError`` otherwise.

    Shared by ``Box`` and by the index, which validates plain tuples without building a
    ``Box`` (a ``Box`` costs ~0.7 us to build, the inline check ~0.06 us).
    """
    values = {"min_x": min_x, "min_y": min_y, "max_x": max_x, "max_y": max_y}
    for name, value in values.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return TypeError(f"Box {name} must be a real number, got {value!r}")
        if math.isnan(value):
            return ValueError(f"Box {name} is NaN")
        if math.isinf(value):
            return ValueError(f"Box {name} is infinite ({value!r})")
    if min_x > max_x:  # type: ignore[operator]
        return ValueError(
            f"Box min_x={min_x!r} is greater than max_x={max_x!r} (negative width)"
        )
    return ValueError(f"Box min_y={min_y!r} is greater than max_y={max_y!r} (negative height)")
