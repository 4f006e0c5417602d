"""The pickle state both quadtree classes write and read: one layout of plain data
(``STATE_FORMAT``), read and checked by one function (``read_state``) whatever class or
version wrote it, and a subclass's own attributes carried beside it. The compiled core calls
these functions too (through ``ecs_spatial.quadtree``), so either class loads the other's
pickles and refuses a bad state with the same message.
"""

from __future__ import annotations

import copy
import copyreg
import math
import struct
from array import array
from collections.abc import Callable
from operator import index, le
from types import MemberDescriptorType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from ._growth import MAX_GROWTH
from ._records import Rec, coords, new_id, shown_id
from ._snapshots import StraddlerSnapshots
from ._tree_storage import BUSY, INDEX_FIELDS, ITEMS, KIDS, NODE
from ._wrap import Period, canonical_rec, period_of
from .geometry import Box

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

__all__ = [
    "MASK64",
    "STATE_FORMAT",
    "State",
    "copy_own_state",
    "entries",
    "entry_hash",
    "mix64",
    "own_state",
    "read_state",
    "restore_own_state",
    "state_of",
]

#: The layout of the state both classes pickle to (``QuadTree.__getstate__``), a dict of plain
#: data:
#:
#: - ``"format"``: 1;
#: - ``"bounds"``: the bounds hint the tree was made with (``clear()`` returns to it), as a
#:   tuple of 4 floats, or ``None``;
#: - ``"threshold"``, ``"max_depth"``: ints, as given to the constructor;
#: - ``"root"``: the root's bounds now, 4 floats, or ``None`` (a tree without bounds that has
#:   no root yet); ``"root_level"``: the root's level, an int from ``-MAX_GROWTH`` (grown as
#:   far as it may) to 0 (the root it was made with);
#: - ``"ids"``: an ``array('q')`` of the ids, in ascending order as both classes write it
#:   (any order is read); ``"boxes"``: an ``array('d')``, 4 coordinates per id, in the same
#:   order (buffers: a pickle copies them whole, and ``read_state`` checks them in bulk);
#: - only for a subclass that has them: ``"attributes"``, its ``__dict__``, and ``"slots"``,
#:   the values of the slots its own classes declare (``{name: value}``);
#: - only for a wrapped tree (``wrap=``): ``"wrap"``, its period as the 4 floats of
#:   ``QuadTree.wrap``. A state without it is a plain tree's (every state written before
#:   wrapped trees were), so the format number stays 2: a version that predates wrapped
#:   trees refuses such a state by its unknown key, rather than load it unwrapped.
#:
#: ``read_state`` reads this and three earlier states: format 1, the same dict with lists of
#: ints and floats for ``"ids"`` and ``"boxes"`` (they may be lists, tuples or arrays in any
#: format); format 0, format 1's dict without ``"format"`` or ``"bounds"`` (the compiled
#: class passed its bounds to the constructor); and the reference's own fields as pickle's
#: default for ``__slots__`` wrote them.
STATE_FORMAT = 2
_STATE_KEYS = ("bounds", "threshold", "max_depth", "root", "root_level", "ids", "boxes")
_OWN_KEYS = ("attributes", "slots")
#: The optional key of a wrapped tree's period.
_WRAP_KEY = "wrap"
#: Mixed into the state hash of a wrapped tree with its period (a plain tree's hash is the
#: one it always was): the same boxes plain and wrapped hash apart.
_WRAP_SALT = 0x5772617050657269


class State(NamedTuple):
    """A state read and checked by ``read_state``: what both classes build a tree from."""

    hint: Box | None
    threshold: int
    max_depth: int
    root: tuple[float, float, float, float] | None
    level: int
    #: The entries: ``(min_x, min_y, max_x, max_y, id)`` tuples, or, read from the buffers
    #: both classes write, those buffers checked (``array('q')`` ids, ``array('d')`` boxes),
    #: which the compiled class copies whole (``entries`` makes the tuples of either).
    records: list[Rec] | tuple[array[int], array[float]]
    attributes: dict[str, Any] | None
    slots: dict[str, Any] | None


