"""Axis-aligned boxes and the one boundary rule that every part of ecs_spatial shares.

Boxes are **closed**: a box contains its edges, so two boxes that share only an edge or a
corner intersect, as in Box2D and pymunk. A zero-width or zero-height box (a point or a
segment) is a valid box and intersects whatever it touches.

Every predicate the index answers is defined here, once:

- ``intersects``: ``a.min_x <= b.max_x and b.min_x <= a.max_x`` and the same on y;
- ``distance_to_point``: ``math.hypot(dx, dy)`` with ``dx``, ``dy`` the gaps to the box on
  each axis (0 inside), and "within ``r``" means ``distance_to_point(x, y) <= r``;
- ``segment_entry``: the fraction of a segment at which it first touches the box (slab test;
  ``floats_segment_entry`` is its core, for callers whose coordinates are floats already);
- ``sweep_time``: the fraction of a motion at which a moving box first touches a fixed one
  (the same slab test, with the moving box's far edge; ``floats_sweep_time`` is its core). A
  box of zero size moving by ``(dx, dy)`` gives exactly ``segment_entry`` from its corner
  wherever ``x + dx - x == dx`` (the two compute the same quotients);
- ``midpoint``: the centre of an interval, which is also where the index splits a node.

Coordinates are floats, over the whole finite range. Anything else that is a real number (an
int, a ``fractions.Fraction``, a NumPy scalar) is converted to the nearest float on the way
in, and a value that is not a real number (a ``bool`` included), NaN, an infinity, or an int
too large for a float is refused by name before anything is built. No computation here
overflows or underflows on the way to its answer: a centre at ``1e308``, a gap of ``1e200``
or of ``1e-200``, a segment from ``-1e308`` to ``1e308`` all give the exact float answer (a
distance or a width beyond the largest float is ``inf``, as IEEE 754 rounds it).

The quadtree inlines these expressions in its hot loops for speed; it inlines exactly these
expressions (same comparisons, same arithmetic), so that the index and a brute-force scan
agree to the last bit. The tests hold them to it. (Its points are checked finite floats, so
it writes the gap inside an axis as ``0.0`` where ``distance_to_point`` writes ``x - x``,
which is NaN only for NaN.)

This module imports nothing outside the standard library, but for ``_cgeometry``, the
compiled constructor of ``Box``, when it is built (``COMPILED``).
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Iterable
from typing import Any, NamedTuple, TypeVar, cast

__all__ = ["Box", "segment_entry", "sweep_time"]

_INF = math.inf
_MAX = sys.float_info.max
_hypot = math.hypot
_B = TypeVar("_B", bound="Box")
_Coords = tuple[float, float, float, float]


class _BoxFields(NamedTuple):
    min_x: float
    min_y: float
    max_x: float
    max_y: float


class Box(_BoxFields):
    """An immutable closed axis-aligned box ``[min_x, max_x] x [min_y, max_y]``.

    A ``Box`` is a tuple, so it unpacks (``x0, y0, x1, y1 = box``), compares and hashes as
    one. Its four fields are always floats: an int (or any other real number) is stored as
    the nearest float, so ``Box(1, 2, 3, 4) == (1.0, 2.0, 3.0, 4.0)`` field by field and
    ``Box(2**53 + 1, 0, 2**53 + 1, 0).min_x == 2.0**53``. Construction validates: every
    coordinate must be a real number (``TypeError`` otherwise; a ``bool`` is refused), finite
    and within the float range, and each min must not exceed its max, otherwise
    ``ValueError`` names the offending field and value.

    >>> Box(0, 0, 10, 5).intersects(Box(10, 5, 20, 20))   # touching corners intersect
    True
    >>> Box(0, 0, 10, 5).center
    (5.0, 2.5)
    """

    __slots__ = ()

    def __new__(cls, min_x: float, min_y: float, max_x: float, max_y: float) -> Box:
        # Four floats (the common case) need one chained comparison, which rejects NaN (every
        # comparison with NaN is false), +-inf and inverted extents; anything else is
        # converted, or refused by name, by the careful path.
        if (
            type(min_x) is float
            and type(min_y) is float
            and type(max_x) is float
            and type(max_y) is float
        ):
            if -_INF < min_x <= max_x < _INF and -_INF < min_y <= max_y < _INF:
                return tuple.__new__(cls, (min_x, min_y, max_x, max_y))
            raise bad_box_error(min_x, min_y, max_x, max_y)
        return tuple.__new__(cls, box_floats(min_x, min_y, max_x, max_y))

    @classmethod
    def _make(cls: type[_B], iterable: Iterable[Any]) -> _B:  # type: ignore[override]
        """Build from an iterable, validated like every Box (NamedTuple's own ``_make``,
        which ``_replace`` uses, would skip ``__new__`` and let a bad box through)."""
        return cls(*iterable)

    @classmethod
    def from_center(cls, x: float, y: float, width: float, height: float) -> Box:
        """The box of the given size centred on ``(x, y)``."""
        try:
            hw = width * 0.5
            hh = height * 0.5
            return cls(x - hw, y - hh, x + hw, y + hh)
        except (OverflowError, TypeError):  # an int past the float range, a non-number
            raise _arguments_error(x=x, y=y, width=width, height=height) from None

    @classmethod
    def from_size(cls, x: float, y: float, width: float, height: float) -> Box:
        """The box whose lower-left corner is ``(x, y)``."""
        try:
            return cls(x, y, x + width, y + height)
        except (OverflowError, TypeError):
            raise _arguments_error(x=x, y=y, width=width, height=height) from None

    @classmethod
    def around(cls, x: float, y: float, radius: float) -> Box:
        """A box that every box within ``radius`` of ``(x, y)`` intersects (``box.intersects``
        holds whenever ``box.distance_to_point(x, y) <= radius``): the circle's square,
        widened by a relative margin that covers rounding, clamped to the finite range (a
        reach beyond it holds every finite box on that side). The index's ``query_radius``
        and ``nearest`` prune with exactly this box.

        >>> Box.around(0, 0, 5).contains(Box(-5, -5, 5, 5))
        True
        >>> Box.around(1e308, 0, 1e308).max_x == sys.float_info.max  # clamped to the range
        True
        """
        x = to_float(x, "x")
        y = to_float(y, "y")
        radius = to_float(radius, "radius")
        if not (-_INF < x < _INF and -_INF < y < _INF and 0.0 <= radius < _INF):
            raise ValueError(f"Box.around needs a finite point and radius >= 0, got "
                             f"({x!r}, {y!r}, {radius!r})")
        x0, y0, x1, y1 = reach(x, y, radius)
        return tuple.__new__(cls, (max(x0, -_MAX), max(y0, -_MAX), min(x1, _MAX), min(y1, _MAX)))

    @property
    def width(self) -> float:
        """``max_x - min_x`` (``inf`` for a box wider than the largest float)."""
        return self.max_x - self.min_x

    @property
    def height(self) -> float:
        """``max_y - min_y`` (``inf`` for a box taller than the largest float)."""
        return self.max_y - self.min_y

    @property
    def area(self) -> float:
        """``width * height``: 0 for a point or a segment (even one longer than the largest
        float, whose ``width * height`` would be ``inf * 0``, NaN), ``inf`` past the range."""
        width = self.max_x - self.min_x
        height = self.max_y - self.min_y
        return width * height if width and height else 0.0

    @property
    def center(self) -> tuple[float, float]:
        """The centre point ``(x, y)``, each coordinate the :func:`midpoint` of the box's
        extent (``Box(1e308, 0, 1e308, 0).center == (1e308, 0.0)``: no overflow)."""
        return (midpoint(self.min_x, self.max_x), midpoint(self.min_y, self.max_y))

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
        """Euclidean distance from the point to the nearest point of the box (0 inside):
        ``math.hypot(dx, dy)`` of the gaps on each axis, which scales before it squares, so
        a gap of ``1e200`` or of ``1e-200`` is measured exactly (``sqrt(dx*dx + dy*dy)``
        would give ``inf`` and 0); ``inf`` only for a distance beyond the largest float,
        NaN for a NaN coordinate (never within any radius)."""
        min_x, min_y, max_x, max_y = self
        # Inside on an axis, the gap is x - x: 0.0 for any number, but NaN for NaN, which
        # fails every comparison and would otherwise measure 0, "touching", from anywhere.
        try:
            dx = min_x - x if x < min_x else (x - max_x if x > max_x else x - x)
            dy = min_y - y if y < min_y else (y - max_y if y > max_y else y - y)
        except (OverflowError, TypeError):  # an int past the float range, a non-number
            raise _arguments_error(x=x, y=y) from None
        return _hypot(dx, dy)

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
        try:
            return Box(
                self.min_x - margin, self.min_y - margin, self.max_x + margin, self.max_y + margin
            )
        except (OverflowError, TypeError):
            raise _arguments_error(margin=margin) from None

    def segment_entry(self, x0: float, y0: float, x1: float, y1: float) -> float | None:
        """See :func:`segment_entry`."""
        return segment_entry(self, x0, y0, x1, y1)


#: ``Box.__new__`` as written above: the reference for the compiled constructor that
#: ``_cgeometry`` installs (tests compare the two).
_reference_box_new = Box.__dict__["__new__"]


def _compiled_box() -> bool:
    """Give ``Box`` the compiled ``__new__``, call and dealloc of ``_cgeometry`` when it is built
    and ``ECS_SPATIAL_PURE`` is not ``"1"`` (the switch of ``index.NATIVE`` too): four floats
    that form a valid box become a ``Box`` without a Python frame (the common case of every
    ``move(e, Box(...))``), and anything else goes on to the ``__new__`` above, so that every
    ``Box`` and every error is the reference's. The class stays this one: its methods, fields,
    pickles (which load in either build) and subclasses are the same."""
    if os.environ.get("ECS_SPATIAL_PURE") == "1":
        return False
    try:
        from . import _cgeometry
    except ImportError:  # not built (no compiler), or built against another Python
        return False
    _cgeometry.install(Box, _reference_box_new.__func__)
    return True


#: Whether ``Box`` runs on ``_cgeometry`` (see ``_compiled_box``).
COMPILED: bool = _compiled_box()


def segment_entry(
    box: tuple[float, float, float, float], x0: float, y0: float, x1: float, y1: float
) -> float | None:
    """The fraction ``t`` in [0, 1] of the segment ``(x0, y0) -> (x1, y1)`` at which it first
    touches the closed ``box``, 0 if it starts inside, or ``None`` if it never touches it.

    The box and the endpoints are taken as ``Box`` takes coordinates: ints (``2**53 + 1``)
    as the nearest floats, anything else refused by name, and the endpoints must be finite.
    See :func:`floats_segment_entry` for the test itself.
    """
    if not (
        x0.__class__ is y0.__class__ is x1.__class__ is y1.__class__ is float
        and -_INF < x0 < _INF
        and -_INF < y0 < _INF
        and -_INF < x1 < _INF
        and -_INF < y1 < _INF
    ):
        x0, y0, x1, y1 = _segment_floats(x0, y0, x1, y1)
    if type(box) is not Box:
        min_x, min_y, max_x, max_y = box
        if not (
            min_x.__class__ is min_y.__class__ is max_x.__class__ is max_y.__class__ is float
            and -_INF < min_x <= max_x < _INF
            and -_INF < min_y <= max_y < _INF
        ):
            box = Box(min_x, min_y, max_x, max_y)  # converted, or refused by name
    return floats_segment_entry(box, x0, y0, x1, y1)


def floats_segment_entry(
    box: tuple[float, ...], x0: float, y0: float, x1: float, y1: float
) -> float | None:
    """:func:`segment_entry` for a box and endpoints already four and four finite floats
    (the index's records and its checked query points; only the first four items of
    ``box`` are read): the fraction ``t`` in [0, 1] at which the segment first touches the
    closed box, or ``None``.

    The slab test: on each axis the segment is inside the box's slab for an interval of
    ``t``; the segment touches the box where the two intervals overlap. Grazing an edge or a
    corner counts as touching. A zero-length segment is a point test. A segment longer than
    the largest float on an axis (``-1e308 -> 1e308``, whose ``x1 - x0`` overflows) is
    measured in halves on that axis: ``(min_x/2 - x0/2) / (x1/2 - x0/2)``, the same fractions
    (halving is exact at that scale), never the ``0`` that a division by ``inf`` would give.
    A numerator that overflows (a box beyond the segment's end) gives ``+-inf``, which lies
    outside [0, 1] on the right side, as the exact fraction does.
    """
    min_x, min_y, max_x, max_y = box[0], box[1], box[2], box[3]  # a record, a node's geometry
    t_enter = 0.0
    t_exit = 1.0
    dx = x1 - x0
    if dx == 0.0:
        if x0 < min_x or x0 > max_x:
            return None
    else:
        if dx == _INF or dx == -_INF:  # rare: the segment spans more than the float range
            dx = x1 * 0.5 - x0 * 0.5
            ta = (min_x * 0.5 - x0 * 0.5) / dx
            tb = (max_x * 0.5 - x0 * 0.5) / dx
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
        if dy == _INF or dy == -_INF:
            dy = y1 * 0.5 - y0 * 0.5
            ta = (min_y * 0.5 - y0 * 0.5) / dy
            tb = (max_y * 0.5 - y0 * 0.5) / dy
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


def sweep_time(
    box: tuple[float, float, float, float],
    dx: float,
    dy: float,
    other: tuple[float, float, float, float],
) -> float | None:
    """The fraction ``t`` in [0, 1] of the motion ``(dx, dy)`` at which ``box``, moving by
    ``t * (dx, dy)``, first touches the closed box ``other``: 0 if they touch already,
    ``None`` if they never touch during the motion.

    "Touch" is :meth:`Box.intersects` (a shared edge or corner counts, zero-size boxes
    included). Both boxes are taken as ``Box`` takes coordinates (a ``Box`` or any
    4-sequence; ints as the nearest floats, anything else refused by name), and the motion
    must be two finite real numbers (``TypeError`` or ``ValueError`` naming ``dx`` or
    ``dy``). See :func:`floats_sweep_time` for the test itself.

    >>> sweep_time(Box(0, 0, 1, 1), 10, 0, Box(5, 0, 6, 1))   # the right edge reaches x = 5
    0.4
    >>> sweep_time(Box(0, 0, 1, 1), 10, 0, Box(5, 2, 6, 3)) is None
    True

    Complexity: O(1).
    """
    a = box if type(box) is Box else Box(*_coords4(box, "box"))
    b = other if type(other) is Box else Box(*_coords4(other, "other"))
    fdx, fdy = motion_floats(dx, dy)
    return floats_sweep_time(a, fdx, fdy, b)


def floats_sweep_time(
    box: tuple[float, ...], dx: float, dy: float, other: tuple[float, ...]
) -> float | None:
    """:func:`sweep_time` for boxes and a motion already finite floats (the index's query
    box, its records and its nodes' geometry; only the first four items of each box are
    read): the fraction ``t`` in [0, 1] at which ``box`` moving by ``t * (dx, dy)`` first
    touches ``other``, or ``None``.

    The slab test of :func:`floats_segment_entry`, with the moving box's extent: on the x
    axis the boxes touch while ``other.min_x <= box.max_x + t*dx`` and ``box.min_x + t*dx
    <= other.max_x``, that is for ``t`` between ``(other.min_x - box.max_x) / dx`` and
    ``(other.max_x - box.min_x) / dx``; the boxes touch where the two axes' intervals
    overlap within [0, 1]. On an axis without motion the intervals must overlap as they are
    (``intersects``' own comparisons). A box of zero size makes each quotient exactly
    ``floats_segment_entry``'s for the segment from its corner.

    One subtraction and one division per bound, each rounded once: the result is within two
    roundings of the exact fraction, and exact whenever the subtractions are (integer or
    coarse coordinates). The motion is finite, so no quotient is NaN, and none needs the
    halving of ``floats_segment_entry``; a gap past the float range overflows to ``+-inf``,
    which lies outside [0, 1] on the right side, as the exact fraction does (a gap larger
    than any float, over a motion no larger than one, is more than the whole motion).
    """
    # The two axes written out, not a helper called per axis (docs/design.md#decisions); the C twin
    # has the helper, at no cost there.
    min_x, min_y, max_x, max_y = other[0], other[1], other[2], other[3]
    t_enter = 0.0
    t_exit = 1.0
    if dx == 0.0:
        if not (min_x <= box[2] and box[0] <= max_x):
            return None
    else:
        ta = (min_x - box[2]) / dx
        tb = (max_x - box[0]) / dx
        if ta > tb:
            ta, tb = tb, ta
        if ta > t_enter:
            t_enter = ta
        if tb < t_exit:
            t_exit = tb
        if t_enter > t_exit:
            return None
    if dy == 0.0:
        if not (min_y <= box[3] and box[1] <= max_y):
            return None
    else:
        ta = (min_y - box[3]) / dy
        tb = (max_y - box[1]) / dy
        if ta > tb:
            ta, tb = tb, ta
        if ta > t_enter:
            t_enter = ta
        if tb < t_exit:
            t_exit = tb
        if t_enter > t_exit:
            return None
    return t_enter


def motion_floats(dx: object, dy: object) -> tuple[float, float]:
    """A motion ``(dx, dy)`` as two finite floats (an int, or any other real number, as the
    nearest float), else the error naming the first that is not: ``TypeError`` for a value
    that is not a real number (a ``bool`` included), ``ValueError`` for NaN, an infinity or
    an int too large for a float. Shared by :func:`sweep_time` and the index's casts."""
    if type(dx) is float and type(dy) is float and -_INF < dx < _INF and -_INF < dy < _INF:
        return dx, dy
    out = []
    for name, value in (("dx", dx), ("dy", dy)):
        number = to_float(value, f"motion {name}")
        if not -_INF < number < _INF:
            raise ValueError(f"motion {name} must be finite, got {shown(value)}")
        out.append(number)
    return (out[0], out[1])


def _coords4(box: object, what: str) -> _Coords:
    """The four coordinates of a box argument that is no ``Box``, or ``TypeError`` naming it."""
    try:
        x0, y0, x1, y1 = cast("tuple[Any, Any, Any, Any]", box)
    except (TypeError, ValueError):
        raise TypeError(
            f"{what} must be a box (min_x, min_y, max_x, max_y), got {shown(box)}"
        ) from None
    return (x0, y0, x1, y1)


def _segment_floats(x0: object, y0: object, x1: object, y1: object) -> _Coords:
    """A segment's endpoints as finite floats, or the error naming the first that is not."""
    values = {"x0": x0, "y0": y0, "x1": x1, "y1": y1}
    out = []
    for name, value in values.items():
        number = to_float(value, f"segment {name}")
        if not -_INF < number < _INF:
            raise ValueError(f"segment {name} must be finite, got {shown(value)}")
        out.append(number)
    return (out[0], out[1], out[2], out[3])


def _arguments_error(**values: object) -> Exception:
    """The error naming the first of ``values`` that is not a float in range, or that the
    arithmetic overflowed if each one is."""
    for name, value in values.items():
        try:
            to_float(value, name)
        except (TypeError, ValueError) as error:
            return error
    return ValueError(f"the box of {values} overflows the float range")


def midpoint(a: float, b: float) -> float:
    """The float nearest ``(a + b) / 2``, for ``a <= b``, never outside ``[a, b]``: the centre
    of a box, and the point where the index splits a node. ``(a + b) * 0.5`` unless the sum
    overflows (``a`` and ``b`` both beyond half the largest float on one side), then
    ``a * 0.5 + b * 0.5``, exact halves of such large numbers.

    >>> midpoint(1e308, 1.7e308)
    1.35e+308
    """
    s = a + b
    if -_INF < s < _INF:
        return s * 0.5
    return a * 0.5 + b * 0.5


def reach(x: float, y: float, r: float) -> _Coords:
    """``(x0, y0, x1, y1)``: the square of half-side ``r`` about ``(x, y)``, widened by a
    relative margin (1e-12 of ``|x| + |y| + r``, with a floor) so that every box whose
    ``distance_to_point(x, y) <= r`` intersects it. ``x + r`` is rounded, and a box one
    float step past it can still be at a computed distance ``<= r``. The bounds may be
    infinite (a reach past the float range holds every box on that side); the caller's
    coordinates are finite floats and ``r >= 0``.
    """
    slack = (abs(x) + abs(y) + r) * 1e-12 + 1e-300
    return (x - r - slack, y - r - slack, x + r + slack, y + r + slack)


def shown(value: object) -> str:
    """``repr(value)``, or a description for an int too long to print (the interpreter
    refuses to convert ints of more than 4,300 digits to str): how every error message of
    the package shows a refused value."""
    try:
        return repr(value)
    except ValueError:
        if issubclass(type(value), int):  # type(), not isinstance: __class__ may lie
            return f"an int of {int.bit_length(value)} bits"  # type: ignore[arg-type]
        return object.__repr__(value)


def _is_real(value: object) -> bool:
    """Whether ``value`` is a real number that may be a coordinate (a ``bool`` is not)."""
    kind = type(value)
    return kind is float or kind is int or (kind is not bool and isinstance(value, numbers.Real))


def to_float(value: object, what: str) -> float:
    """``value`` as a float (the nearest one, for an int or another real number), or the error
    naming ``what``: ``TypeError`` if it is not a real number (``bool`` included),
    ``ValueError`` if it is finite but too large for a float (``10**400``). NaN and the
    infinities pass through: the caller decides whether they are allowed."""
    if type(value) is float:
        return value
    if not _is_real(value):
        raise TypeError(f"{what} must be a real number, got {shown(value)}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except OverflowError:
        raise ValueError(f"{what} is too large for a float ({shown(value)})") from None
    if (number == _INF or number == -_INF) and not (value == _INF or value == -_INF):
        # A finite value of a wider type (a NumPy longdouble) that float() rounds to inf.
        raise ValueError(f"{what} is too large for a float ({shown(value)})")
    return number


def box_floats(min_x: object, min_y: object, max_x: object, max_y: object) -> _Coords:
    """The four coordinates as floats, validated as ``Box`` validates them, or the error
    (``bad_box_error``) that names what is wrong: the careful path of ``Box`` and of the
    index, for values that are not all floats already."""
    try:
        coords = (
            to_float(min_x, "min_x"),
            to_float(min_y, "min_y"),
            to_float(max_x, "max_x"),
            to_float(max_y, "max_y"),
        )
    except (TypeError, ValueError):
        coords = None
    if coords is not None:
        x0, y0, x1, y1 = coords
        if -_INF < x0 <= x1 < _INF and -_INF < y0 <= y1 < _INF:
            return coords
    raise bad_box_error(min_x, min_y, max_x, max_y)


def bad_box_error(min_x: object, min_y: object, max_x: object, max_y: object) -> Exception:
    """The error that says precisely what is wrong with the coordinates of a refused box:
    ``TypeError`` for a value that is not a real number (a ``bool`` included), ``ValueError``
    for NaN, an infinity, an int too large for a float, or a min above its max.

    Shared by ``Box`` and by the index, which validates plain tuples without building a
    ``Box`` (a ``Box`` costs ~0.7 us to build, the inline check ~0.06 us).
    """
    values = {"min_x": min_x, "min_y": min_y, "max_x": max_x, "max_y": max_y}
    floats = {}
    for name, value in values.items():
        try:
            number = to_float(value, f"Box {name}")
        except (TypeError, ValueError) as error:
            return error
        if number != number:
            return ValueError(f"Box {name} is NaN")
        if number == _INF or number == -_INF:
            return ValueError(f"Box {name} is infinite ({shown(value)})")
        floats[name] = number
    if floats["min_x"] > floats["max_x"]:
        return ValueError(
            f"Box min_x={shown(min_x)} is greater than max_x={shown(max_x)} (negative width)"
        )
    return ValueError(
        f"Box min_y={shown(min_y)} is greater than max_y={shown(max_y)} (negative height)"
    )
