"""The SpatialProcessor's members: which entities it tracks, and the boxes their components
make, brought in step with the world at each ``process()``.

A *member* is an entity with both a ``Position`` and an ``AABB``; the processor keeps a
record of each, ``[Position, AABB, index record, entity]``, the index record being the tuple
``(min_x, min_y, max_x, max_y, entity)`` of the box the index holds for it. Each frame, in
two phases, so that everything that can fail fails before anything changes:

- **planning** (:meth:`Membership._plan_members`, :meth:`~Membership._plan_filters`,
  :meth:`~Membership._plan_boxes`): who joined, left or had a component replaced, read from
  esper's tables (``_esper_tables``) only when some component was added or removed anywhere;
  then the read loop, :func:`read_boxes`, over the entities whose components were assigned
  to (their dirty flags), which checks each box and re-arms the flags, and with the
  compiled index writes the moves into two buffers (:data:`MOVES_BY_BUFFERS`);
- **applying** (:meth:`Membership._apply_members`, :meth:`~Membership._apply_filters`): the
  index updated (removals, one bulk move of those buffers or of the records, one bulk
  insert), the components tracked and the filter values put in effect.

The read loop has a compiled twin, ``_cmembers.c``, used with the compiled index
(:data:`read_boxes`); :func:`read_boxes_reference` is its reference, and
``tests/test_cmembers.py`` drives both side by side. With the compiled components too, the
members whose components allow it skip that loop: their stores go into the processor's
members table (:func:`new_table`; ``_cmembers.c``, "The members table"), read last in the
planning, and ``tests/test_members_table.py`` holds a processor with it to one without.
The components themselves (``components.py``) know nothing of the records: they append their
entity to a dirty list, or, compiled and bound, store into their slot of the table.
"""

from __future__ import annotations

import math
import os
import struct
import sys
from array import array
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ._esper_tables import changed_holders, newcomers, tables
from ._records import Rec as Record
from ._wrap import Period, canonical
from .arrays import (
    ArrayRow,
    BoxArray,
    RowState,
    link,
    read_rows,
    unlink,
    write_rows,
)
from .components import (
    AABB,
    CollisionFilter,
    Position,
    _checked_real,
    _Shared,
    _Tracked,
    rearm,
    track,
    untrack,
)
from .filtering import FilterValues, check_fields
from .index import NATIVE, QuadTree

__all__ = [
    "MOVES_BY_BUFFERS",
    "STALE",
    "Member",
    "Membership",
    "box_error",
    "checked_box",
    "filter_values",
    "new_moves",
    "new_table",
    "read_boxes",
    "read_boxes_reference",
    "release",
]

_INF = math.inf
_MAX = sys.float_info.max

#: A tracked entity's record: [Position, AABB, its index record, entity].
Member = list[Any]
#: A member's components, as planned: (Position, AABB).
Comps = tuple[Position, AABB]
#: A member's box when the index holds a box the record does not know (after a failed
#: process()): it equals no box, so the next process() moves the member.
STALE: tuple[float, ...] = ()
_record_of = itemgetter(2)
#: The array members' read phase (``Membership._plan_rows``): the entities that lost their
#: ArrayRow; the arrived ones with their ArrayRow, checked record and, for one placed by a
#: row already, its box there (else None); each array read and the span of the moves of
#: its rows in ``_row_moves``; a snapshot of the rows of each array an arrival uses.
RowsPlan = tuple[
    list[int],
    list[tuple[int, ArrayRow, Record, tuple[float, ...] | None]],
    list[tuple[BoxArray, int, int]],
    dict[BoxArray, bytearray],
]