def read_state(state: object, cls: type, hint: Box | None) -> State:
    """The tree a state describes, checked: every id an int, listed once, with a valid box;
    the configuration as ``__init__`` takes it; the root present if anything is indexed or
    bounds were given; a subclass's attributes and slots ones that ``cls`` can hold. Else
    ``ValueError`` or ``TypeError`` saying what is wrong, prefixed "QuadTree state: ".

    ``hint`` is the bounds the tree has already, which a format 0 state (no ``"bounds"``) keeps.
    The compiled class reads states through this function too: one rule, one set of messages.
    """
    if type(state) is tuple and len(state) == 2 and type(state[1]) is dict and "_home" in state[1]:
        state = _state_from_fields(state[0], state[1])
    if type(state) is not dict:
        raise TypeError(f"QuadTree state: expected a dict, got {type(state).__name__}")
    version = state.get("format", 0)
    if type(version) is not int or version not in _FORMATS:
        raise ValueError(
            f"QuadTree state: format {version!r} is not one this version reads (0, 1 or 2)"
        )
    keys = _STATE_KEYS if version else _STATE_KEYS[1:]
    unknown = state.keys() - {"format", *keys, *_OWN_KEYS, *((_WRAP_KEY,) if version else ())}
    if unknown:
        raise ValueError(f"QuadTree state: unknown key {sorted(map(repr, unknown))[0]}")
    for key in keys:
        if key not in state:
            raise ValueError(f"QuadTree state: no {key!r}")
    threshold, max_depth, level = state["threshold"], state["max_depth"], state["root_level"]
    for name, value, least in (("threshold", threshold, 1), ("max_depth", max_depth, 0)):
        # type(), not isinstance(): an object can claim to be an int through __class__.
        if type(value) is bool or not issubclass(type(value), int) or index(value) < least:
            raise ValueError(f"QuadTree state: {name} must be an int >= {least}, got {value!r}")
    if version:
        hint = None if state["bounds"] is None else Box(*_state_box(state["bounds"], "bounds"))
    root = None if state["root"] is None else _state_box(state["root"], "root")
    if type(level) is bool or not issubclass(type(level), int) or not -MAX_GROWTH <= level <= 0:
        raise ValueError(
            f"QuadTree state: root_level must be an int from {-MAX_GROWTH} to 0, got {level!r}"
        )
    ids, boxes = state["ids"], state["boxes"]
    for name, value in (("ids", ids), ("boxes", boxes)):
        if type(value) is not list and type(value) is not tuple and type(value) is not array:
            raise TypeError(f"QuadTree state: {name} must be a list, got {type(value).__name__}")
    if len(boxes) != 4 * len(ids):
        raise ValueError(
            f"QuadTree state: {len(ids)} ids take {4 * len(ids)} box coordinates, "
            f"got {len(boxes)}"
        )
    if root is None and (ids or hint is not None):
        raise ValueError(
            "QuadTree state: no root, but "
            + (f"{len(ids)} entities" if ids else "bounds (a tree with bounds has a root)")
        )
    records: list[Rec] | tuple[array[int], array[float]] | None = _checked_buffers(ids, boxes)
    if records is None:
        records = _checked_records(ids, boxes)
    attributes, slots = state.get("attributes"), state.get("slots")
    for name, own in (("attributes", attributes), ("slots", slots)):
        if own is not None and type(own) is not dict:
            raise TypeError(f"QuadTree state: {name} must be a dict, got {type(own).__name__}")
        for key in own or ():
            if type(key) is not str:
                raise TypeError(f"QuadTree state: {name} has a key that is no name: {key!r}")
    if attributes and not cls.__dictoffset__:
        raise TypeError(
            f"QuadTree state: attributes {sorted(attributes)} for {cls.__qualname__}, whose "
            "instances have no __dict__"
        )
    names = _slot_names(cls)
    for name in slots or ():
        if name not in names:
            raise TypeError(f"QuadTree state: {cls.__qualname__} has no slot {name!r}")
    return State(hint, threshold, max_depth, root, level, records, attributes, slots)


