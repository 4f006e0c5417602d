"""The pickle state both quadtree classes write and read: one layout of plain data
(``STATE_FORMAT``), read and checked by one function (``read_state``) whatever class or
version wrote it, and a subclass's own attributes carried beside it. The compiled core calls
these functions too (through ``ecs_spatial.quadtree``), so either class loads the other's
pickles and refuses a bad state with the same message.
"""

from __future__ import annotations

import copy
import struct
from operator import index
from types import MemberDescriptorType
from typing import Any, NamedTuple

from ._growth import MAX_GROWTH
from ._records import Rec, coords, new_id, shown_id
from .geometry import Box

__all__ = [
    "INDEX_FIELDS",
    "MASK64",
    "STATE_FORMAT",
    "State",
    "copy_own_state",
    "entry_hash",
    "mix64",
    "own_state",
    "read_state",
    "restore_own_state",
    "state_of",
]

#: The reference ``QuadTree``'s own fields (its ``__slots__``): what a pickle of format 0
#: wrote for it (but ``_busy`` and ``_pending``, added since, which no state holds: a tree is
#: busy, and holds deferred discards, only while a call of its own runs), and never a
#: subclass's own slots, which a copy or a pickle carries.
INDEX_FIELDS = (
    "_bounds_hint",
    "_busy",
    "_count",
    "_fit",
    "_free",
    "_geom",
    "_home",
    "_items",
    "_kids",
    "_level",
    "_max_depth",
    "_parent",
    "_pending",
    "_root",
    "_snap",
    "_snapshots",
    "_threshold",
)
# Where a node's entries sit in its home record (``quadtree._ITEMS``), as the fields of a
# format 0 pickle hold it.
_ITEMS = 6

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
#: - ``"ids"``: a list of ints, in ascending order as both classes write it (any order is
#:   read); ``"boxes"``: a flat list of floats, 4 per id, in the same order;
#: - only for a subclass that has them: ``"attributes"``, its ``__dict__``, and ``"slots"``,
#:   the values of the slots its own classes declare (``{name: value}``).
#:
#: ``read_state`` reads this and two earlier states: format 0, the same dict without
#: ``"format"`` or ``"bounds"`` (the compiled class passed its bounds to the constructor), and
#: the reference's own fields as pickle's default for ``__slots__`` wrote them.
STATE_FORMAT = 1
_STATE_KEYS = ("bounds", "threshold", "max_depth", "root", "root_level", "ids", "boxes")
_OWN_KEYS = ("attributes", "slots")


class State(NamedTuple):
    """A state read and checked by ``read_state``: what both classes build a tree from."""

    hint: Box | None
    threshold: int
    max_depth: int
    root: tuple[float, float, float, float] | None
    level: int
    records: list[Rec]
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
    if type(version) is not int or version not in (0, STATE_FORMAT):
        raise ValueError(
            f"QuadTree state: format {version!r} is not one this version reads (0 or 1)"
        )
    keys = _STATE_KEYS if version else _STATE_KEYS[1:]
    unknown = state.keys() - {"format", *keys, *_OWN_KEYS}
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
        if type(value) is not list and type(value) is not tuple:
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
    return State(hint, threshold, max_depth, root, level, list(records.values()), attributes,
                  slots)


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
    records = [home[entity][_ITEMS][entity] for entity in sorted(home)]
    return {
        "format": STATE_FORMAT,
        "bounds": bounds,
        "threshold": threshold,
        "max_depth": max_depth,
        "root": None if root < 0 else geom[root][:4],
        "root_level": 0 if root < 0 else level[root],
        "ids": [rec[4] for rec in records],
        "boxes": [c for rec in records for c in rec[:4]],
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
