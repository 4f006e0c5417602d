"""What the quadtree stores and how it reads what it is given: the record of an entry, and
the rules that turn a caller's id, box or point into one (or into the error that names what
is wrong). The compiled core calls these same functions (through ``ecs_spatial.quadtree``),
so both classes accept and refuse the same values with the same messages.
"""

from __future__ import annotations

import math
import sys
from operator import index
from typing import cast

from .geometry import Box, box_floats, to_float

__all__ = [
    "BBox",
    "BoxLike",
    "Rec",
    "bbox",
    "coords",
    "entity_id",
    "from_buffers",
    "lookup_id",
    "missing",
    "point",
    "shown_id",
    "to_box",
]

_INF = math.inf
_float = float
_int = int
_box_new = tuple.__new__

#: An entry: (min_x, min_y, max_x, max_y, entity), four floats and an int id.
Rec = tuple[float, float, float, float, int]
#: A bounding box as four floats (min_x, min_y, max_x, max_y).
BBox = tuple[float, float, float, float]
#: What the index takes as a box: a ``Box`` or any ``(min_x, min_y, max_x, max_y)``.
BoxLike = Box | tuple[float, float, float, float]


def coords(box: object, entity: int | None = None) -> tuple[float, float, float, float]:
    """The four coordinates of a ``Box`` or of any valid 4-sequence, as floats (an int, or
    any other real number, as the nearest float: ``Box``'s rule), else the error that says
    what is wrong (naming ``entity`` when there is one)."""
    try:
        x0, y0, x1, y1 = cast("tuple[float, float, float, float]", box)
    except (TypeError, ValueError):
        prefix = "" if entity is None else f"entity {entity!r}: "
        raise TypeError(
            f"{prefix}expected a box (min_x, min_y, max_x, max_y), got {box!r}"
        ) from None
    if type(box) is Box or (
        x0.__class__ is y0.__class__ is x1.__class__ is y1.__class__ is _float
        and -_INF < x0 <= x1 < _INF
        and -_INF < y0 <= y1 < _INF
    ):
        return x0, y0, x1, y1
    try:
        return box_floats(x0, y0, x1, y1)
    except (TypeError, ValueError) as error:
        if entity is None:
            raise
        raise type(error)(f"entity {entity!r}: {error}") from None


def entity_id(entity: object) -> int:
    """``entity`` as an int id: an integer-like object (a numpy integer) as its int, else a
    ``TypeError`` naming it. Ids are sorted into pairs, so one str or float among the ints
    would otherwise break ``find_all_intersections`` much later, far from its cause; and a
    float or a bool equal to an int (``1.0``, ``True``) would find that int's entry in a
    dict and be stored in its place."""
    if entity.__class__ is _int:
        return entity
    if not isinstance(entity, bool):
        try:
            return index(entity)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise TypeError(f"entity ids are ints, got {shown_id(entity)} ({type(entity).__name__})")


def lookup_id(entity: object) -> int | None:
    """The int id a lookup means by ``entity``, or ``None`` for a value that cannot be an id
    (a float, a bool, a str...), which is then in no index: ``entity_id``'s rule, without
    its error."""
    if entity.__class__ is _int:
        return entity
    try:
        return entity_id(entity)
    except TypeError:
        return None


def missing(entity: object) -> KeyError:
    """The ``KeyError`` of a lookup that found nothing, saying so when the value is no id."""
    hint = "" if lookup_id(entity) is not None else f" (ids are ints, not {type(entity).__name__})"
    return KeyError(f"entity {shown_id(entity)} is not in the index{hint}")


def shown_id(entity: object) -> str:
    """``repr(entity)``, or ``object``'s repr for an int subclass too long to print."""
    try:
        return repr(entity)
    except ValueError:  # an int subclass too long to print
        return object.__repr__(entity)


def point(x: float, y: float) -> tuple[float, float]:
    """A query point as two finite floats (an int as the nearest float), else ``TypeError``
    or ``ValueError`` naming it."""
    if x.__class__ is y.__class__ is _float and -_INF < x < _INF and -_INF < y < _INF:
        return x, y
    fx = to_float(x, "query point x")
    fy = to_float(y, "query point y")
    if not (-_INF < fx < _INF and -_INF < fy < _INF):
        raise ValueError(f"query point ({x!r}, {y!r}) must have finite coordinates")
    return fx, fy


def to_box(rec: Rec) -> Box:
    """The ``Box`` of a stored record (already validated, so no second check)."""
    return _box_new(Box, rec[:4])


def bbox(records: list[Rec]) -> BBox:
    """The bounding box of some records (an empty box far away if there are none)."""
    if not records:
        return (_INF, _INF, -_INF, -_INF)
    return (
        min([r[0] for r in records]),
        min([r[1] for r in records]),
        max([r[2] for r in records]),
        max([r[3] for r in records]),
    )


def _typed_view(obj: object, kinds: str) -> memoryview | None:
    """A C-contiguous view of ``obj`` holding 8-byte items of one of the struct ``kinds``
    (native byte order), or None if ``obj`` is no such buffer."""
    try:
        view = memoryview(obj)  # type: ignore[arg-type]
    except TypeError:
        return None
    fmt = view.format
    if fmt[:1] in ("@", "=") or (fmt[:1] == "<" and _LITTLE) or (fmt[:1] in ">!" and not _LITTLE):
        fmt = fmt[1:]
    if view.c_contiguous and view.itemsize == 8 and len(fmt) == 1 and fmt in kinds:
        return view
    view.release()
    return None


_LITTLE = sys.byteorder == "little"


def from_buffers(
    entities: object, boxes: object, method: str
) -> tuple[list[int], list[BBox]] | None:
    """``entities`` and ``boxes`` as lists, when they are buffers: the ids as 8-byte ints
    (``array('q')``, a numpy ``int64`` array) and the boxes as doubles, 4 per box, flat or
    in rows of 4 (``array('d')``, a numpy ``float64`` array); None if either is not such a
    buffer (then they are iterables, read as such). The compiled core reads the same buffers
    in place; the ids and boxes are then checked as any others, with the same errors."""
    ids_view = _typed_view(entities, "qln")
    if ids_view is None:
        return None
    with ids_view:
        box_view = _typed_view(boxes, "d")
        if box_view is None:
            return None
        with box_view:
            floats = box_view.nbytes // 8
            if not (
                (box_view.ndim <= 1 and floats % 4 == 0)
                or (box_view.ndim == 2 and box_view.shape is not None and box_view.shape[1] == 4)
            ):
                raise ValueError(
                    f"{method}: a buffer of boxes holds 4 floats per box (flat, or rows of 4), "
                    f"got {floats} floats in {box_view.ndim} dimension(s)"
                )
            if ids_view.ndim > 1:
                raise ValueError(f"{method}: a buffer of ids is flat")
            ids: list[int] = ids_view.cast("B").cast("q").tolist()
            flat = cast("list[float]", box_view.cast("B").cast("d").tolist())
    return ids, [
        (flat[i], flat[i + 1], flat[i + 2], flat[i + 3]) for i in range(0, len(flat), 4)
    ]