#: The formats ``read_state`` reads.
_FORMATS = (0, 1, STATE_FORMAT)
_INF = math.inf


def _checked_buffers(
    ids: object, boxes: object
) -> tuple[array[int], array[float]] | None:
    """A state's ids and boxes if they are an ``array('q')`` and an ``array('d')`` (as both
    classes write them) that pass the checks in bulk: every id listed once, every box finite
    with min <= max. None for any other state, and for one that fails a check: then
    ``_checked_records`` reads it entry by entry, and names the first entry that is wrong."""
    if type(ids) is not array or type(boxes) is not array:
        return None
    if ids.typecode != "q" or boxes.typecode != "d" or len(set(ids)) != len(ids):
        return None
    x0, y0, x1, y1 = boxes[0::4], boxes[1::4], boxes[2::4], boxes[3::4]
    # NaN fails every <=; given min <= max throughout, the extremes bound every coordinate.
    if not (all(map(le, x0, x1)) and all(map(le, y0, y1))):
        return None
    if ids and not (min(x0) > -_INF and max(x1) < _INF and min(y0) > -_INF and max(y1) < _INF):
        return None
    return ids, boxes


def entries(records: list[Rec] | tuple[array[int], array[float]]) -> list[Rec]:
    """A read state's records as ``(min_x, min_y, max_x, max_y, id)`` tuples."""
    if isinstance(records, list):
        return records
    ids, boxes = records
    return list(zip(boxes[0::4], boxes[1::4], boxes[2::4], boxes[3::4], ids, strict=True))


def _checked_records(ids: Any, boxes: Any) -> list[Rec]:
    """The records of a state's ids and boxes, read entry by entry: ``ValueError``,
    ``TypeError`` or ``OverflowError`` naming the first entry that is wrong."""
    records: dict[int, Rec] = {}
    for i, given in enumerate(ids):
        try:
            entity = new_id(given)
            x0, y0, x1, y1 = coords(boxes[4 * i : 4 * i + 4], entity)
        except (TypeError, ValueError, OverflowError) as error:
            raise type(error)(f"QuadTree state: {error}") from None
        if entity in records:
            raise ValueError(f"QuadTree state: entity {shown_id(entity)} is listed twice")
        records[entity] = (x0, y0, x1, y1, entity)
    return list(records.values())


def read_wrap(state: object) -> Period | None:
    """The period of a state ``read_state`` has read (``None`` for a plain tree's, and for
    the fields of a version that predates the format), or the error naming what is wrong
    with it, prefixed "QuadTree state: "."""
    value = state.get(_WRAP_KEY) if type(state) is dict else None
    if value is None:
        return None
    try:
        return period_of(_state_box(value, _WRAP_KEY))
    except ValueError as error:
        raise ValueError(f"QuadTree state: {error}") from None


def _state_box(value: object, name: str) -> tuple[float, float, float, float]:
    """A box of the state (its bounds or its root) as four floats, else the error naming it."""
    try:
        return coords(value)
    except (TypeError, ValueError) as error:
        raise type(error)(f"QuadTree state: {name}: {error}") from None


def state_of(
    bounds: object,
    threshold: object,
    max_depth: object,
    root: int,
    geom: Any,
    level: Any,
    home: dict[int, Any],
) -> dict[str, Any]:
    """The state both classes pickle (format ``STATE_FORMAT``), from the reference's fields:
    its bounds hint, leaf size and depth limit, its root's box and level, and its entries in
    ascending order of id (the same state, and pickle, for the same tree in both classes)."""
    records = [home[entity][ITEMS][entity] for entity in sorted(home)]
    return {
        "format": STATE_FORMAT,
        "bounds": bounds,
        "threshold": threshold,
        "max_depth": max_depth,
        "root": None if root < 0 else geom[root][:4],
        "root_level": 0 if root < 0 else level[root],
        "ids": array("q", [rec[4] for rec in records]),
        "boxes": array("d", [c for rec in records for c in rec[:4]]),
    }