def read_boxes_reference(
    todo: list[int],
    members: dict[int, Member],
    dirty: list[int],
    changed: list[Member],
    ids: bytearray | None = None,
    boxes: bytearray | None = None,
) -> bool:
    """For each entity of ``todo`` with a record in ``members``: its components re-armed for
    ``dirty``, then its checked box, stored in the record (and the record appended to
    ``changed``) if it differs from the one there. Re-armed first, so that a store made
    while the box is read (a finaliser or collector callback run by an allocation here)
    lists the entity again rather than landing on a disarmed component unseen. The
    reference for
    ``_cmembers.read_boxes``, its compiled twin, which :data:`read_boxes` is with the
    compiled index.

    With ``ids`` and ``boxes``: they are made to hold the moves of the records appended to
    ``changed``, in that order, for the index's buffer path (``move_many`` of two buffers,
    no Python object per move): each id an int64, each box four float64, native order.
    Returns whether every such record is there: an id that is not an int of 64 bits, or a
    box that is not four floats, cannot be carried exactly, and the caller then moves the
    records themselves. Without them: False.

    Complexity: O(k) for the k entities.
    """
    get = members.get
    add_changed = changed.append
    entity = 0
    rec: Member | None = None
    complete = ids is not None or boxes is not None
    if complete:
        if type(ids) is not bytearray or type(boxes) is not bytearray:
            raise TypeError(
                f"ids and boxes are bytearrays, got {type(ids).__name__} and "
                f"{type(boxes).__name__}"
            )
        del ids[:], boxes[:]
    try:
        # inlined copy of _members.checked_box, and of components.rearm's fast case
        # below (speed: see docs/design.md#decisions)
        for entity in todo:
            rec = get(entity)
            if rec is None:
                continue
            pos, aabb, old, _ = rec
            # Re-arm, the fast case inline (one attribute store each).
            if pos._owner is dirty:
                pos._sink = dirty
            else:
                rearm(pos, dirty, entity)
            if aabb._owner is dirty:
                aabb._sink = dirty
            else:
                rearm(aabb, dirty, entity)
            w = aabb._w
            h = aabb._h
            # ``+ 0.0``: int coordinates become floats here (10**400 overflows, refused).
            x0 = pos._x + aabb._ox + 0.0
            y0 = pos._y + aabb._oy + 0.0
            x1 = x0 + w
            y1 = y0 + h
            if not (
                x0 > -_INF and x1 < _INF and y0 > -_INF and y1 < _INF
                and w >= 0.0 and h >= 0.0
            ):
                raise box_error(entity, pos, aabb)
            box = (x0, y0, x1, y1, entity)
            if box != old:
                rec[2] = box
                add_changed(rec)
                if complete:
                    complete = _add_move(ids, boxes, box)  # type: ignore[arg-type]
    except (TypeError, ArithmeticError):
        assert rec is not None
        raise box_error(entity, rec[0], rec[1]) from None
    return complete


_ID = struct.Struct("=q")
_ROW = struct.Struct("=4d")
_pack_id = _ID.pack
_pack_box = _ROW.pack
_INT64 = range(-(2**63), 2**63)


def _add_move(ids: bytearray, boxes: bytearray, box: Record) -> bool:
    """Append the move of ``box``, an index record, to the two buffers if they can carry it
    exactly (an int id of 64 bits, four floats); say whether they could."""
    x0, y0, x1, y1, entity = box
    if not (
        type(entity) is int and entity in _INT64
        and type(x0) is float and type(y0) is float
        and type(x1) is float and type(y1) is float
    ):
        return False
    ids += _pack_id(entity)
    boxes += _pack_box(x0, y0, x1, y1)
    return True


def _records(ids: bytearray, boxes: bytearray) -> list[Record]:
    """The moves of the two buffers (:func:`_add_move`'s layout) as index records."""
    values = array("d")
    values.frombytes(boxes)
    entities = array("q")
    entities.frombytes(ids)
    return list(zip(
        values[0::4], values[1::4], values[2::4], values[3::4], entities, strict=True
    ))


def checked_box(entity: int, pos: Position, aabb: AABB) -> Record:
    """The index record of ``pos`` and ``aabb``, ``(min_x, min_y, max_x, max_y, entity)``,
    or the error naming what is wrong: finite, and non-negative sizes (so min <= max), which
    is what ``Box(...)`` checks, without building a Box (the index takes plain tuples)."""
    try:
        w = aabb._w
        h = aabb._h
        x0 = pos._x + aabb._ox + 0.0
        y0 = pos._y + aabb._oy + 0.0
        x1 = x0 + w
        y1 = y0 + h
        if x0 > -_INF and x1 < _INF and y0 > -_INF and y1 < _INF and w >= 0.0 and h >= 0.0:
            return (x0, y0, x1, y1, entity)
    except (TypeError, ArithmeticError):
        pass
    raise box_error(entity, pos, aabb)


def filter_values(entity: int, flt: CollisionFilter) -> FilterValues:
    """The filter's ``(category, mask, group)``, checked to be ints by the components' own
    rule, the error naming ``entity`` too."""
    # each field read once: the values returned are those checked, whatever a store made
    # during the check (a finaliser, another thread) did
    values = (flt._category, flt._mask, flt._group)
    category, mask, group = values
    try:
        check_fields(flt, category=category, mask=mask, group=group)
    except TypeError as error:
        raise TypeError(f"entity {entity}: {error}") from None
    return values


def box_error(entity: int, pos: Position, aabb: AABB) -> Exception:
    """The error that says which field of which component of ``entity`` is wrong, by the
    rule the components apply at construction (``TypeError`` for a value that is not a real
    number, ``ValueError`` for NaN, infinity, a negative size), or that the box they make
    together overflows."""
    fields = (
        (pos, "x", pos._x, False),
        (pos, "y", pos._y, False),
        (aabb, "width", aabb._w, True),
        (aabb, "height", aabb._h, True),
        (aabb, "offset_x", aabb._ox, False),
        (aabb, "offset_y", aabb._oy, False),
    )
    for component, name, value, size in fields:
        try:
            _checked_real(component, name, value, 0.0 if size else -_MAX)
        except (TypeError, ValueError) as error:
            return type(error)(f"entity {entity}: {error}")
    return ValueError(
        f"entity {entity}: the box of {pos!r} and {aabb!r} is not finite (it overflows)"
    )


