"""Components saved as columns: what lets a world of 100,000 entities pickle and load in a
fraction of the time pickle takes over its objects one by one.

pickle saves an object through its ``__reduce_ex__``: a call, a tuple, a class reference,
the state and a memo entry for each, about a microsecond an object, and a dict per object
for a slotted class's default state; loading runs ``__setstate__`` once per object. A world
holds a few components per entity, so that was most of a save. :func:`pack` saves a list of
components as columns instead: each field of ``Position`` and ``AABB`` one ``array('d')``
for the whole list, each slot (or ``__dict__`` entry) of a plain class one list, and
:func:`unpack` makes the objects again in bulk.

Identity is what must not change: pickle saves an object referred to from two places once,
and loads it as one object. A component packed here is not an object in the pickle, so
another reference to it elsewhere in the same pickle would load as a copy. So a component
is packed only when the references to it are exactly those its caller accounts for (the
esper table that holds it, a processor's record): ``sys.getrefcount`` says so, exactly, in
CPython. Any other holder (a second entity sharing it, the game's own object, esper's
query caches) leaves it to pickle, as an object, where pickle keeps it one object. A
component left to pickle costs what it did before; nothing else changes.

Which components are packed
    - *floats*: an exact instance of the ``Position`` or ``AABB`` class in use whose fields
      are all floats (a value assigned since and not yet checked, an int, leaves it to
      pickle, which saves what it holds);
    - *plain*: an exact instance of a class defined in Python (every class of its MRO but
      ``object``) that pickles by Python's default (no ``__reduce__``, ``__reduce_ex__``,
      ``__getstate__``, ``__getnewargs__`` or ``__getnewargs_ex__`` of its own, not in
      ``copyreg.dispatch_table``), whose state is its slots or its ``__dict__`` with the
      same names as the first such instance's; loaded as pickle loads it: ``cls.__new__``
      then ``__setstate__`` if the class has one, else each value set by name. CPython
      3.11 and later (``object.__getstate__``); older ones leave such components to pickle.
    - *linked*: a component the caller gets back from elsewhere in the same pickle (the
      world's component that a SpatialProcessor's record holds: the processor saves it).
"""

from __future__ import annotations

import copyreg
import sys
from array import array
from collections import deque
from collections.abc import Iterable
from itertools import compress, groupby, repeat
from operator import and_, attrgetter, is_, ne
from typing import Any

from . import components
from .components import AABB, Position

__all__ = ["FIELDS", "LINKED", "Packed", "pack", "unpack"]

#: The codes of a column's entries.
OBJECT, FLOATS, PLAIN, LINKED = 0, 1, 2, 3

#: The fields, by slot name, of the component classes saved as floats.
FIELDS: dict[type, tuple[str, ...]] = {Position: ("_x", "_y"), AABB: ("_w", "_h", "_ox", "_oy")}

#: What pack() returns and unpack() reads: a tag, the entries' codes, the objects left to
#: pickle, ``(class, one array('d') a field)`` of the floats entries (or None), ``(class, "slots" or
#: "dict", names, one list of values per name)`` of the plain entries (or None).
Packed = tuple[str, bytes, list[Any], "tuple[type, tuple[array[float], ...]] | None",
               "tuple[type, str, tuple[str, ...], list[list[Any]]] | None"]

#: What unpack() tracks the floats entries with: (sink, ids, pending); see unpack().
Tracking = tuple[list[int], list[int], "set[int] | frozenset[int]"]

TAG = "columns-1"
_HEAPTYPE = 1 << 9
_OBJECT_DEFAULTS = {
    name: object.__dict__.get(name)
    for name in ("__reduce__", "__reduce_ex__", "__getstate__")
}
_PLAIN_STATES = hasattr(object, "__getstate__")
#: The compiled classes in use that ``_ccomponents.from_columns`` makes (none under
#: ``ECS_SPATIAL_PURE=1`` or unbuilt: the reference's ``__new__`` and ``__setstate__`` then).
_from_columns: Any = getattr(components._twins, "from_columns", None) if components.NATIVE else None
_MADE_IN_C = frozenset((Position, AABB) if _from_columns is not None else ())


def _refs_of_a_list_item() -> int:
    """What ``sys.getrefcount`` gives, mapped over a list, for an item nothing else holds."""
    probe = [object()]
    return next(map(sys.getrefcount, probe))