def _state_from_fields(attributes: object, fields: dict[str, Any]) -> dict[str, Any]:
    """The state of a reference tree pickled before the state had a format, which pickle's
    default for ``__slots__`` wrote as ``(its __dict__ or None, {field: value})``."""
    try:
        state = state_of(
            fields["_bounds_hint"], fields["_threshold"], fields["_max_depth"],
            fields["_root"], fields["_geom"], fields["_level"], fields["_home"],
        )
    except (LookupError, TypeError, AttributeError) as error:
        raise ValueError(
            f"QuadTree state: the fields of an earlier version are incomplete ({error!r})"
        ) from None
    own = {name: value for name, value in fields.items() if name not in INDEX_FIELDS}
    if attributes:
        state["attributes"] = attributes
    if own:
        state["slots"] = own
    return state


def _slot_names(cls: type) -> list[str]:
    """The slots a subclass's own classes declare (as their attributes are named), not the
    reference's fields: what a copy or a pickle carries beside the index."""
    names: list[str] = []
    for klass in cls.__mro__:
        if vars(klass).get("__slots__") is INDEX_FIELDS:  # the reference QuadTree
            continue
        declared = vars(klass).get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{klass.__name__.lstrip('_')}{name}"  # a private name, mangled
            if isinstance(vars(klass).get(name), MemberDescriptorType):
                names.append(name)
    return names


def own_state(tree: object) -> dict[str, dict[str, Any]]:
    """A subclass's own attributes: its ``__dict__`` under ``"attributes"`` and the values
    of its own slots under ``"slots"``, each only if there are any."""
    own: dict[str, dict[str, Any]] = {}
    attributes = getattr(tree, "__dict__", None)
    if attributes:
        own["attributes"] = dict(attributes)
    slots: dict[str, Any] = {}
    for name in _slot_names(type(tree)):
        try:
            slots[name] = getattr(tree, name)
        except AttributeError:  # an empty slot stays empty
            continue
    if slots:
        own["slots"] = slots
    return own


def restore_own_state(
    tree: object, attributes: dict[str, Any] | None, slots: dict[str, Any] | None
) -> None:
    """Give ``tree`` these attributes and slot values (``own_state``'s, checked by
    ``read_state`` or taken from a tree of the same class). If one is refused (a subclass's
    ``__setattr__``, a property), the ones set before it are put back as they were, through
    the instance's dict and the slots' own descriptors (which nothing can refuse), and the
    error is raised."""
    if not attributes and not slots:
        return
    old_attributes = dict(vars(tree)) if attributes else None
    members = {name: _slot_member(type(tree), name) for name in slots or ()}
    old_slots = {name: _slot_value(tree, member) for name, member in members.items()}
    try:
        if attributes:
            vars(tree).update(attributes)
        for name, value in (slots or {}).items():
            setattr(tree, name, value)
    except BaseException:
        if old_attributes is not None:
            vars(tree).clear()
            vars(tree).update(old_attributes)
        for name, old in old_slots.items():
            member = members[name]
            if member is None:
                continue
            if old is _EMPTY:
                if _slot_value(tree, member) is not _EMPTY:
                    member.__delete__(tree)
            else:
                member.__set__(tree, old)
        raise


#: What ``_slot_value`` gives for a slot that holds nothing.
_EMPTY = object()


def _slot_member(cls: type, name: str) -> Any:
    """The member descriptor of ``cls``'s slot ``name`` (as its attribute is named), or None."""
    for klass in cls.__mro__:
        member = vars(klass).get(name)
        if isinstance(member, MemberDescriptorType):
            return member
    return None