def disarm(component: _Tracked, sink: list[int], entity: int) -> bool:
    """Disarm ``component`` for ``entity`` in the processor whose dirty list is ``sink``;
    say whether it was armed there. Once armed, a component is disarmed only by the store
    that lists its entity: a member is listed already where either component was not."""
    owner = component._owner
    if owner is sink:
        if component._sink is not None:
            component._sink = None
            return True
    elif type(owner) is _Shared:
        place = owner.places.get((id(sink), entity))
        if place is not None and place[2]:
            place[2] = False
            return True
    return False


def _box_differs(entity: int, pos: Position, aabb: AABB, box: object) -> bool:
    """Whether the box ``pos`` and ``aabb`` make now is not ``box``, the one read (or is
    no box at all: the next frame's read then raises the error)."""
    try:
        return checked_box(entity, pos, aabb) != box
    except (TypeError, ValueError):
        return True


ReadBoxes = Callable[
    [list[int], dict[int, Member], list[int], list[Member], bytearray | None, bytearray | None],
    bool,
]


def _compiled_read_boxes() -> ReadBoxes | None:
    """``_cmembers.read_boxes``, the compiled twin of :func:`read_boxes_reference`, when
    the compiled index is in use (not in a pure-Python build, nor under
    ``ECS_SPATIAL_PURE=1``)."""
    if not NATIVE:
        return None
    try:
        from . import _cmembers
    except ImportError:  # built without it: the Python loop, with the same behaviour
        return None
    _cmembers.configure(Position, AABB, box_error, rearm)
    return _cmembers.read_boxes


#: The read loop the SpatialProcessor runs: compiled where it can be, else the reference
#: (why: docs/design.md#decisions).
read_boxes: ReadBoxes = _compiled_read_boxes() or read_boxes_reference

def _cmembers_write_rows() -> Callable[..., None]:
    """``_cmembers.write_rows`` (there whenever ``_cmembers.read_rows`` is)."""
    from . import _cmembers

    return _cmembers.write_rows


def _compiled_read_rows() -> Callable[..., tuple[int, int]] | None:
    """``_cmembers.read_rows``, the compiled twin of :func:`~ecs_spatial.arrays.read_rows`,
    when the compiled index is in use."""
    if not NATIVE:
        return None
    try:
        from . import _cmembers
    except ImportError:
        return None
    return _cmembers.read_rows


#: The array members' per-frame row comparison: compiled where it can be, else the reference.
_read_rows: Callable[..., tuple[int, int]] = _compiled_read_rows() or read_rows
#: The rows applied written into an array's last rows: compiled with read_rows, else the
#: reference.
_write_rows: Callable[..., None] = write_rows if _read_rows is read_rows else _cmembers_write_rows()

#: Whether the read loop hands the frame's moves to the index as two buffers (the compiled
#: index's fastest way in) rather than as the records themselves (the reference index's).
MOVES_BY_BUFFERS = NATIVE


def new_moves() -> tuple[bytearray, bytearray] | tuple[None, None]:
    """A processor's buffers for the frame's moves (kept from frame to frame, so that a
    frame does not allocate them again), or none with the reference index."""
    return (bytearray(), bytearray()) if MOVES_BY_BUFFERS else (None, None)


def _table_type() -> Any:
    """``_cmembers.MembersTable`` when the compiled read loop and the compiled components
    are both in use and ``ECS_SPATIAL_MEMBERS_TABLE`` is not ``0``, else None."""
    if read_boxes is read_boxes_reference or os.environ.get("ECS_SPATIAL_MEMBERS_TABLE") == "0":
        return None
    try:
        from . import _ccomponents, _cmembers
    except ImportError:
        return None
    if Position is not _ccomponents.Position or AABB is not _ccomponents.AABB:
        return None
    return _cmembers.MembersTable


_MembersTable = _table_type()


def new_table(dirty: list[int], period: Period | None = None) -> Any:
    """A processor's members table (``_cmembers.c``, "The members table"), the fast path of
    its members whose dirty list is ``dirty``, or None where there is none: the reference,
    a build without the compiled components, or ``ECS_SPATIAL_MEMBERS_TABLE=0``. On a torus
    of ``period`` the table's read checks each new box as ``_wrap.canonical`` does (see
    :meth:`Membership._plan_boxes`)."""
    return None if _MembersTable is None else _MembersTable(dirty, STALE, period)