_BASE = _refs_of_a_list_item()


def _plain_class(cls: type) -> bool:
    """Whether pickle saves an instance of ``cls`` by Python's default: ``cls.__new__``,
    then the state ``object.__getstate__`` gives."""
    if not _PLAIN_STATES or cls in copyreg.dispatch_table:
        return False
    mro = cls.__mro__
    if mro[-1] is not object or not all(c.__flags__ & _HEAPTYPE for c in mro[:-1]):
        return False
    for name, default in _OBJECT_DEFAULTS.items():
        if getattr(cls, name, None) is not default:
            return False
    return not hasattr(cls, "__getnewargs_ex__") and not hasattr(cls, "__getnewargs__")


def pack(
    components: list[Any], held: int | list[int], linked: bool | list[bool] = False
) -> Packed:
    """``components`` as columns. ``held``: how many references to each (one count for
    all, or one each) the caller accounts for besides ``components`` itself; a component
    with more goes to pickle as an object. ``linked``: whether each (or every) component is
    one the caller restores from elsewhere (not saved here). O(len(components)), in bulk:
    a few passes in C over the list, each a ``map``."""
    n = len(components)
    if linked is True:
        return (TAG, bytes([LINKED]) * n, [], None, None)
    counts = list(map(sys.getrefcount, components))
    alone: list[bool] | None
    if isinstance(held, int):
        alone = None if counts.count(_BASE + held) == n else list(
            map((_BASE + held).__eq__, counts)
        )
    else:
        alone = list(map(int.__eq__, counts, map(_BASE.__add__, held)))
        if alone.count(True) == n:
            alone = None
    del counts
    if linked is False or not any(linked):
        codes = bytearray(n)
    else:
        codes = bytearray(map(LINKED.__mul__, linked))
        alone = list(map(bool.__gt__, [True] * n if alone is None else alone, linked))
    types = list(map(type, components))
    kinds = set(types)
    floats = plain = None
    float_cls = next(iter(kinds.intersection(FIELDS)), None)
    if float_cls is not None:
        floats = _pack_floats(components, types, alone, codes, float_cls)
    plain_cls = next((t for t in kinds if t not in FIELDS and _plain_class(t)), None)
    if plain_cls is not None and OBJECT in codes:
        plain = _pack_plain(components, types, alone, codes, plain_cls)
    objects = list(compress(components, map(OBJECT.__eq__, codes))) if OBJECT in codes else []
    return (TAG, bytes(codes), objects, floats, plain)


def _where(
    components: list[Any], types: list[type], alone: list[bool] | None, codes: bytearray,
    cls: type,
) -> tuple[list[int] | None, list[Any]]:
    """The indexes (None for all) and the components that are alone (``None``: all are),
    of class ``cls`` and not coded yet."""
    if alone is None and types.count(cls) == len(types) and codes.count(OBJECT) == len(codes):
        return None, components
    want = list(map(is_, types, repeat(cls)))
    if alone is not None:
        want = list(map(and_, want, alone))
    if codes.count(OBJECT) != len(codes):
        want = list(map(and_, want, map(OBJECT.__eq__, codes)))
    return list(compress(range(len(want)), want)), list(compress(components, want))


def _code(codes: bytearray, at: list[int] | None, code: int) -> None:
    if at is None:
        codes[:] = bytes([code]) * len(codes)
    else:
        for i in at:
            codes[i] = code


def _pack_floats(
    components: list[Any], types: list[type], alone: list[bool] | None, codes: bytearray,
    cls: type,
) -> tuple[type, tuple[array[float], ...]] | None:
    """The fields of the ``cls`` entries that are alone and hold floats only, one array a
    field; their codes set to FLOATS."""
    at, chosen = _where(components, types, alone, codes, cls)
    columns = [list(map(attrgetter(name), chosen)) for name in FIELDS[cls]]
    del chosen
    if any(set(map(type, column)) != {float} for column in columns):
        good = [all(type(v) is float for v in values) for values in zip(*columns, strict=True)]
        at = list(compress(range(len(good)) if at is None else at, good))
        columns = [list(compress(column, good)) for column in columns]
        if not at:
            return None
    _code(codes, at, FLOATS)
    return (cls, tuple(array("d", column) for column in columns))