def _slot_value(tree: object, member: Any) -> object:
    """The value of the slot behind ``member`` (None: no slot), or ``_EMPTY``."""
    if member is None:
        return _EMPTY
    try:
        return member.__get__(tree, type(tree))
    except AttributeError:
        return _EMPTY


def copy_own_state(tree: object, new: object, memo: dict[int, Any] | None) -> None:
    """Give ``new``, a copy of ``tree``'s index, the subclass's own attributes: shared
    (``copy.copy``, ``memo`` None) or deep-copied with ``memo``, ``new`` entered in it
    first (an attribute may refer back to the tree)."""
    own = own_state(tree)
    if not own:
        return
    if memo is not None:
        memo[id(tree)] = new
        own = copy.deepcopy(own, memo)
    restore_own_state(new, own.get("attributes"), own.get("slots"))


# -- the state hash: equal for equal sets of (id, box), in any process ---------------------------
#
# Each entry hashes to splitmix64's finaliser chained over its id (as 64 bits, two's
# complement) and the IEEE bits of its four coordinates (-0.0 counted as 0.0, since the two
# are equal boxes); the tree's hash is the finaliser of the sum of its entries' hashes (mod
# 2**64, so the order of insertion does not matter) xor their number. No use of hash(), which
# PYTHONHASHSEED varies. The compiled core computes the same integers (_cquadtree.c, mix64).

#: 2**64 - 1: the hashes are unsigned 64-bit integers.
MASK64 = (1 << 64) - 1
_double = struct.Struct("<d").pack