class Membership:
    """The SpatialProcessor's membership and read phases, as methods it inherits: they
    reach the processor's state only through ``self`` (the attributes below, which the
    processor's ``__init__`` sets)."""

    _index: QuadTree
    _members: dict[int, Member]
    _dirty: list[int]
    _seen_members: object
    _filters: dict[int, CollisionFilter]
    _filter_values: dict[int, FilterValues]
    _filter_dirty: list[int]
    _seen_filters: object
    _moved: set[int] | None
    _moved_members: tuple[list[Member], ...]
    _moves_held: bool
    _rows_moved: int
    _rows_new: list[int]
    _row_moves: tuple[bytearray, bytearray, bytearray]
    _moves: tuple[bytearray, bytearray] | tuple[None, None]
    _table: Any
    _table_moves: tuple[bytearray, bytearray]
    _table_moved: int
    _removed: set[int]
    _filters_changed: set[int]
    _period: Period | None
    _rows: dict[int, ArrayRow]
    _arrays: dict[BoxArray, RowState] | None
    _seen_rows: object

    def _plan_members(self, stamp: object) -> tuple[list[int], list[tuple[int, Comps]]]:
        """The members the world no longer holds (deleted, or without ``Position`` or ``AABB``
        now), and the entities that are new or had a component replaced, with their
        components.

        Complexity: O(1) while no component was added to or removed from any entity of the
        world since the last frame; else a pass over the members and a set difference in C
        for the newcomers, with no rebuild of esper's cached lists (``_esper_tables``).
        """
        gone: list[int] = []
        arrived: list[tuple[int, Comps]] = []
        if stamp is self._seen_members:
            return gone, arrived
        by_type, by_entity = tables(Position, AABB)
        held_by = by_entity.get
        for entity, (pos, aabb, _, _) in self._members.items():
            held = held_by(entity)
            if held is None:
                gone.append(entity)
                continue
            now_pos = held.get(Position)
            now_aabb = held.get(AABB)
            if now_pos is pos and now_aabb is aabb:
                continue
            if now_pos is None or now_aabb is None:
                gone.append(entity)
            else:
                arrived.append((entity, (now_pos, now_aabb)))
        for entity in newcomers(by_type, self._members, Position, AABB):
            held = by_entity[entity]
            arrived.append((entity, (held[Position], held[AABB])))
        return gone, arrived

    def _plan_filters(
        self, stamp: object
    ) -> tuple[list[int], list[tuple[int, CollisionFilter]], dict[int, FilterValues], int]:
        """The entities that lost their CollisionFilter, those
        with a new or replaced one, the checked values of every new, replaced or edited
        one, and how many entries of the filters' dirty list were read. Membership is read
        as in :meth:`_plan_members`.

        An edited filter is re-armed as its values are read, as the members' components
        are: an edit made after the read (by a finaliser, a collector callback or another
        thread, before this frame ends) is reported again, after the entries read, and
        :meth:`_apply_filters` keeps it for the next frame."""
        gone: list[int] = []
        arrived: list[tuple[int, CollisionFilter]] = []
        filters = self._filters
        if stamp is not self._seen_filters:
            gone, arrived = changed_holders(tables(CollisionFilter), filters, CollisionFilter)
        values: dict[int, FilterValues] = {}
        sink = self._filter_dirty
        for entity in sink:
            flt = filters.get(entity)
            if flt is not None:
                rearm(flt, sink, entity)  # first: an edit made while it is read lists itself
                values[entity] = filter_values(entity, flt)
        read = len(sink)
        for entity in gone:
            values.pop(entity, None)
        for entity, flt in arrived:
            values[entity] = filter_values(entity, flt)
        return gone, arrived, values, read

    def _plan_boxes(
        self,
        gone: list[int],
        arrived: list[tuple[int, Comps]],
        check: Callable[[list[Member], list[Member], list[tuple[int, Comps]]], None]
        | None = None,
        flushed: bool = False,
    ) -> tuple[list[Member], list[Member], bool, int, int]:
        """The records of the members whose box changed (dirty, or with a replaced
        component) and those of the new members, each record holding its new, checked box,
        whether ``_moves`` holds every changed record's move (with the compiled index:
        see :data:`MOVES_BY_BUFFERS`), how many entries of the dirty list the read
        covered (those after them were reported after the read: :meth:`_apply_members`
        keeps them for the next frame), and the number of moves of the members table's
        (``_table_moves``, with the compiled components: :func:`new_table`), which are
        read last, since that read cannot fail: the members that leave or had a component
        replaced leave the table first (their records are then up to date), and everything
        that can raise runs before it: ``check`` too (on a torus, the processor's check of
        the boxes read against the period, given the changed, the created and the arrived).
        On a torus the table's read checks its own new boxes against the period; where
        either refuses a box, the table's members stored into are read again on the dirty
        list's path (``flushed``), so that ``check`` names the entity, and leaves the
        records, as it does without a table.

        The new box goes straight into the record (the old one is dropped at once, so a
        frame allocates no net GC-tracked objects: holding the old boxes until the end of
        the frame set off young collections, see docs/design.md#decisions). If a
        check fails, the records already updated are marked ``STALE`` before the error
        propagates, so the next ``process()`` moves them whatever their box; the index
        itself is untouched. The dirty flags of the members read are re-armed here: safe
        even on failure, since the dirty list is kept until a ``process()`` succeeds.

        Complexity: O(k) for the k entities that changed.
        """
        dirty = self._dirty
        table = self._table
        if table is not None and check is None and not (gone or arrived or dirty):
            # Only the members table's stores (a quiet frame's usual case): the same steps
            # as below with nothing to read on the dirty list's path, and no check that could
            # send the read back there.
            changed: list[Member] = []
            by_buffers = read_boxes(dirty, self._members, dirty, changed, *self._moves)
            return changed, [], by_buffers, 0, table.read(*self._table_moves)
        get = self._members.get
        todo: list[int] = dirty
        if table is not None and (gone or arrived):
            for entity in gone:
                table.drop(entity)
            for entity, _ in arrived:
                table.drop(entity)
        if gone or arrived:
            skip = set(gone)
            skip.update(entity for entity, _ in arrived)
            todo = [entity for entity in dirty if entity not in skip]
        else:
            skip = set()
        changed = []
        created: list[Member] = []
        read = len(dirty)  # a copy is read as it was now; the list itself to its end
        try:
            by_buffers = read_boxes(todo, self._members, dirty, changed, *self._moves)
            if todo is dirty:
                read = len(dirty)
            for entity, (pos, aabb) in arrived:
                box = checked_box(entity, pos, aabb)
                rec = get(entity)
                if rec is None:
                    created.append([pos, aabb, box, entity])
                elif box != rec[2]:
                    rec[2] = box
                    changed.append(rec)
                    by_buffers = False  # a move the buffers do not hold
        except (TypeError, ValueError):
            for rec in changed:
                rec[2] = STALE
            if table is not None:
                table.stale_before(self._failed_at(skip))
            raise
        table_moved = 0
        if check is not None:
            try:
                check(changed, created, arrived)
            except ValueError:
                if table is None or flushed:
                    raise
                table_moved = -1
        if table is not None and table_moved == 0:
            table_moved = table.read(*self._table_moves)
        if table_moved < 0:
            # On a torus, a box refused, here or among the table's new boxes (nothing read
            # there): the table's members stored into go to the dirty list in the order of
            # their first stores (flush), and the read runs again over them all as without a
            # table, the records read here STALE (as a refusal leaves them), so that the
            # refusal is the one made without a table, and leaves what it leaves.
            for rec in changed:
                rec[2] = STALE
            table.flush()
            return self._plan_boxes(gone, arrived, check, flushed=True)
        return changed, created, by_buffers, read, table_moved

    def _failed_at(self, skip: set[int]) -> int:
        """Where in the dirty list the read that just raised stopped: the first entry (not
        in ``skip``, with a record) whose box the check refuses, else the list's length
        (the error came from an arrival, after the whole list). Only after a failure."""
        members = self._members
        for at, entity in enumerate(self._dirty):
            rec = members.get(entity) if entity not in skip else None
            if rec is not None:
                try:
                    checked_box(entity, rec[0], rec[1])
                except (TypeError, ValueError):
                    return at
        return len(self._dirty)

    def _apply_members(
        self,
        stamp: object,
        gone: list[int],
        arrived: list[tuple[int, Comps]],
        changed: list[Member],
        created: list[Member],
        by_buffers: bool,
        read: int,
        table_moved: int = 0,
    ) -> None:
        """Remove the departed, insert the new, move the changed (from ``_moves`` when
        ``by_buffers``, and the members table's ``table_moved`` from ``_table_moves``),
        track the arrived components, give a slot in the members table to the members
        that may have one (the arrived, and those read on the dirty list's path), and drop
        the ``read`` entries of the dirty list that the read covered. An entry after them
        was appended since (by a finaliser, a collector callback or another thread): its
        component is disarmed until it is read, so it stays for the next frame, or that
        entity would never move again.

        An arrived component was read in the planning but is tracked only here: once it is
        tracked and armed, the box it makes is compared with the box read, and where they
        differ (a store in between, which nothing saw) its entity is listed for the next
        frame. Why a comparison and not a store counter: the setters stay as they are, and
        a frame without arrivals pays nothing."""
        index = self._index
        table = self._table
        if not (gone or arrived or read) and table is not None:
            # Only the members table's moves (a quiet frame's usual case; nothing changed or
            # created then, as only the dirty list's path and the arrivals make those): the
            # steps below that do something then.
            if table_moved:
                table_ids, table_boxes = self._table_moves
                with (
                    memoryview(table_ids).cast("q") as id_view,
                    memoryview(table_boxes).cast("d") as box_view,
                ):
                    index.move_many(id_view, box_view, atomic=False)
            self._moved = None
            self._moved_members = (changed, created)
            self._moves_held = by_buffers
            self._table_moved = table_moved
            table.list_cleared(0)
            self._seen_members = stamp
            return
        members = self._members
        dirty = self._dirty
        removed = self._removed
        for entity in gone:
            pos, aabb, _, _ = members.pop(entity)
            untrack(pos, dirty, entity)
            untrack(aabb, dirty, entity)
            index.remove(entity)
            removed.add(entity)
        # One call for the frame's moves, each member's record handed over as the index's
        # own. Every box was checked in phase 1 and every id is in the index, so no move
        # can fail: no undo log (move_many(atomic=False) with the records built once).
        if by_buffers and changed:
            # The index's buffer path: no Python object read per move, and each slot found
            # by its place in the buffer, as last frame (speed: see docs/design.md#decisions).
            ids, boxes = self._moves
            assert ids is not None and boxes is not None
            with memoryview(ids).cast("q") as id_view, memoryview(boxes).cast("d") as box_view:
                index.move_many(id_view, box_view, atomic=False)
        elif changed:
            index.move_records(map(_record_of, changed))
        if table_moved:
            ids, boxes = self._table_moves
            with memoryview(ids).cast("q") as id_view, memoryview(boxes).cast("d") as box_view:
                index.move_many(id_view, box_view, atomic=False)
        if created:
            # The newcomers in one bulk insert (checked boxes, ids new to the index): a
            # world's first frame builds its tree top-down (speed: see
            # docs/design.md#decisions).
            for rec in created:
                members[rec[3]] = rec
            index.insert_records([rec[2] for rec in created])
        for entity, (pos, aabb) in arrived:
            rec = members[entity]
            if rec[0] is not pos:
                untrack(rec[0], dirty, entity)
                rec[0] = pos
            if rec[1] is not aabb:
                untrack(rec[1], dirty, entity)
                rec[1] = aabb
            track(pos, dirty, entity)  # does nothing where it is attached already
            track(aabb, dirty, entity)
            rearm(pos, dirty, entity)
            rearm(aabb, dirty, entity)
            # Armed, then compared: a store made since the read, untracked then, is listed
            # (once) for the next frame, as if armed; one made from now on lists itself.
            # An inlined _box_differs (a box equal to a checked one is finite).
            bx0, by0, bx1, by1, _ = rec[2]
            try:
                w = aabb._w
                h = aabb._h
                x0 = pos._x + aabb._ox + 0.0
                y0 = pos._y + aabb._oy + 0.0
                same = (
                    x0 == bx0 and y0 == by0 and x0 + w == bx1 and y0 + h == by1
                    and w >= 0.0 and h >= 0.0
                )
            except (TypeError, ArithmeticError):
                same = False
            if not same and disarm(pos, dirty, entity) & disarm(aabb, dirty, entity):
                dirty.append(entity)
        self._moved = None  # built when read: see ``moved``
        self._moved_members = (changed, created)
        self._moves_held = by_buffers
        self._table_moved = table_moved
        if table is not None:
            bind = table.bind
            for entity, _ in arrived:
                bind(entity, members[entity])
            for entity in dirty[:read]:
                again = members.get(entity)
                if again is not None:
                    bind(entity, again)
        del dirty[:read]
        if table is not None:
            table.list_cleared(read)
        self._seen_members = stamp

    def _apply_filters(
        self,
        stamp: object,
        gone: list[int],
        arrived: list[tuple[int, CollisionFilter]],
        values: dict[int, FilterValues],
        read: int,
    ) -> None:
        """Track and arm the arrived filters, forget the departed ones, put the checked
        values in effect, note which members' values changed, and drop the ``read``
        entries of the filters' dirty list that :meth:`_plan_filters` read (an entry after
        them is an edit made since: kept for the next frame). An arrived filter edited
        after its values were read (untracked then) is listed for the next frame, as an
        arrived member is in :meth:`_apply_members`."""
        filters = self._filters
        filter_values = self._filter_values
        sink = self._filter_dirty
        members = self._members
        changed = self._filters_changed
        for entity in gone:
            untrack(filters.pop(entity), sink, entity)
            if filter_values.pop(entity, None) is not None and (
                entity in members or entity in self._rows
            ):
                changed.add(entity)
        for entity, flt in arrived:
            old = filters.get(entity)
            if old is not None:
                untrack(old, sink, entity)
            track(flt, sink, entity)
            rearm(flt, sink, entity)
            filters[entity] = flt
            # compared by identity: a store stores another object or the same one
            vals = values[entity]
            if (
                flt._category is not vals[0] or flt._mask is not vals[1]
                or flt._group is not vals[2]
            ) and disarm(flt, sink, entity):
                sink.append(entity)
        for entity, vals in values.items():
            if filter_values.get(entity) != vals:
                filter_values[entity] = vals
                if entity in members or entity in self._rows:
                    changed.add(entity)
        del sink[:read]
        self._seen_filters = stamp

    def _plan_rows(
        self, stamp: object, gone: list[int], arrived: list[tuple[int, Comps]]
    ) -> RowsPlan:
        """The array members' part of the read phase (``arrays.py``): the entities that
        lost their ``ArrayRow`` (deleted, or it was removed), those with a new or replaced
        one and their checked boxes, the moves of the members whose row changed since the
        last frame applied, written into ``_row_moves`` (:func:`~ecs_spatial.arrays.read_rows`,
        one snapshot of each array read), and those snapshots. Refuses, naming the entity,
        an entity placed both by an ``ArrayRow`` and by ``Position``/``AABB``, a row past
        its array's end, a row that is not a box, and on a torus a box the period refuses.
        Changes nothing but the scratch buffers.

        Complexity: O(1) with no array member; else a copy and a comparison of each array's
        bytes, and O(rows in use) for an array whose bytes differ (in C, with no Python
        object per row).
        """
        rows = self._rows
        if self._arrays is None:
            self._arrays = self._rebuilt_arrays()
        lost: list[int] = []
        came: list[tuple[int, ArrayRow]] = []
        if stamp is not self._seen_rows:
            found = tables(ArrayRow, Position, AABB)
            lost, came = changed_holders(found, rows, ArrayRow)
            by_entity = found[1]
            for entity in sorted(
                {e for e, _ in came}.union(e for e, _ in arrived)
            ):
                held = by_entity.get(entity, {})
                if ArrayRow in held and Position in held and AABB in held:
                    raise ValueError(
                        f"entity {entity}: it has an ArrayRow and a Position and an AABB; "
                        f"an entity is placed by one or the other"
                    )
        if not rows and not came:
            return lost, [], [], {}
        ids, boxes, at_rows = self._row_moves
        skip = set(lost)
        skip.update(e for e, _ in came)
        period = self._period
        refused = -1
        moved = 0
        spans: list[tuple[BoxArray, int, int]] = []
        snaps: dict[BoxArray, bytearray] = {}
        arrays = self._arrays
        for flock, state in arrays.items():
            before = moved
            if flock._sized:  # the rows read, copied: next frame's last rows (_apply_rows)
                spare, flock._spare = flock._spare, None
                snaps[flock] = rows_now = flock.read_into(spare or bytearray())
                moved, at = _read_rows(
                    rows_now, state[0], state[1], state[2], skip, ids, boxes, at_rows,
                    moved, flock._check, period, None, True,
                )
            else:
                with flock._used() as now:
                    moved, at = _read_rows(
                        now, state[0], state[1], state[2], skip, ids, boxes, at_rows, moved,
                        flock._check, period, flock._size,
                    )
            spans.append((flock, before, moved))
            if refused < 0 <= at:
                refused = before + at
        # the rows of the arrays the arrivals use, as read now: a new state's rows, and the
        # arrivals' boxes
        created: list[tuple[int, ArrayRow, Record, tuple[float, ...] | None]] = []
        for entity, comp in came:
            flock = comp.array
            if flock not in snaps:
                snaps[flock] = flock.read_into(bytearray())
            box = flock._check(entity, comp.row, snaps[flock])
            assert isinstance(box, tuple)
            old = rows.get(entity)
            was = None if old is None else old.array._box_in(arrays[old.array][0], old.row)
            created.append((entity, comp, (*box, entity), was))
        if period is not None:
            checks: list[Record] = []
            if refused >= 0:
                (entity,) = _ID.unpack_from(ids, 8 * refused)
                checks.append((*_ROW.unpack_from(boxes, 32 * refused), entity))
            checks.extend(made[2] for made in created)
            for rec in checks:
                x0, y0, x1, y1, entity = rec
                try:
                    canonical(x0, y0, x1, y1, entity, period)
                except ValueError as error:
                    comp = rows.get(entity) or dict(came)[entity]
                    raise ValueError(
                        f"{error} (the box of its ArrayRow row {comp.row})"
                    ) from None
        return lost, created, spans, snaps

    def _rebuilt_arrays(self) -> dict[BoxArray, RowState]:
        """After unpickling: each array's :data:`~ecs_spatial.arrays.RowState` made again
        from the members' ``ArrayRow``s (``_rows``, in the order they came) and the index,
        as the last frame left it for all the next frame can tell: its snapshot is the rows
        as they are now, but for a row whose box differs, as floats compare, from the one
        the index holds for its members (on a torus: whose canonical image does), which is
        the index's box there, so that the next frame moves them as the unsaved processor
        would. (On a torus, a row moved by exactly whole periods since the last frame is
        not a move after loading.) Complexity: O(array members + rows), once."""
        arrays: dict[BoxArray, RowState] = {}
        period = self._period
        get = self._index.get
        for entity, comp in self._rows.items():
            state = arrays.get(comp.array)
            if state is None:
                now = comp.array.read_into(bytearray())
                state = arrays[comp.array] = [now, array("q"), {}, 0]
            link(state, comp.row, entity)
            held = get(entity)
            if held is None:  # not in the index: nothing to compare with
                continue
            last: bytearray = state[0]
            row_box = comp.array._box_in(last, comp.row)
            box: tuple[float, ...] | None = row_box
            if row_box is not None and period is not None:
                try:
                    box = canonical(*row_box, entity, period)
                except ValueError:
                    box = None
            if box != tuple(held):
                comp.array._put_in(last, comp.row, tuple(held))
        return arrays

    def _apply_rows_gone(self, plan: RowsPlan) -> None:
        """The array members that left, out of the index (before the component members
        arrive: an entity may change from one kind to the other), and the replaced
        ``ArrayRow``s unlinked from their rows."""
        lost, created, _, _ = plan
        index = self._index
        for entity in lost:
            self._unlink_row(entity)
            index.remove(entity)
            self._removed.add(entity)
        for entity, _, _, _ in created:
            if entity in self._rows:
                self._unlink_row(entity)

    def _unlink_row(self, entity: int) -> None:
        """Forget ``entity``'s ``ArrayRow`` (and its array, where no other member uses it)."""
        comp = self._rows.pop(entity)
        arrays = self._arrays
        assert arrays is not None  # made again by _plan_rows, which ran first
        state = arrays[comp.array]
        unlink(state, comp.row, entity)
        if not state[3]:
            del arrays[comp.array]

    def _apply_rows(self, stamp: object, plan: RowsPlan) -> None:
        """Move the array members whose row changed (the buffers ``_row_moves``: the
        index's ``move_many``), link and insert (or move) the arrived ones, write the rows
        moved into each array's last rows (:func:`~ecs_spatial.arrays.write_rows`), and note
        the moves for ``moved``. Cannot fail: everything was checked by :meth:`_plan_rows`."""
        _, created, spans, snaps = plan
        index = self._index
        arrays = self._arrays
        assert arrays is not None  # made again by _plan_rows, which ran first
        ids, boxes, at_rows = self._row_moves
        moved = spans[-1][2] if spans else 0
        for flock, start, end in spans:
            state = arrays.get(flock)
            if state is None:  # every member of it left this frame
                continue
            if flock._sized:
                # a box is not its row (x, y, w, h): the rows read become the last rows
                # (a member whose row changed but not its box holds that box still)
                flock._spare, state[0] = state[0], snaps[flock]
            else:
                _write_rows(state[0], at_rows, boxes, start, end, flock._stride)
        new: list[Record] = []
        for entity, comp, rec, old in created:
            self._rows[entity] = comp
            state = arrays.get(comp.array)
            if state is None:
                state = arrays[comp.array] = [snaps[comp.array], array("q"), {}, 0]
            link(state, comp.row, entity)
            # grown: a row added by rebind
            comp.array._put_in(state[0], comp.row, rec, snaps[comp.array])
            if old is None:
                new.append(rec)
            elif old != rec[:4]:
                ids[8 * moved:8 * moved + 8] = _ID.pack(entity)
                boxes[32 * moved:32 * moved + 32] = _ROW.pack(*rec[:4])
                at_rows[8 * moved:8 * moved + 8] = _ID.pack(comp.row)
                moved += 1
        if moved and MOVES_BY_BUFFERS:
            with (
                memoryview(ids) as whole_ids, memoryview(boxes) as whole_boxes,
                whole_ids[:8 * moved].cast("q") as id_view,
                whole_boxes[:32 * moved].cast("d") as box_view,
            ):
                index.move_many(id_view, box_view, atomic=False)
        elif moved:
            index.move_records(_records(ids[:8 * moved], boxes[:32 * moved]))
        if new:
            index.insert_records(new)
        if moved or new:
            self._moved = None
            self._rows_moved = moved
            self._rows_new = [rec[4] for rec in new]
        self._seen_rows = stamp

    def _track_again(self) -> None:
        """After unpickling (or a deep copy): track the components the records hold, as the
        original did; a change still pending stays pending, and one made before a
        component was tracked (where its box or values are no longer the record's) is
        listed for the next frame. Complexity: O(members + filters)."""
        for sink, places in (
            (self._dirty, [(e, c) for e, rec in self._members.items() for c in rec[:2]]),
            (self._filter_dirty, list(self._filters.items())),
        ):
            pending = set(sink)
            for entity, component in places:
                track(component, sink, entity)
                if entity not in pending:
                    rearm(component, sink, entity)
        # Armed, then compared with what the records and values say, as for an arrival
        # (_apply_members): a store made before the component was tracked is listed.
        dirty = self._dirty
        pending = set(dirty)
        for entity, (pos, aabb, box, _) in self._members.items():
            if entity not in pending and _box_differs(entity, pos, aabb, box) and (
                disarm(pos, dirty, entity) & disarm(aabb, dirty, entity)
            ):
                dirty.append(entity)
        sink = self._filter_dirty
        pending = set(sink)
        in_effect = self._filter_values.get
        for entity, flt in self._filters.items():
            if (
                entity not in pending
                and (flt._category, flt._mask, flt._group) != in_effect(entity)
                and disarm(flt, sink, entity)
            ):
                sink.append(entity)
        if self._table is not None:
            for entity, rec in self._members.items():
                self._table.bind(entity, rec)


def release(
    members: dict[int, Member],
    dirty: list[int],
    filters: dict[int, CollisionFilter],
    filter_dirty: list[int],
    table: Any = None,
) -> None:
    """Stop tracking, for a dropped processor, every component it tracked (its members
    table, if any, let go of first)."""
    if table is not None:
        table.clear()
    for entity, rec in members.items():
        untrack(rec[0], dirty, entity)
        untrack(rec[1], dirty, entity)
    for entity, flt in filters.items():
        untrack(flt, filter_dirty, entity)
