"""What the quadtree stores and how it reads what it is given: the record of an entry, and
the rules that turn a caller's id, box or point into one (or into the error that names what
is wrong). The compiled core calls these same functions (through ``ecs_spatial.quadtree``),
so both classes accept and refuse the same values with the same messages.
"""

from __future__ import annotations

import math
import sys
from array import array
from operator import index
from typing import cast

from .geometry import Box, box_floats, shown, to_float

__all__ = [
    "ALREADY_INDEXED",
    "FLAT_IDS",
    "ID_MAX",
    "ID_MIN",
    "LENGTHS_DIFFER",
    "LISTED_TWICE",
    "BBox",
    "BoxLike",
    "Rec",
    "bbox",
    "coords",
    "entity_id",
    "from_buffers",
    "lookup_id",
    "missing",
    "new_id",
    "out_of_range",
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
#: The ids the index stores: the signed 64-bit range, the compiled core's and the buffers'
#: (``array('q')``). Ids outside it are refused on the way in (``out_of_range``), and, since
#: none can be present, simply not found by every lookup.
ID_MIN = -(2**63)
ID_MAX = 2**63 - 1

# The errors of reading ids and batches, as str.format templates: the compiled core formats
# the same texts (scripts/gen_core_headers.py writes them into _cquadtree_src/constants.h).
#: An insert of an id the index holds.
ALREADY_INDEXED = "entity {!r} is already in the index"
#: A batch that names an id twice.
LISTED_TWICE = "entity {!r} is listed twice"
#: A batch whose ids and boxes differ in length: the method, then what stands after it.
LENGTHS_DIFFER = "{}: entities and boxes differ in length{}"
#: A buffer of ids that is not one-dimensional: the method.
FLAT_IDS = "{}: a buffer of ids is flat"


def coords(box: object, entity: int | None = None) -> tuple[float, float, float, float]:
    """The four coordinates of a ``Box`` or of any valid 4-sequence, as floats (an int, or
    any other real number, as the nearest float: ``Box``'s rule), else the error that says
    what is wrong (naming ``entity`` when there is one)."""
    try:
        x0, y0, x1, y1 = cast("tuple[float, float, float, float]", box)
    except (TypeError, ValueError):
        prefix = "" if entity is None else f"entity {shown_id(entity)}: "
        raise TypeError(
            f"{prefix}expected a box (min_x, min_y, max_x, max_y), got {box!r}"
        ) from None
    # A Box is checked too: one made by tuple.__new__ (or a crafted pickle) skipped Box's.
    if (
        type(x0) is _float
        and type(y0) is _float
        and type(x1) is _float
        and type(y1) is _float
        and -_INF < x0 <= x1 < _INF
        and -_INF < y0 <= y1 < _INF
    ):
        return x0, y0, x1, y1
    try:
        return box_floats(x0, y0, x1, y1)
    except (TypeError, ValueError) as error:
        if entity is None:
            raise
        raise type(error)(f"entity {shown_id(entity)}: {error}") from None


def entity_id(entity: object) -> int:
    """``entity`` as an int id: an integer-like object (a numpy integer, an int subclass) as
    the exact int ``operator.index`` gives, else a ``TypeError`` naming it. Ids are sorted
    into pairs, so one str or float among the ints would otherwise break
    ``find_all_intersections`` much later, far from its cause; and a float or a bool equal to
    an int (``1.0``, ``True``) would find that int's entry in a dict and be stored in its
    place. The test is on ``type()``, which cannot be faked, not on ``__class__``, which an
    object may claim to be ``int``. Any int passes, however large: see ``new_id``."""
    if type(entity) is _int:
        return entity
    if type(entity) is not bool:
        try:
            return index(entity)  # type: ignore[arg-type]
        except TypeError:
            pass
    raise TypeError(f"entity ids are ints, got {shown_id(entity)} ({type(entity).__name__})")


def new_id(entity: object) -> int:
    """``entity`` as an id to store: ``entity_id``'s int, within ``ID_MIN .. ID_MAX`` (else
    ``out_of_range``'s ``OverflowError``)."""
    value = entity_id(entity)
    if ID_MIN <= value <= ID_MAX:
        return value
    raise out_of_range(value)


def out_of_range(value: int) -> OverflowError:
    """The error of an id outside the signed 64-bit range, which neither class stores."""
    return OverflowError(
        f"entity ids are 64-bit ints (from -2**63 to 2**63 - 1), got {shown_id(value)}"
    )


def lookup_id(entity: object) -> int | None:
    """The int id a lookup means by ``entity``, or ``None`` for a value that cannot be an id
    (a float, a bool, a str...), which is then in no index: ``entity_id``'s rule, without
    its error."""
    if type(entity) is _int:
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
    """How an error message shows an id: ``repr(entity)``, or ``an int of N bits`` for an
    int too long to print (``geometry.shown``: more than ``sys.get_int_max_str_digits()``
    digits), so that the message is made whatever the value."""
    return shown(entity)


def point(x: float, y: float) -> tuple[float, float]:
    """A query point as two finite floats (an int as the nearest float), else ``TypeError``
    or ``ValueError`` naming it."""
    if type(x) is _float and type(y) is _float and -_INF < x < _INF and -_INF < y < _INF:
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
                raise ValueError(FLAT_IDS.format(method))
            # Read as bytes, whatever the shape: memoryview.cast refuses a shape with a zero
            # in it, such as the (0, 4) rows of no box.
            ids = array("q", ids_view.tobytes()).tolist()
            flat = array("d", box_view.tobytes()).tolist()
    return ids, [
        (flat[i], flat[i + 1], flat[i + 2], flat[i + 3]) for i in range(0, len(flat), 4)
    ]
