"""The quadtree's updates: ``insert``, ``insert_many``, ``insert_records``, ``move``,
``move_many``, ``move_records``, ``remove``, ``discard`` and ``clear``, each checked and
refused while the tree is busy (see "Calls back into Python" in ``quadtree``'s module
docstring), and the deferred discards applied when a busy call ends (``_settle``). Where an
entry goes is ``_tree_nodes``' business; an update reads its ids and boxes as ``_records``
says and hands the records on.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, cast

from ._growth import first_root as _first_root
from ._records import ALREADY_INDEXED, LENGTHS_DIFFER, LISTED_TWICE
from ._records import ID_MAX as _ID_MAX
from ._records import ID_MIN as _ID_MIN
from ._records import BoxLike as _BoxLike
from ._records import Rec as _Rec
from ._records import bbox as _bbox
from ._records import coords as _coords
from ._records import entity_id as _entity_id
from ._records import from_buffers as _from_buffers
from ._records import lookup_id as _lookup_id
from ._records import missing as _missing
from ._records import new_id as _new_id
from ._tree_storage import BUSY as _BUSY
from ._tree_storage import NODE as _NODE
from ._wrap import canonical as _canonical

if TYPE_CHECKING:
    from ._tree_storage import TreeBase as _Base
else:
    _Base = object

_INF = math.inf
_float = float
_int = int


class _Updates(_Base):
    """The updates: inserts, moves, removals, and the busy guard around them."""

    __slots__ = ()

    def insert(self, entity: int, box: _BoxLike) -> None:
        """Add ``entity`` with ``box`` (a ``Box`` or any ``(min_x, min_y, max_x, max_y)``).

        Ids are ints in the signed 64-bit range, ``-2**63`` to ``2**63 - 1`` (esper's are
        small ints; the compiled core and the buffers hold them in 64 bits): an integer-like
        id (a numpy integer, an int subclass) is stored as the exact int ``operator.index``
        gives. ``TypeError`` if ``entity`` is not an int (a bool is refused too),
        ``OverflowError`` if it is outside that range, ``ValueError`` if it is already
        present or the box is invalid, checked in that order; nothing changes then.

        Complexity: O(depth) on average, plus an occasional split of O(threshold).
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            self._insert(entity, box)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _insert(self, entity: object, box: _BoxLike) -> None:
        """``insert`` without the busy check (the tree is busy already)."""
        if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
            entity = _new_id(entity)
        if entity in self._home:
            raise ValueError(ALREADY_INDEXED.format(entity))
        x0, y0, x1, y1 = _coords(box, entity)
        if self._wrap is not None:
            x0, y0, x1, y1 = _canonical(x0, y0, x1, y1, entity, self._wrap)
        rec = (x0, y0, x1, y1, entity)
        root = self._root
        if root < 0 or not self._contains(root, rec):
            self._grow_to(rec)
        self._place(rec)

    def insert_many(
        self, entities: Iterable[int], boxes: Iterable[_BoxLike] | array[float] | memoryview[float]
    ) -> None:
        """Add each of ``entities`` with the box at the same position in ``boxes``: a level
        or a saved game loaded in one call (the counterpart of rtree's bulk loading).

        All or nothing: an id already present, listed twice or not an int, a bad box, or
        ``boxes`` of another length raises as ``insert`` would, naming the entity and the
        value, before anything changes. The tree is then built top-down: the root grows once
        to take in every new box, and the new entries go down the tree together, each leaf
        that overflows split once with all of them, instead of one descent and one split
        after another per entry. The entries and every answer are those the same ``insert``
        calls would give, and so is the tree itself unless the root had to grow (it grows
        toward all the new boxes at once rather than toward each in turn).

        Measured (``python -m bench peers --set build``, 10,000 and 100,000 boxes): 1.2 to 1.5 times
        faster than one ``insert`` per box, validation included.

        ``entities`` and ``boxes`` may also be buffers: 8-byte ints (``array('q')``, a numpy
        ``int64`` array) and doubles, 4 per box, flat or in rows of 4 (``array('d')``, a
        numpy ``float64`` array). The compiled core reads them without a Python object per
        entity; here they are read into lists first. Either way they are checked as any
        ids and boxes are.

        Complexity: O(k depth) for k new entries.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            buffers = _from_buffers(entities, boxes, "insert_many")
            if buffers is not None:
                entities, boxes = buffers
            # Not buffers: an iterable of boxes (one of floats fails below, as in the core).
            boxes = cast("Iterable[_BoxLike]", boxes)
            homes = self._home
            period = self._wrap
            fresh: dict[int, _Rec] = {}
            try:
                for entity, box in zip(entities, boxes, strict=True):
                    if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
                        entity = _new_id(entity)
                    x0, y0, x1, y1 = _coords(box, entity)
                    if period is not None:
                        x0, y0, x1, y1 = _canonical(x0, y0, x1, y1, entity, period)
                    if entity in fresh or entity in homes:
                        raise ValueError(
                            ALREADY_INDEXED.format(entity)
                            if entity in homes
                            else LISTED_TWICE.format(entity)
                        )
                    fresh[entity] = (x0, y0, x1, y1, entity)
            except ValueError as error:
                if str(error).startswith("zip()"):
                    raise ValueError(LENGTHS_DIFFER.format("insert_many", "")) from None
                raise
            if fresh:
                self._insert_records(list(fresh.values()))
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def insert_records(self, records: Iterable[_Rec]) -> None:
        """Add the entities of ``(min_x, min_y, max_x, max_y, entity)`` records: what
        :meth:`insert_many` does, for a caller that keeps its boxes as such records (the
        SpatialProcessor), with the same checks and errors, all or nothing; a record of four
        floats and an int id is kept as it is, as the entry itself. Anything but a 5-tuple
        is refused with a ``TypeError``.

        Complexity: as :meth:`insert_many`.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        records = iter(records)  # its __iter__ before the busy part, as in the core
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            homes = self._home
            period = self._wrap
            fresh: dict[int, _Rec] = {}
            for rec in records:
                if not issubclass(type(rec), tuple) or len(rec) != 5:
                    raise TypeError(
                        f"records are (min_x, min_y, max_x, max_y, entity) tuples, got {rec!r}"
                    )
                x0, y0, x1, y1, entity = rec
                # Four floats of a valid box and an int id (the processor's records): kept as
                # they are after one chained test each; anything else goes the careful way.
                kept = (
                    type(rec) is tuple
                    and type(entity) is _int
                    and type(x0) is _float
                    and type(y0) is _float
                    and type(x1) is _float
                    and type(y1) is _float
                    and -_INF < x0 <= x1 < _INF
                    and -_INF < y0 <= y1 < _INF
                    and _ID_MIN <= entity <= _ID_MAX
                )
                if not kept:
                    if type(entity) is not _int or not _ID_MIN <= entity <= _ID_MAX:
                        entity = _new_id(entity)
                    x0, y0, x1, y1 = _coords(rec[:4], entity)
                if period is not None:
                    x0, y0, x1, y1 = _canonical(x0, y0, x1, y1, entity, period)
                    kept = kept and (x0, y0, x1, y1) == rec[:4]
                if entity in fresh or entity in homes:
                    raise ValueError(
                        ALREADY_INDEXED.format(entity)
                        if entity in homes
                        else LISTED_TWICE.format(entity)
                    )
                fresh[entity] = rec if kept else (x0, y0, x1, y1, entity)
            if fresh:
                self._insert_records(list(fresh.values()))
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _insert_records(self, records: list[_Rec]) -> None:
        """Add these ``(min_x, min_y, max_x, max_y, entity)`` records, kept as they are: the
        bulk half of ``insert_many``, for callers whose boxes are checked and whose ids are
        new and distinct (``insert_many``, the SpatialProcessor, ``_rebuild``).

        The root first grows to take in all of them at once; then they go down from the
        root together (``_descend``), each dealt into a list once per level and stored in a
        dict once, where it ends.
        """
        if not records:
            return
        if self._root < 0:
            self._root = self._new_root(_first_root(records[0]), 0)
        # Toward the bounding box of them all: once it holds that box it holds every record;
        # if it cannot (growth exhausted), it can grow toward none of them either.
        self._grow_to(_bbox(records))
        self._descend(self._root, records)

    def move(self, entity: int, box: _BoxLike) -> None:
        """Give ``entity`` a new ``box``. ``KeyError`` if it is not in the index,
        ``TypeError`` if ``entity`` is not an int id (as ``insert`` decides: a float or a
        bool is refused, even one equal to an id; an integer-like id stands for its int),
        ``TypeError`` or ``ValueError`` if the box is invalid; nothing changes then.

        A box that still belongs to its node is updated in place; otherwise the entry climbs
        only to the first ancestor that contains the new box and sinks from there. A plain
        tuple of floats is the cheapest box to pass (building a ``Box`` costs more than the
        move; an int coordinate is rounded to a float on a slower path).

        Complexity: O(1) while the box stays in its node, else O(distance climbed).
        """
        # A bool, not a counter, whose test is an identity check (docs/design.md#decisions).
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            if self._wrap is not None:  # the careful path, which makes the box canonical
                self._relocate(*self._move_target(entity, box))
                return
            try:
                fx0, fy0, fx1, fy1, cx, cy, items, node, kids = self._home[entity]
                x0, y0, x1, y1 = box
                # Fast path (most moves, where boxes are small): strictly inside the node's
                # fit bounds and, for an internal node, still touching a split line. The
                # comparisons also refuse NaN, infinities and inverted boxes, and the type
                # tests anything but float coordinates and an int id (an int must become a
                # float before it is compared: 2**53 + 1; 1.0 must not pass for the id 1; and
                # type(), not __class__, which an object may fake): all fall through to the
                # careful path. Comparisons written apart, not chained: what this costs and
                # saves is in docs/design.md#decisions.
                if (
                    fx0 < x0
                    and x0 <= x1
                    and x1 < fx1
                    and fy0 < y0
                    and y0 <= y1
                    and y1 < fy1
                    and type(x0) is _float
                    and type(y0) is _float
                    and type(x1) is _float
                    and type(y1) is _float
                    and type(entity) is _int
                ):
                    if kids is None:
                        items[entity] = (x0, y0, x1, y1, entity)
                        return
                    if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                        items[entity] = (x0, y0, x1, y1, entity)
                        self._snap[node] = None  # a straddler moved: its node's order is stale
                        return
                box = (x0, y0, x1, y1)  # read once: an iterator of four is spent now
            except (KeyError, TypeError, ValueError):
                pass  # an unknown or unhashable id, not four numbers: _move_target names it
            node, rec = self._move_target(entity, box)
            self._relocate(node, rec)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _move_target(self, entity: object, box: object) -> tuple[int, _Rec]:
        """The careful path of a move: the node of ``entity`` and its new record, its id an
        int and its box four valid floats, or the error that names what is wrong (the id's
        type first, then its absence, then the box, as ``insert`` checks them). An int
        outside the range of ids is absent, as in every lookup."""
        if type(entity) is not _int:
            entity = _entity_id(entity)
        home = self._home.get(entity)
        if home is None:
            raise _missing(entity)
        x0, y0, x1, y1 = _coords(box, entity)
        if self._wrap is not None:
            x0, y0, x1, y1 = _canonical(x0, y0, x1, y1, entity, self._wrap)
        return home[_NODE], (x0, y0, x1, y1, entity)

    def move_many(
        self,
        entities: Iterable[int],
        boxes: Iterable[_BoxLike] | array[float] | memoryview[float],
        *,
        atomic: bool = True,
    ) -> None:
        """Give each of ``entities`` the box at the same position in ``boxes``, in order
        (an entity listed twice ends with its last box): a frame's moves in one call.

        The same as ``move`` for each pair, minus a Python call per entity; pass the boxes
        as a generator to save building a list of them too. An unknown entity, a bad box
        or ``boxes`` of another length raises as ``move`` would, naming the entity and the
        value. With ``atomic`` (the default) every move already made in the call is then
        undone, so the tree is exactly as it was. ``atomic=False`` skips the undo log and,
        on such an error, keeps the moves made before the bad one: for callers whose ids
        and boxes are known to be good, as the benchmark world's are.

        Measured on 10,000 moves (``python -m tools.ab``, callgrind): ``atomic=False`` fed a
        generator takes 29% fewer instructions than 10,000 ``move`` calls, but on this
        project's shared VM, where the update is bound by memory, about the same
        wall-clock time (within 5%). The undo log keeps every old box alive to the end of
        the call, so new ones cannot reuse their memory: it adds ~50% to the call's time.

        ``entities`` and ``boxes`` may also be buffers, as for :meth:`insert_many`.

        Complexity: as many ``move`` calls.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            atomic = bool(atomic)  # once, before anything: the compiled core's order
            buffers = _from_buffers(entities, boxes, "move_many")
            if buffers is not None:
                entities, boxes = buffers
            # Not buffers: an iterable of boxes (one of floats fails below, as in the core).
            boxes = cast("Iterable[_BoxLike]", boxes)
            done: list[_Rec] = []  # each applied move's previous record: the undo log
            root = self._root
            root_before = (self._geom[root], self._level[root]) if root >= 0 else None
            try:
                # One loop with the undo log and one without, rather than a test of
                # ``atomic`` per move.
                if self._wrap is not None:
                    self._move_wrapped(entities, boxes, done.append if atomic else None)
                elif atomic:
                    self._move_logged(entities, boxes, done.append)
                else:
                    self._move_unlogged(entities, boxes)
            except BaseException as error:
                # Undo newest first: each step is a valid move, and the tree's shape is a
                # function of its boxes and its root, so this restores the tree exactly.
                for rec in reversed(done):
                    self._relocate(*self._move_target(rec[4], rec[:4]))
                root = self._root
                if atomic and root_before is not None and (
                    (self._geom[root], self._level[root]) != root_before
                ):
                    (x0, y0, x1, y1, _, _), level = root_before
                    self._rebuild((x0, y0, x1, y1), level)  # a move had grown the root
                kept = "" if atomic else " (move_many stopped there: the moves before it stand)"
                if isinstance(error, ValueError) and str(error).startswith("zip()"):
                    raise ValueError(LENGTHS_DIFFER.format("move_many", kept)) from None
                if kept and isinstance(error, (KeyError, TypeError, ValueError)):
                    message = error.args[0] if len(error.args) == 1 else str(error)
                    raise type(error)(f"{message}{kept}") from None
                raise
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _move_wrapped(
        self,
        entities: Iterable[int],
        boxes: Iterable[_BoxLike],
        log: Callable[[_Rec], None] | None,
    ) -> None:
        """``move_many``'s loop on a wrapped tree: every move the careful way, which makes
        its box canonical; each previous record passed to ``log`` first, if given."""
        entries = self._items
        for entity, box in zip(entities, boxes, strict=True):
            node, rec = self._move_target(entity, box)
            if log is not None:
                log(entries[node][rec[4]])
            self._relocate(node, rec)

    def _move_unlogged(self, entities: Iterable[int], boxes: Iterable[_BoxLike]) -> None:
        """``move_many(atomic=False)``'s loop: ``move()``'s fast path inlined (see there),
        else the careful path; an error leaves the moves before it made."""
        homes = self._home
        snap = self._snap
        float_ = _float
        int_ = _int
        type_ = type
        for entity, box in zip(entities, boxes, strict=True):
            try:
                fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                x0, y0, x1, y1 = box
                if (
                    fx0 < x0
                    and x0 <= x1
                    and x1 < fx1
                    and fy0 < y0
                    and y0 <= y1
                    and y1 < fy1
                    and type_(x0) is float_
                    and type_(y0) is float_
                    and type_(x1) is float_
                    and type_(y1) is float_
                    and type_(entity) is int_
                ):
                    if kids is None:
                        items[entity] = (x0, y0, x1, y1, entity)
                        continue
                    if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                        items[entity] = (x0, y0, x1, y1, entity)
                        snap[node] = None
                        continue
                box = (x0, y0, x1, y1)  # read once, as in move()
            except (KeyError, TypeError, ValueError):
                pass  # _move_target names the problem
            node, rec = self._move_target(entity, box)
            self._relocate(node, rec)

    def _move_logged(
        self, entities: Iterable[int], boxes: Iterable[_BoxLike], log: Callable[[_Rec], None]
    ) -> None:
        """``move_many``'s atomic loop: ``_move_unlogged``'s, each move's previous record
        passed to ``log`` first, for ``move_many`` to undo them all on an error."""
        homes = self._home
        snap = self._snap
        entries = self._items
        float_ = _float
        int_ = _int
        type_ = type
        for entity, box in zip(entities, boxes, strict=True):
            try:
                fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                x0, y0, x1, y1 = box
                if (
                    fx0 < x0
                    and x0 <= x1
                    and x1 < fx1
                    and fy0 < y0
                    and y0 <= y1
                    and y1 < fy1
                    and type_(x0) is float_
                    and type_(y0) is float_
                    and type_(x1) is float_
                    and type_(y1) is float_
                    and type_(entity) is int_
                ):
                    if kids is None:
                        log(items[entity])
                        items[entity] = (x0, y0, x1, y1, entity)
                        continue
                    if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                        log(items[entity])
                        items[entity] = (x0, y0, x1, y1, entity)
                        snap[node] = None
                        continue
                box = (x0, y0, x1, y1)  # read once, as in move()
            except (KeyError, TypeError, ValueError):
                pass  # _move_target names the problem
            node, rec = self._move_target(entity, box)
            log(entries[node][rec[4]])
            self._relocate(node, rec)

    def move_records(self, records: Iterable[_Rec]) -> None:
        """Move each entity to its ``(min_x, min_y, max_x, max_y, entity)`` record, which
        the index then keeps as it is: ``move_many(atomic=False)`` for a caller that keeps
        its boxes as such records (the SpatialProcessor), with the same checks and errors
        (the moves before a bad record stand).

        Measured on the headline scene (2,000 moving boxes, callgrind): 4% fewer
        instructions per frame than ``move_many`` fed two ``map`` iterators, which also
        built every record a second time.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        records = iter(records)  # its __iter__ before the busy part, as in the core
        self._busy = True  # as the compiled core: see "Calls back into Python"
        try:
            homes = self._home
            snap = self._snap
            float_ = _float
            int_ = _int
            tuple_ = tuple
            type_ = type  # type(x) is one specialised instruction; x.__class__ a slower lookup
            # move()'s fast path, the record stored as it is: see there. A 5-tuple of four
            # floats and an int id (docs/design.md#decisions); the fit comparisons then
            # refuse NaN, infinities and inverted boxes too, so only a record that leaves its
            # node is tested for those before it moves. Anything else goes the careful way,
            # which names what is wrong.
            if self._wrap is not None:  # the careful way, which makes the boxes canonical
                for rec in records:
                    self._move_record_carefully(rec)
                return
            for rec in records:
                try:
                    x0, y0, x1, y1, entity = rec
                    if (
                        type_(rec) is tuple_
                        and type_(entity) is int_
                        and type_(x0) is float_
                        and type_(y0) is float_
                        and type_(x1) is float_
                        and type_(y1) is float_
                    ):
                        fx0, fy0, fx1, fy1, cx, cy, items, node, kids = homes[entity]
                        # Comparisons apart rather than chained: see docs/design.md#decisions.
                        if (
                            fx0 < x0 and x0 <= x1 and x1 < fx1
                            and fy0 < y0 and y0 <= y1 and y1 < fy1
                        ):
                            if kids is None:
                                items[entity] = rec
                                continue
                            if not ((x1 < cx or x0 > cx) and (y1 < cy or y0 > cy)):
                                items[entity] = rec
                                snap[node] = None
                                continue
                            self._relocate(node, rec)
                            continue
                        if -_INF < x0 <= x1 < _INF and -_INF < y0 <= y1 < _INF:
                            self._relocate(node, rec)
                            continue
                except (KeyError, TypeError, ValueError):
                    pass
                self._move_record_carefully(rec)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _move_record_carefully(self, rec: object) -> None:
        """A record that is not four floats of a valid box and the int id of an entry:
        refused as the compiled core refuses it (its shape, then its id, then its box, then
        whether the id is in the index), or moved as ``move`` would move it."""
        # isinstance() believes a __class__ that claims tuple: type() as well
        if not isinstance(rec, tuple) or not issubclass(type(rec), tuple) or len(rec) != 5:
            raise TypeError(
                f"records are (min_x, min_y, max_x, max_y, entity) tuples, got {rec!r}"
            )
        entity = rec[4] if type(rec[4]) is _int else _entity_id(rec[4])
        box = _coords(rec[:4], entity)
        if entity not in self._home:
            raise _missing(entity)
        self._relocate(*self._move_target(entity, box))

    def remove(self, entity: int) -> None:
        """Remove ``entity``. ``KeyError`` if it is not in the index (as for any value that is
        not an id: see ``in``).

        Complexity: O(depth), plus a merge of O(threshold) when a subtree empties out.
        """
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True
        try:
            self._remove(entity)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _remove(self, entity: object) -> None:
        """``remove`` without the busy check (the tree is busy already)."""
        key = entity if type(entity) is _int else _lookup_id(entity)
        home = self._home.pop(key, None)  # type: ignore[arg-type]
        if home is None:
            raise _missing(entity)
        entity = key
        node = home[_NODE]
        del self._items[node][entity]
        self._snap[node] = None
        count = self._count
        parent = self._parent
        highest_mergeable = -1
        n = node
        while n >= 0:
            count[n] -= 1
            if count[n] <= self._threshold and self._kids[n] is not None:
                highest_mergeable = n
            n = parent[n]
        if highest_mergeable >= 0:
            self._merge(highest_mergeable)

    def discard(self, entity: int) -> None:
        """Remove ``entity`` if it is present; do nothing otherwise (nor for a value that is
        not an id: see ``in``). While the tree is busy (see "Calls back into Python" in the
        module docstring) a discard of an int is deferred to the end of the outermost busy
        call, and of anything else refused with ``RuntimeError``."""
        if self._busy:
            if type(entity) is _int:
                self._pending.append(entity)  # a finaliser's: see "Calls back into Python"
                return
            raise RuntimeError(_BUSY)
        self._busy = True
        try:
            if entity in self:
                self._remove(entity)
        finally:
            self._busy = False
            if self._pending:
                self._settle()

    def _settle(self) -> None:
        """Apply the discards deferred while the tree was busy (its outermost busy call has
        just ended), busy meanwhile: a finaliser run by one of them defers its own."""
        self._busy = True
        try:
            pending = self._pending
            while pending:
                entity = pending.pop()
                if entity in self._home:
                    self._remove(entity)
        finally:
            self._busy = False

    def clear(self) -> None:
        """Remove every entity; the tree returns to the bounds it was made with."""
        if self._busy:
            raise RuntimeError(_BUSY)
        self._home.clear()
        self._clear_nodes()
        self._root = -1
        if self._bounds_hint is not None:
            self._root = self._new_root(self._bounds_hint, 0)