def _pack_plain(
    components: list[Any], types: list[type], alone: list[bool] | None, codes: bytearray,
    cls: type,
) -> tuple[type, str, tuple[str, ...], list[list[Any]]] | None:
    """The states of the ``cls`` entries that are alone, by name, as ``object.__getstate__``
    gives them: for a class without an instance ``__dict__``, ``(None, {slot: value})``
    with every slot set; for one with a ``__dict__`` and no slots, the ``__dict__`` with the
    names of the first, in the same order. Read by name rather than through
    ``__getstate__``, which builds a dict per object. Their codes set to PLAIN; None (all
    left to pickle) for anything else."""
    slots = copyreg._slotnames(cls)  # type: ignore[attr-defined]  # stdlib, untyped
    at, chosen = _where(components, types, alone, codes, cls)
    if not chosen:
        return None
    if cls.__dictoffset__ == 0:
        if not slots:
            return None
        shape, names = "slots", tuple(slots)
        try:
            columns = [list(map(attrgetter(name), chosen)) for name in names]
        except AttributeError:  # a slot not set: pickle saves the others only
            return None
    else:
        if slots:
            return None
        dicts = list(map(attrgetter("__dict__"), chosen))
        shape, names = "dict", tuple(dicts[0])
        if not names or set(map(tuple, dicts)) != {names}:
            return None
        columns = [list(map(dict.__getitem__, dicts, repeat(name))) for name in names]
    if not all(type(n) is str for n in names):
        return None
    _code(codes, at, PLAIN)
    return (cls, shape, names, columns)


def unpack(
    packed: Any, linked: Iterable[Any] = (), what: str = "a column",
    tracked: Tracking | None = None,
) -> list[Any]:
    """The components ``packed`` holds, in order: the objects as pickle loaded them, the
    floats and plain entries as new objects, the linked ones taken from ``linked`` in turn.
    A list (a column saved before columns) is returned as it is. ``ValueError`` naming
    ``what`` for anything :func:`pack` does not make.

    ``tracked``, ``(sink, ids, pending)``: the floats entries are made tracked at ``sink``
    (a SpatialProcessor's dirty list) for their entity in ``ids`` (one a column's entry),
    armed unless it is in ``pending``, as ``components.track`` then ``rearm`` leave them:
    born tracked, so that no store can reach one untracked (SpatialProcessor.__setstate__).
    """
    if type(packed) is list:
        return packed
    if type(packed) is not tuple or len(packed) != 5 or packed[0] != TAG:
        raise ValueError(f"{what}: not a column of components ({type(packed).__name__})")
    _, codes, objects, floats, plain = packed
    if type(codes) is not bytes or type(objects) is not list:
        raise ValueError(f"{what}: a column's codes must be bytes and its objects a list")
    sizes = [codes.count(code) for code in (OBJECT, FLOATS, PLAIN, LINKED)]
    if sum(sizes) != len(codes):
        raise ValueError(f"{what}: a column's codes must be from 0 to 3")
    parts: list[Iterable[Any]] = [
        _checked_objects(objects, sizes[OBJECT], what),
        _unpack_floats(floats, sizes[FLOATS], what, _tracking_of(tracked, codes)),
        _unpack_plain(plain, sizes[PLAIN], what),
        linked,
    ]
    for code, size in enumerate(sizes):
        if size == len(codes):
            found = list(parts[code])
            if code == LINKED and len(found) != size:
                raise ValueError(f"{what}: {size} linked components, {len(found)} given")
            return found
    lists = [list(part) for part in parts]
    for code, (size, found) in enumerate(zip(sizes, lists, strict=True)):
        if len(found) != size:
            raise ValueError(f"{what}: {size} entries coded {code}, {len(found)} given")
    if sum(map(ne, codes, codes[1:])) < len(codes) // 16:
        # A few runs of one code each (a few objects among many floats): a slice a run.
        merged: list[Any] = []
        taken = [0, 0, 0, 0]
        for code, run in groupby(codes):
            length = len(bytes(run))
            merged += lists[code][taken[code] : taken[code] + length]
            taken[code] += length
        return merged
    # Each part in the order of its places, then the places sorted: a merge of the parts'
    # ascending runs, in C, rather than a Python loop that puts each entry at its place.
    places: list[int] = []
    entries: list[Any] = []
    for code, found in enumerate(lists):
        places += compress(range(len(codes)), map(code.__eq__, codes))
        entries += found
    return list(map(entries.__getitem__, sorted(range(len(places)), key=places.__getitem__)))