def mix64(x: int) -> int:
    """splitmix64's finaliser of a 64-bit value."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def entry_hash(rec: Rec) -> int:
    """The hash of one entry ``(min_x, min_y, max_x, max_y, entity)``."""
    h = mix64(rec[4] & MASK64)
    for value in rec[:4]:
        h = mix64(h ^ int.from_bytes(_double(value + 0.0), "little"))
    return h


#: ``cls.__new__(cls)``, which pickle writes as its NEWOBJ opcode (typeshed omits it).
_newobj: Callable[..., Any] = copyreg.__newobj__  # type: ignore[attr-defined]
_T = TypeVar("_T", bound="_State")


class _State(_Base):
    """Copies, pickles and the state hash of the tree (the functions above do the work)."""

    __slots__ = ()

    def __copy__(self: _T) -> _T:
        """An independent copy (``copy.copy``): changing either tree leaves the other as it
        is. The nodes, their entry dicts and the entity map are new; the records and the
        snapshots, which are never changed in place, are shared; a subclass's own attributes
        (its ``__dict__`` and slots) are shared, as ``copy.copy`` shares them.

        Complexity: O(n + nodes).
        """
        new = self._copy_index()
        copy_own_state(self, new, None)
        return new

    def __deepcopy__(self: _T, memo: dict[int, Any] | None) -> _T:
        """An independent copy (``copy.deepcopy``): the index is ids and floats, immutable,
        so ``__copy__``'s is deep already; a subclass's own attributes are deep-copied, the
        new tree entered in ``memo`` first (an attribute may refer back to the tree; a
        ``memo`` of None, from a direct call, stands for a new one)."""
        new = self._copy_index()
        copy_own_state(self, new, {} if memo is None else memo)
        return new

    def _copy_index(self: _T) -> _T:
        """A new tree of the same class holding a copy of this one's index (``__copy__``)."""
        new = type(self).__new__(type(self))
        new._bounds_hint = self._bounds_hint
        new._threshold = self._threshold
        new._max_depth = self._max_depth
        new._root = self._root
        new._geom = list(self._geom)
        new._kids = list(self._kids)
        new._parent = list(self._parent)
        new._level = list(self._level)
        new._count = list(self._count)
        new._free = list(self._free)
        new._snap = list(self._snap)
        items = new._items = [dict(entries) for entries in self._items]
        fit = new._fit = [
            [*home[:ITEMS], items[home[NODE]], home[NODE], home[KIDS]] for home in self._fit
        ]
        new._home = {entity: fit[home[NODE]] for entity, home in self._home.items()}
        new._snapshots = StraddlerSnapshots(items, new._geom, new._snap)
        new._wrap = self._wrap
        new._busy = False  # a copy made by a where= predicate is not busy itself
        new._pending = []
        return new

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``__getstate__``'s plain state, which the compiled class reads too (and
        writes: either class loads the other's pickles)."""
        return _newobj, (type(self),), self.__getstate__()

    def __getstate__(self) -> dict[str, Any]:
        """The tree as plain data, the same for both classes (``_STATE_FORMAT``): the
        configuration, the root's bounds and level, and each entity's id and box. The shape
        of the tree is a function of these (invariant 5), so ``__setstate__`` rebuilds it
        node for node, whichever class reads them.

        Complexity: O(n).
        """
        state = self._index_state()
        state.update(own_state(self))
        return state

    def __setstate__(self, state: object) -> None:
        """Become the tree ``state`` describes (``__getstate__``'s, written by either class,
        or a pickle of an earlier version): ``ValueError`` or ``TypeError`` naming what is
        wrong with it, before anything changes.

        Complexity: O(n) to read the state, then what ``insert_many`` takes for n entities.
        """
        # A tree made by __reduce__ (copyreg.__newobj__) has no fields yet.
        if getattr(self, "_busy", False):
            raise RuntimeError(BUSY)
        read = read_state(state, type(self), getattr(self, "_bounds_hint", None))
        period = read_wrap(state)
        # A subclass may refuse one of its own attributes, which come last: the index it
        # replaced is then put back (the attributes put themselves back).
        before = self._index_state() if read.attributes or read.slots else None
        self._become(read, period)
        try:
            restore_own_state(self, read.attributes, read.slots)
        except BaseException:
            if before is not None:
                self._become(read_state(before, type(self), self._bounds_hint), read_wrap(before))
            raise

    def _index_state(self) -> dict[str, Any]:
        """``__getstate__`` without a subclass's own attributes."""
        hint = self._bounds_hint
        state = state_of(
            None if hint is None else tuple(hint), self._threshold, self._max_depth,
            self._root, self._geom, self._level, self._home,
        )
        if self._wrap is not None:
            x0, y0, _, _, ex, ey = self._wrap
            state[_WRAP_KEY] = (x0, y0, ex, ey)
        return state

    def _become(self, read: State, period: Period | None = None) -> None:
        """Hold the index a checked state describes (``__setstate__``'s), wrapped by
        ``period`` if given: its boxes are then made canonical, or refused as an insert
        refuses them (``ValueError`` naming the entity, prefixed "QuadTree state: "),
        before anything changes."""
        records = entries(read.records)
        if period is not None:
            try:
                records = [canonical_rec(rec, period) for rec in records]
            except ValueError as error:
                raise ValueError(f"QuadTree state: {error}") from None
        self._reset(read.hint, read.threshold, read.max_depth)  # read_state checked them
        self._wrap = period
        self._clear_nodes()
        self._root = -1
        if read.root is not None:
            self._root = self._new_root(read.root, read.level)
            # insert_records grows the root as inserts would, if need be.
            self._insert_records(records)

    def state_hash(self) -> int:
        """A 64-bit integer equal for equal sets of ``(id, box)``, whatever the order of
        insertion, the process or ``PYTHONHASHSEED``, and equal between the compiled and
        the pure-Python class (Box2D's ``b2World_GetStateHash``): for lockstep games and
        replay tests. Different sets give different hashes but for collisions at the odds of
        a 64-bit hash. The definition is in ``_tree_state``.

        Complexity: O(n).
        """
        total = 0
        for entity, home in self._home.items():
            total += entry_hash(home[ITEMS][entity])
        if self._wrap is not None:  # a wrapped tree's period counts as one more entry's box
            x0, y0, _, _, ex, ey = self._wrap
            total += entry_hash((x0, y0, ex, ey, -1)) ^ _WRAP_SALT
        return mix64((total & MASK64) ^ len(self._home))