def _checked_objects(objects: list[Any], size: int, what: str) -> list[Any]:
    if len(objects) != size:
        raise ValueError(f"{what}: {size} objects coded, {len(objects)} held")
    return objects


def _tracking_of(tracked: Tracking | None, codes: bytes) -> Tracking | None:
    """``tracked`` with the ids of a column's floats entries alone."""
    if tracked is None:
        return None
    sink, ids, pending = tracked
    if len(ids) != len(codes):
        raise ValueError(f"{len(ids)} ids for a column of {len(codes)} entries")
    if codes.count(FLOATS) != len(codes):
        ids = list(compress(ids, map(FLOATS.__eq__, codes)))
    return sink, ids, pending


def _unpack_floats(
    floats: Any, size: int, what: str, tracked: Tracking | None = None
) -> list[Any]:
    """New components of the floats entries, as their ``__setstate__`` makes them:
    untracked, or born tracked by ``tracked`` (``unpack``; ids of these entries alone)."""
    if floats is None:
        if size:
            raise ValueError(f"{what}: {size} entries coded as floats, no floats held")
        return []
    if type(floats) is not tuple or len(floats) != 2 or type(floats[1]) is not tuple:
        raise ValueError(f"{what}: floats must be (class, one array('d') a field)")
    cls, columns = floats
    names = FIELDS.get(cls)
    if names is None:
        raise ValueError(f"{what}: {cls!r} is not a class saved as floats")
    if len(columns) != len(names) or not all(
        type(c) is array and c.typecode == "d" and len(c) == size for c in columns
    ):
        raise ValueError(
            f"{what}: {size} {cls.__name__}s take {len(names)} arrays('d') of {size} floats"
        )
    if cls in _MADE_IN_C:
        made: list[Any] = _from_columns(cls, columns, *(tracked or ()))
        return made
    made = list(map(cls.__new__, repeat(cls, size)))
    deque(map(cls.__setstate__, made, zip(*columns, strict=True)), 0)
    if tracked is not None:  # the tracking slots set as from_columns sets them
        sink, ids, pending = tracked
        deque(map(setattr, made, repeat("_owner"), repeat(sink)), 0)
        deque(map(setattr, made, repeat("_eid"), ids), 0)
        armed = repeat(sink) if not pending else [None if e in pending else sink for e in ids]
        deque(map(setattr, made, repeat("_sink"), armed), 0)
    return made


def _unpack_plain(plain: Any, size: int, what: str) -> list[Any]:
    """New objects of the plain entries, made as pickle makes them from their state."""
    if plain is None:
        if size:
            raise ValueError(f"{what}: {size} entries coded as plain, no states held")
        return []
    if type(plain) is not tuple or len(plain) != 4:
        raise ValueError(f"{what}: plain entries must be (class, shape, names, columns)")
    cls, shape, names, columns = plain
    if (not isinstance(cls, type) or shape not in ("slots", "dict") or type(names) is not tuple
            or not all(type(n) is str for n in names) or type(columns) is not list
            or len(columns) != len(names)
            or not all(type(c) is list and len(c) == size for c in columns)):
        raise ValueError(f"{what}: plain entries of {size} objects in no shape pack() makes")
    new: Any = cls.__new__
    made: list[Any] = list(map(new, repeat(cls, size)))
    setstate = getattr(cls, "__setstate__", None)
    if setstate is not None:
        rows = zip(*columns, strict=True)
        if shape == "slots":
            states: Iterable[Any] = ((None, dict(zip(names, r, strict=True))) for r in rows)
        else:
            states = (dict(zip(names, r, strict=True)) for r in rows)
        deque(map(setstate, made, states), 0)
    elif shape == "slots":
        for name, column in zip(names, columns, strict=True):
            deque(map(setattr, made, repeat(name), column), 0)
    else:
        interned = [sys.intern(name) for name in names]
        for obj, values in zip(made, zip(*columns, strict=True), strict=True):
            obj.__dict__.update(zip(interned, values, strict=True))
    return made
