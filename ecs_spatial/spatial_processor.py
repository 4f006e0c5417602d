"""``SpatialProcessor``: the esper processor that keeps a :class:`~ecs_spatial.quadtree.QuadTree`
in step with the world's ``Position`` and ``AABB`` components and dispatches collision events.

Quick start::

    import esper
    from ecs_spatial import AABB, COLLISION_ENTER, Position, SpatialProcessor

    def on_enter(a: int, b: int) -> None:       # a module-level function: see below
        print("hit", a, b)

    esper.set_handler(COLLISION_ENTER, on_enter)
    spatial = SpatialProcessor()
    esper.add_processor(spatial)                # after the processors that move things
    esper.create_entity(Position(0, 0), AABB(10, 10))
    esper.create_entity(Position(5, 5), AABB(10, 10))
    esper.process()                             # on_enter(1, 2)

The weak-reference trap
    esper holds event handlers by weak reference. A lambda or a nested function passed to
    ``esper.set_handler`` is collected at once and never called, silently. Pass a
    module-level function, or a bound method of an object you keep a reference to (for
    instance ``self.on_hit`` of a processor you added to the world). Note also that
    ``esper.remove_handler`` does not remove bound methods in esper 3.x.

Processor order
    esper runs processors by decreasing priority, and in insertion order among equals. Add
    the SpatialProcessor after the processors that move entities (or give it a lower
    priority), and the culling and proximity processors after it.
"""

from __future__ import annotations

import math
import time
import weakref
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, MutableSequence, Set
from functools import partial
from itertools import chain, compress, repeat
from operator import is_, itemgetter
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

import esper

from ._columns import FLOATS, pack, unpack
from ._esper_tables import changed_holders, existence, tables, world_stamp
from ._members import STALE, Member, Membership, new_moves, new_table, release
from ._tree_state import MASK64, mix64
from ._versions import SPATIAL_PROCESSOR
from ._wrap import Period, canonical, period_of, wrap_coord
from .arrays import ArrayRow, BoxArray
from .collision_handlers import CollisionHandler, Handler, HandlerRoutes, Routed
from .components import AABB, CollisionFilter, Continuous, Position
from .delivery import ENTER, EXIT, ONCE, STAY, Outbox
from .events import COLLISION, COLLISION_ENTER, COLLISION_EXIT, COLLISION_SWEPT
from .filtering import FilterValues, accepted, in_mask
from .following import WorldBinding, refuse_a_second, refuse_shallow_copy
from .geometry import Box
from .index import QuadTree
from .pair_set import SEARCHES, Pair, PairSet
from .saving import collector_paused

__all__ = ["CastRecord", "FrameTimings", "SpatialProcessor"]

_INF = math.inf
_clock = time.perf_counter

_entity_of = itemgetter(3)
_position_of = itemgetter(0)
_aabb_of = itemgetter(1)
_record_of = itemgetter(2)

_COLLISION_EVENTS = (COLLISION_ENTER, COLLISION_EXIT, COLLISION, COLLISION_SWEPT)
#: A frame's events for the registrations when there is none.
_NOTHING_ROUTED = Routed([], [], [])


class FrameTimings(NamedTuple):
    """Where a SpatialProcessor's last ``process()`` spent its time, in wall-clock seconds,
    phase by phase, as Box2D's ``b2World::GetProfile()`` reports a step: to see what to tune,
    and whether a slow frame is the index's or the event handlers'.

    >>> FrameTimings(0.5, 0.25, 0.125, 0.125).total
    1.0
    """

    #: Finding membership changes and reading and checking the dirty components.
    read: float
    #: Bringing the index up to date: removals, moves, insertions.
    update: float
    #: The pair search, and this frame's exits and enters worked out (0 with ``events=()``).
    pairs: float
    #: Dispatching the events, the handlers' own time included (they run inside it).
    events: float

    @property
    def total(self) -> float:
        """The four phases together: about the whole ``process()``."""
        return self.read + self.update + self.pairs + self.events


#: FrameTimings made from a tuple of the four phases in C: the class's own ``__new__`` is
#: a Python function, a frame of its own, and a frame sets its timings twice.
_timings: Callable[[tuple[float, float, float, float]], FrameTimings] = partial(
    tuple.__new__, FrameTimings
)
#: The timings of a frame before its phases are known.
_NO_TIMINGS = FrameTimings(0.0, 0.0, 0.0, 0.0)


class CastRecord(NamedTuple):
    """One cast made through a SpatialProcessor, as :attr:`SpatialProcessor.cast_log` keeps
    it (for a debug overlay, or a test): the box cast, its motion and what it hit. A ray is
    the cast of a box of zero size at its start, by ``(x1 - x0, y1 - y0)``."""

    box: Box
    dx: float
    dy: float
    #: ``(entity, t)`` of each hit reported, in the order returned.
    hits: tuple[tuple[int, float], ...]


#: A SpatialProcessor's members as it pickles them (``packed_members``): their ids (an
#: ``array('q')``), their Positions and AABBs (each a column, ``_columns.pack``: in the same
#: order), the boxes their records hold (an ``array('d')``, 4 coordinates a member) and the
#: ids of those whose record holds ``STALE`` instead (a box of zeros in the buffer). A state
#: saved before columns holds lists of Positions and AABBs; ``unpacked_members`` reads both.
PackedMembers: TypeAlias = "tuple[array[int], Any, Any, array[float], list[int]]"


def packed_members(members: dict[int, Member]) -> PackedMembers:
    """``members`` (entity -> ``[Position, AABB, box record, entity]``) as columns, the
    Positions and AABBs that only their record and the current world's table hold saved as
    floats (``_columns``): a pickle then holds a few buffers instead of an object per
    component. Complexity: O(members), in bulk."""
    records = list(members.values())
    flat = list(chain.from_iterable(map(_record_of, records)))
    stale: list[int] = []
    if len(flat) != 5 * len(records):  # a STALE record has no box
        stale = [rec[3] for rec in records if rec[2] is STALE]
        flat = list(chain.from_iterable(
            (0.0, 0.0, 0.0, 0.0, rec[3]) if rec[2] is STALE else rec[2] for rec in records
        ))
    del flat[4::5]
    ids = list(members)
    positions = list(map(_position_of, records))
    aabbs = list(map(_aabb_of, records))
    del records
    rows = list(map(existence()[0].get, ids))
    held_positions = _held(ids, positions, rows, Position)
    held_aabbs = _held(ids, aabbs, rows, AABB)
    del rows
    return (
        array("q", ids),
        pack(positions, held_positions),
        pack(aabbs, held_aabbs),
        array("d", flat), stale,
    )


def _held(ids: list[int], components: list[Any], rows: list[Any], kind: type) -> int | list[int]:
    """The references to each member's component that packed_members accounts for: its
    record's, and the world table's where the member's entity (whose table is in ``rows``,
    or None) holds it as ``kind``; one count where it is the same for all."""
    if None in rows:
        return [
            2 if comps is not None and comps.get(kind) is c else 1
            for comps, c in zip(rows, components, strict=True)
        ]
    in_world = list(map(dict.get, rows, repeat(kind)))
    same = list(map(is_, in_world, components))
    del in_world
    if same.count(True) == len(same):
        return 2
    return list(map(int.__add__, repeat(1), same))


def unpacked_members(packed: PackedMembers) -> dict[int, Member]:
    """The member records ``packed_members`` packed, each box a new record tuple."""
    return _unpacked(packed)[0]


def _unpacked(
    packed: PackedMembers, sink: list[int] | None = None,
    pending: set[int] | frozenset[int] = frozenset(),
) -> tuple[dict[int, Member], list[int], list[Any], list[Any]]:
    """``unpacked_members``, with the records' ids, Positions and AABBs in their order;
    with ``sink``, the components made from floats born tracked there (``_columns.unpack``:
    armed unless their entity is in ``pending``)."""
    buffer, positions, aabbs, boxes, stale = packed
    ids = list(buffer)
    tracked = None if sink is None else (sink, ids, pending)
    positions = unpack(positions, what="SpatialProcessor member Positions", tracked=tracked)
    aabbs = unpack(aabbs, what="SpatialProcessor member AABBs", tracked=tracked)
    records = zip(boxes[0::4], boxes[1::4], boxes[2::4], boxes[3::4], ids, strict=True)
    members = {
        entity: [pos, aabb, box, entity]
        for pos, aabb, box, entity in zip(positions, aabbs, records, ids, strict=True)
    }
    for entity in stale:
        members[entity][2] = STALE
    return members, ids, positions, aabbs


class SpatialProcessor(Membership, esper.Processor):
    """Keeps a quadtree of every entity with both a ``Position`` and an ``AABB`` and
    dispatches ``collision_exit``, ``collision_swept``, ``collision_enter`` and ``collision``
    events.

    ``bounds``, ``threshold`` and ``max_depth`` are passed to the :class:`QuadTree`: where
    most entities move every frame, ``threshold=64`` pays (the QuadTree's docstring says
    how much; every scenario: docs/design.md#decisions).

    ``wrap``, a ``Box`` or ``(x0, y0, x1, y1)``, makes the world a torus of that period
    (the index's ``wrap``: its class docstring states the rules; ``bounds`` then defaults to
    it): positions are read modulo the period (the components keep what was stored, the
    index the box moved into the period), the pairs and events, the query delegates and
    the casts go across the seams, and :attr:`wrap` reads it back. A box wider or higher
    than half the period, or with no image in it (a coordinate past the float range from
    the period), is refused by :meth:`process` as any bad box is (``ValueError`` naming the
    entity, the field and the value, before anything changes). A ``Continuous`` mover
    sweeps the minimum image of its motion (``math.remainder`` by the period: a motion of
    exactly half a period keeps its sign when the periods dropped are even, so ``+W/2``
    goes forward and ``3 W/2`` back).

    ``events`` lists the kinds to dispatch (default: all four); a kind left out is neither
    sorted nor dispatched. A kind with no handler set in the world is skipped the same way.
    With ``events=()`` the processor keeps only the index (for culling, proximity and
    queries): no pair search runs in ``process()``, and :attr:`pairs`, if read, is worked
    out then, once per frame.

    Each :meth:`process`:

    1. brings membership in step with the world: an entity that gained both components is
       inserted; one deleted or that lost either is removed; a component replaced with
       ``esper.add_component`` is picked up, as is a ``CollisionFilter`` added, removed,
       replaced or edited in place;
    2. re-places in the index only the entities whose components were assigned to (their
       dirty flags), with the index's incremental ``move``;
    3. updates the overlapping pairs (only those of changed entities when few changed) and
       dispatches every exit, then the swept contacts of the entities with a
       ``Continuous`` component (``collision_swept``, see :meth:`_sweep`), then every
       enter, then a ``collision`` for each current pair, each kind in sorted order,
       always ``a < b``; the handlers registered with :meth:`on_collision` get theirs
       after the plain events of each kind.

    The processor serves the esper world in which it first runs; it refuses to run in
    another. Entities deleted with esper's deferred ``delete_entity`` stay in the world until
    ``esper.process()`` clears them, before any processor runs: their exits come in that
    same ``process()``. Handlers may create and delete entities and add, remove or change
    components while events are dispatched: what they change is picked up at the next
    ``process()``. Events are delivered by the rules of :mod:`ecs_spatial.delivery`: each
    once to each handler, the ones a raising handler cut off first at the next
    ``process()`` (the state is already consistent: the index, ``pairs`` and the sets below
    describe the frame; a raise in that delivery still leaves the frame worked out, its
    events queued behind); an enter or a ``collision`` only while both entities exist, and an
    exit only for a pair whose enter was delivered. ``esper.process()`` from inside a
    handler, and a second SpatialProcessor in the same world, raise ``RuntimeError``; a
    cleared or remade database gives exits for every pair, then the new world's enters. A
    handler that switches worlds stops the delivery there (the rest waits for the next
    ``process()`` in this world); one that clears the database drops the old world's
    arrivals still queued at once; a world saved by a handler restores to exactly the events
    not yet delivered.

    For the processors that build on this one (culling, proximity), each ``process()`` also
    sets, as new sets each time:

    - :attr:`moved`: ids inserted, or whose box changed, in this ``process()``;
    - :attr:`removed`: ids that left the index in this ``process()`` (disjoint from
      ``moved``; a replaced component is a change, not a removal);
    - :attr:`filters_changed`: ids in the index whose ``CollisionFilter`` values changed
      (added, removed, replaced or edited).

    Bad input (a NaN or infinite coordinate, a negative size, a filter field that is not an
    int) raises ``ValueError`` or ``TypeError`` from :meth:`process`, naming the entity, the
    component and the value, before anything changes; the change stays pending, and once
    the value is fixed the next ``process()`` carries on.

    Costs per ``process()`` (``python -m bench esper`` measures it):
    O(k log n) index work for the k entities that changed, nothing for the others; pair
    search over the changed entities alone (``find_intersections_for``) or over the whole
    index in one walk (``find_all_intersections``), whichever the costs measured in the
    previous frames predict to be cheaper (see :attr:`pair_search`); O(e log e) for e
    enter and exit events, and O(p) for the ``collision`` kind if enabled. A frame after
    any component was added or removed anywhere in the world adds one pass over the
    tracked entities to find what joined, left or was replaced; it never makes esper
    rebuild its cached lists, which would cost several times that pass (the design page's
    "Decisions" has the figures).

    The esper weak-reference trap (handlers vanish if nothing else holds them) is described
    in the module docstring.
    """


    __copy__ = refuse_shallow_copy

    def __getstate__(self) -> dict[str, Any]:
        """The processor's attributes, its member records packed as columns
        (:func:`packed_members`): a pickle then copies the boxes and ids as two buffers and
        refers to each component once, instead of pickling a list and a tuple per member.
        The last frame's moves are kept as the set of ids that ``moved`` reads.
        Complexity: O(members)."""
        if self._table is not None:
            # the members stored into since the last frame into the dirty list, and every
            # record's box up to date: the copy has no table to hold them
            self._table.flush()
            self._table.sync_all()
        state = dict(self.__dict__)
        with collector_paused():
            state["_members"] = packed_members(self._members)
        state["_moved"] = set(self.moved)
        state["_moved_members"] = ()
        state["_moves_held"] = False
        state["_rows_moved"] = 0
        state["_rows_new"] = []
        # scratch, or the members table (the same records), or the index's period, or the
        # arrays' rows as of the last frame and who uses each (their ArrayRows, in
        # ``_rows``, and the index say): made again by __setstate__ and the next frame
        for name in (
            "_moves", "_table", "_table_moves", "_table_moved", "_period", "_row_moves",
            "_arrays",
        ):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled (or deep-copied) processor tracks the components its records hold,
        as the original did: copies of components are untracked, and pickled with the
        world's components (one pickle: ``ecs_spatial.saving``) they are the world's own, so
        without this their moves would go unseen. A change still pending stays pending. A
        state saved by an older version is upgraded first (``_versions``).
        Complexity: O(members + filters)."""
        state = SPATIAL_PROCESSOR.upgraded(self, state)
        state.setdefault("_rows", {})  # saved before array members
        state.pop("_row_boxes", None)
        state.setdefault("_seen_rows", None)
        state.setdefault("_rows_moved", 0)
        state.setdefault("_moves_held", False)
        state.setdefault("_rows_new", [])
        state["_arrays"] = None  # rebuilt by the next frame (_plan_rows)
        state["_row_moves"] = (bytearray(), bytearray(), bytearray())
        with collector_paused():
            packed = state["_members"]
            sink = state["_dirty"]
            members, ids, _, _ = _unpacked(packed, sink, set(sink))
            self.__dict__.update(state, _members=members, _moves=new_moves())
            self._period = self._period_of_index()
            self._new_table()
            self._track_made(ids, packed[1], packed[2])
        weakref.finalize(
            self, release, self._members, self._dirty, self._filters, self._filter_dirty,
            self._table,
        ).atexit = False

    def _track_made(self, ids: list[int], *columns: Any) -> None:
        """Track the components the records hold, as ``_track_again`` does: those that
        ``_unpacked`` made from floats were born tracked and armed (``_columns.unpack``:
        no store can reach one untracked, so no store goes unseen), and are only given their
        slot in the members table; the others are tracked through ``_track_again``, which
        compares what the records hold with what the components hold then. ``columns``: each
        slot's packed column (a column's code says which entries were made from floats),
        in the order of ``ids``. Complexity: O(members + filters)."""
        members = self._members
        others: set[int] = set()
        for packed in columns:
            if type(packed) is not tuple:
                others.update(ids)
                continue
            codes = packed[1]
            if codes.count(FLOATS) != len(codes):
                others.update(compress(ids, map(FLOATS.__ne__, codes)))
        if len(others) == len(members):
            self._track_again()
            return
        self._members = {e: members[e] for e in others}
        try:
            self._track_again()  # binds the others to the members table
        finally:
            self._members = members
        table = self._table
        if table is not None:
            for entity, rec in members.items():
                if entity not in others:
                    table.bind(entity, rec)

    def _period_of_index(self) -> Period | None:
        """The period of the index (None for a plain world), as the index computes it."""
        wrap = self._index.wrap
        return None if wrap is None else period_of(wrap)

    def _new_table(self) -> None:
        """The members table of ``_dirty`` (None without one; on a torus its read checks
        the new boxes against the period, and a refused one is read again on the dirty
        list's path, where ``_check_wrapped`` names it) and its moves' buffers."""
        self._table = new_table(self._dirty, self._period)
        self._table_moves = (bytearray(), bytearray())
        self._table_moved = 0

    def __init__(
        self,
        bounds: Box | tuple[float, float, float, float] | None = None,
        *,
        threshold: int = 16,
        max_depth: int = 8,
        events: Iterable[str] = _COLLISION_EVENTS,
        wrap: Box | tuple[float, float, float, float] | None = None,
    ) -> None:
        kinds = set(events)
        unknown = kinds.difference(_COLLISION_EVENTS)
        if unknown:
            raise ValueError(
                f"unknown event kind(s) {sorted(unknown)!r}: expected some of "
                f"{list(_COLLISION_EVENTS)!r}"
            )
        if wrap is None:
            self._index = QuadTree(bounds, threshold=threshold, max_depth=max_depth)
        else:
            self._index = QuadTree(bounds, threshold=threshold, max_depth=max_depth, wrap=wrap)
        self._period = self._period_of_index()
        self._dispatch_enter = COLLISION_ENTER in kinds
        self._dispatch_exit = COLLISION_EXIT in kinds
        self._dispatch_collision = COLLISION in kinds
        self._dispatch_swept = COLLISION_SWEPT in kinds
        # The pairs are kept every frame while there is a kind to dispatch or a registration
        # (on_collision); with neither, nothing needs them every frame: they are found only
        # if someone reads ``pairs`` (speed: see docs/design.md#decisions).
        self._any_kind = bool(kinds)
        self._pairs_stale = False
        self._binding = WorldBinding()
        self._outbox = Outbox()
        # How many process() calls brought the index up to date: the followers' change feed.
        self._frame = 0
        # Dirty lists: tracked components append their entity id on their first change.
        # These list objects are what the components point to: never rebind them.
        self._dirty: list[int] = []
        self._filter_dirty: list[int] = []
        # Tracked entities: entity -> [Position, AABB, box in the index, entity]. The box is
        # kept here, beside the index, to tell a real move from a rewrite without asking the
        # index, which builds a Box (speed: see docs/design.md#decisions).
        self._members: dict[int, Member] = {}
        # The array members (ecs_spatial.arrays): entity -> its ArrayRow; each array read
        # -> its arrays.RowState (None after unpickling: rebuilt by the next frame); the
        # frame's moves of rows, as the index's move_many takes them.
        self._rows: dict[int, ArrayRow] = {}
        self._arrays: dict[BoxArray, Any] | None = {}
        self._row_moves = (bytearray(), bytearray(), bytearray())
        self._seen_rows: object = None
        # The world's change stamp as of the last frame applied (members, then filters):
        # while world_stamp() returns the same object, no component was added or removed.
        self._seen_members: object = None
        self._seen_filters: object = None
        # Every CollisionFilter in the world (tracked), and the checked values in effect.
        self._filters: dict[int, CollisionFilter] = {}
        self._filter_values: dict[int, FilterValues] = {}
        # The pairs, their partners and sorted order, and the choice of search.
        self._pair_set = PairSet()
        self._pair_search = "auto"
        # ``moved`` is built when first read, from the member records of the frame's moves
        # and insertions: a frame whose pair search is the full walk needs only their
        # number (speed: see docs/design.md#decisions).
        self._moved: set[int] | None = set()
        self._moved_members: tuple[list[Member], ...] = ()
        # Whether ``_moves`` holds every move of the frame's changed members.
        self._moves_held = False
        # How many array members the last frame moved (the first in ``_row_moves``), and
        # those it inserted.
        self._rows_moved = 0
        self._rows_new: list[int] = []
        self._moves = new_moves()
        # The members table: the fast path of the members whose components allow it (see
        # _members.new_table); its moves come in _table_moves, _table_moved of them.
        self._new_table()
        self._removed: set[int] = set()
        self._filters_changed: set[int] = set()
        self._timings = FrameTimings(0.0, 0.0, 0.0, 0.0)
        #: None, or a collection with ``append`` (a ``collections.deque(maxlen=n)``) to
        #: which every cast made through this processor (``raycast``, ``raycast_first``,
        #: ``cast_box``, ``cast_box_first``) appends its :class:`CastRecord`, once the
        #: arguments were accepted. A debug overlay sets it to draw the last casts.
        self.cast_log: MutableSequence[CastRecord] | None = None
        # The entities with a Continuous component, and each one's box at the last frame
        # (the start of its next sweep), while it is in the index.
        self._continuous: dict[int, Continuous] = {}
        self._swept_from: dict[int, Any] = {}
        self._seen_continuous: object = None
        # The on_collision registrations; they post into the outbox, in the frame's order.
        self._routes = HandlerRoutes(self._outbox.post)
        # When this processor is dropped (removed from its world, or the world deleted), the
        # components it tracked forget it; else a later processor would find each one shared
        # with a place that never re-arms, and pay the shared path on every assignment.
        finalizer = weakref.finalize(
            self, release, self._members, self._dirty, self._filters, self._filter_dirty,
            self._table,
        )
        finalizer.atexit = False

    # ------------------------------------------------------------------ public state

    @property
    def pair_search(self) -> str:
        """How a frame finds its pairs: ``"auto"`` (the default) picks the search predicted
        to be cheaper from the costs measured in the frames before
        (:class:`~ecs_spatial.pair_set.SearchChoice`); ``"incremental"`` and ``"full"``
        force one (for tests and benchmarks). All three give the same pairs and events; any
        other value is refused with a ``ValueError``."""
        return self._pair_search

    @pair_search.setter
    def pair_search(self, value: str) -> None:
        if value not in SEARCHES:
            raise ValueError(f"pair_search must be one of {SEARCHES!r}, got {value!r}")
        self._pair_search = value

    @property
    def wrap(self) -> Box | None:
        """The period of a wrap-around (toroidal) world, as the box ``(x0, y0, x0 + W, y0 +
        H)`` (the index's :attr:`~ecs_spatial.quadtree.QuadTree.wrap`), or None for a plain
        one. Read-only: it is set by ``SpatialProcessor(wrap=...)``, and kept by pickling,
        copies and ``save_world``/``restore_world`` (the index's state carries it)."""
        return self._index.wrap

    @property
    def index(self) -> QuadTree:
        """The quadtree, as of the last ``process()``, for queries of your own. Read it;
        do not insert into it or move things in it (the processor owns its contents)."""
        return self._index

    @property
    def pairs(self) -> Set[Pair]:
        """Every pair ``(a, b)``, ``a < b``, overlapping (and accepted by the filters) as of
        the last ``process()``. A live view: do not modify it.

        With ``events=()`` it is worked out when read (one all-pairs search), at most once
        per ``process()``.
        """
        self._fresh_pairs()
        return self._pair_set.view()

    def _fresh_pairs(self) -> None:
        """With ``events=()`` the pairs are found only when read: find them once a frame."""
        if self._pairs_stale:
            self._pair_set.replace(self._accepted(self._index.find_all_intersections()))
            self._pairs_stale = False

    def state_hash(self) -> int:
        """A 64-bit integer equal for equal states: the index's
        :meth:`~ecs_spatial.quadtree.QuadTree.state_hash` (its ids and boxes), the pairs and
        the filter values in effect, whatever the order things were made in, the process or
        ``PYTHONHASHSEED`` (Box2D's ``b2World_GetStateHash``): two peers of a lockstep game,
        or a replay and its recording, compare it frame by frame.

        Complexity: O(n + pairs + filters).
        """
        pairs = 0
        for a, b in self.pairs:
            pairs += mix64(mix64(a & MASK64) ^ (b & MASK64))
        filters = 0
        for entity, (category, mask, group) in self._filter_values.items():
            h = mix64(entity & MASK64)
            for value in (category, mask, group):
                h = mix64(h ^ (value & MASK64))
            filters += h
        h = mix64(self._index.state_hash() ^ (pairs & MASK64))
        return mix64(h ^ (filters & MASK64))

    def contacts(self, entity: int) -> frozenset[int]:
        """The entities whose boxes overlap ``entity``'s (and that the filters let collide
        with it) as of the last ``process()``: the other side of each of its ``pairs``
        (Box2D's contact list of a body). Empty for an entity that is not tracked.

        Complexity: O(contacts). The first call may cost a pass over the pairs (and, with
        ``events=()``, the all-pairs search that ``pairs`` itself needs); from then on the
        processor keeps each entity's partners up to date every frame, one set update per
        pair that starts or ends.
        """
        self._fresh_pairs()
        return self._pair_set.contacts(entity)

    def on_collision(
        self,
        type_a: type[Any] | None,
        type_b: type[Any] | None,
        *,
        enter: Handler | None = None,
        exit: Handler | None = None,
        stay: Handler | None = None,
    ) -> CollisionHandler:
        """Call ``enter(entity_a, entity_b)`` when a pair in which one entity holds a
        ``type_a`` component and the other a ``type_b`` one starts to overlap, ``exit`` when
        it stops, and ``stay`` every frame it overlaps (pymunk's ``space.on_collision``, with
        esper component classes for collision types; ``None`` matches any tracked entity).
        ``entity_a`` is the one holding ``type_a`` (the smaller id first when both orders
        fit). Returns the registration; its ``remove()`` ends it.

        The handlers are held by strong reference (a lambda works). Each registration is
        balanced on its own: every enter delivered to it gets exactly one exit from it,
        also when an entity loses the component that matched, is deleted or filtered out,
        and when the registration is removed (its pairs get their exits then). The events
        follow the rules of the plain ones: exits, then enters, then stays, each after the
        plain events of its kind and sorted by pair; each once, whatever a handler raises;
        an enter or a stay only while both entities exist. :mod:`ecs_spatial.collision_handlers`
        gives the details and the costs; a pair that no registration matches costs a set
        look-up per registration when it starts or ends.

        >>> import esper
        >>> class Bullet: pass
        >>> class Wall: pass
        >>> spatial = SpatialProcessor()
        >>> hit = spatial.on_collision(Bullet, Wall, enter=lambda b, w: print("hit", b, w))
        >>> hit.remove()
        """
        self._fresh_pairs()  # events=(): the pairs are needed every frame from now on
        return self._routes.register(type_a, type_b, enter, exit, stay)

    @property
    def collision_handlers(self) -> list[CollisionHandler]:
        """The registrations made with :meth:`on_collision` and not removed, oldest first
        (a new list)."""
        return list(self._routes.handlers)

    @property
    def filters(self) -> Mapping[int, FilterValues]:
        """The checked ``(category, mask, group)`` of every entity with a
        ``CollisionFilter``, as of the last ``process()``: a read-only live mapping. An
        entity not in it has :data:`~ecs_spatial.filtering.DEFAULT_FILTER`'s values."""
        return MappingProxyType(self._filter_values)

    @property
    def frame(self) -> int:
        """How many ``process()`` calls have brought the index up to date: the followers
        compare it with the last frame they read (see :mod:`ecs_spatial.following`)."""
        return self._frame

    @property
    def moved(self) -> Set[int]:
        """The ids inserted into the index, or whose box changed, in the last
        ``process()``."""
        moved = self._moved
        if moved is None:
            moved = self._moved = set()
            moved.update(self._rows_new)
            if self._rows_moved:
                ids = array("q")
                ids.frombytes(self._row_moves[0][:8 * self._rows_moved])
                moved.update(ids)
            for members in self._moved_members:
                moved.update(map(_entity_of, members))
            if self._table_moved:
                ids = array("q")
                ids.frombytes(self._table_moves[0])
                moved.update(ids)
        return moved

    def moved_buffers(self) -> tuple[list[tuple[bytearray, bytearray, int]], list[int]]:
        """The last ``process()``'s moves and insertions (``moved``'s entities with their new
        boxes) as the buffers the index was moved from, ``(held, extra)``: ``held`` a list of
        ``(ids, boxes, n)``, the first ``n`` moves of each (``ids`` int64, ``boxes`` four
        float64 a move, native order: ``move_many``'s layout; on a torus each box as read,
        before the index took its canonical image), ``extra`` the entities moved or inserted
        that no buffer holds (read their boxes from the index). Read-only, for
        NeighbourArrays' compiled gather: the buffers are the processor's own, reused by the
        next ``process()`` (do not write or keep them). O(insertions)."""
        members = self._moved_members
        if not members:  # after unpickling, or a failed frame: only ``moved`` knows
            return [], list(self.moved)
        changed, created = members
        held: list[tuple[bytearray, bytearray, int]] = []
        extra = [rec[3] for rec in created]
        extra.extend(self._rows_new)
        if changed:
            ids, boxes = self._moves
            if self._moves_held and ids is not None and boxes is not None:
                held.append((ids, boxes, len(changed)))
            else:
                extra.extend(rec[3] for rec in changed)
        if self._table_moved:
            held.append((*self._table_moves, self._table_moved))
        if self._rows_moved:
            held.append((self._row_moves[0], self._row_moves[1], self._rows_moved))
        return held, extra

    @property
    def removed(self) -> Set[int]:
        """The ids that left the index in the last ``process()`` (deleted, or lost
        ``Position`` or ``AABB``)."""
        return self._removed

    @property
    def filters_changed(self) -> Set[int]:
        """The ids in the index whose ``CollisionFilter`` values changed (added, removed,
        replaced or edited in place) in the last ``process()``."""
        return self._filters_changed

    @property
    def timings(self) -> FrameTimings:
        """Where the last ``process()`` spent its time, phase by phase (all zero before the
        first): four clock readings a frame."""
        return self._timings

    # ------------------------------------------------------------------ query delegates

    # Each takes an optional ``mask``, as pymunk's queries take a ShapeFilter: only the
    # entities whose collision category is in it (``category & mask != 0``) are answered,
    # an entity without a ``CollisionFilter`` counting as ``CollisionFilter()`` (category
    # 1). The categories are those of the last ``process()``, as the boxes are.

    def query(
        self, box: Box | tuple[float, float, float, float], *, mask: int | None = None
    ) -> list[int]:
        """``index.query(box)``: every id whose box intersects ``box``, each once; only
        those whose category is in ``mask`` if given."""
        return self._masked(self._index.query(box), mask)

    def query_point(self, x: float, y: float, *, mask: int | None = None) -> list[int]:
        """``index.query_point(x, y)``: every id whose box contains the point; only those
        whose category is in ``mask`` if given."""
        return self._masked(self._index.query_point(x, y), mask)

    def query_radius(
        self, x: float, y: float, r: float, *, mask: int | None = None
    ) -> list[int]:
        """``index.query_radius(x, y, r)``: every id whose box is within ``r`` of the
        point; only those whose category is in ``mask`` if given."""
        return self._masked(self._index.query_radius(x, y, r), mask)

    def nearest(
        self,
        x: float,
        y: float,
        k: int = 1,
        *,
        mask: int | None = None,
        max_distance: float = _INF,
    ) -> list[int]:
        """``index.nearest(x, y, k, max_distance=...)``: the ``k`` nearest ids (within
        ``max_distance`` if given), nearest first, ties by id; with ``mask``, the ``k``
        nearest of those whose category is in it (however many nearer ones are not)."""
        where = None if mask is None else self._in_mask(mask)
        return self._index.nearest(x, y, k, where=where, max_distance=max_distance)

    def raycast(
        self, x0: float, y0: float, x1: float, y1: float, *, mask: int | None = None
    ) -> list[tuple[int, float]]:
        """``index.raycast(...)``: ``(entity, t)`` for every box the segment touches, by
        ``t`` then id; only those whose category is in ``mask`` if given."""
        hits = self._hits_in_mask(self._index.raycast(x0, y0, x1, y1), mask)
        if self.cast_log is not None:
            self._log_ray(x0, y0, x1, y1, hits)
        return hits

    def raycast_first(
        self, x0: float, y0: float, x1: float, y1: float, *, mask: int | None = None
    ) -> tuple[int, float] | None:
        """``index.raycast_first(...)``: the first ``(entity, t)`` the segment hits, or
        ``None``; the first of those whose category is in ``mask`` if given. It stops as
        soon as nothing nearer can exist."""
        where = None if mask is None else self._in_mask(mask)
        hit = self._index.raycast_first(x0, y0, x1, y1, where=where)
        if self.cast_log is not None:
            self._log_ray(x0, y0, x1, y1, [] if hit is None else [hit])
        return hit

    def cast_box(
        self,
        box: Box | tuple[float, float, float, float],
        dx: float,
        dy: float,
        *,
        mask: int | None = None,
    ) -> list[tuple[int, float]]:
        """``index.cast_box(box, dx, dy)``: ``(entity, t)`` for every box that ``box``
        touches while it moves by ``(dx, dy)``, by ``t`` then id; only those whose category
        is in ``mask`` if given."""
        hits = self._hits_in_mask(self._index.cast_box(box, dx, dy), mask)
        if self.cast_log is not None:
            self.cast_log.append(CastRecord(Box(*box), float(dx), float(dy), tuple(hits)))
        return hits

    def cast_box_first(
        self,
        box: Box | tuple[float, float, float, float],
        dx: float,
        dy: float,
        *,
        mask: int | None = None,
    ) -> tuple[int, float] | None:
        """``index.cast_box_first(box, dx, dy)``: the first ``(entity, t)`` that ``box``
        touches while it moves by ``(dx, dy)``, or ``None``; the first of those whose
        category is in ``mask`` if given. It stops as soon as nothing nearer can exist."""
        where = None if mask is None else self._in_mask(mask)
        hit = self._index.cast_box_first(box, dx, dy, where=where)
        if self.cast_log is not None:
            found = () if hit is None else (hit,)
            self.cast_log.append(CastRecord(Box(*box), float(dx), float(dy), found))
        return hit

    def _hits_in_mask(
        self, hits: list[tuple[int, float]], mask: int | None
    ) -> list[tuple[int, float]]:
        """``hits`` as they are without a mask, else those whose category is in ``mask``."""
        if mask is None:
            return hits
        keep = self._in_mask(mask)
        return [hit for hit in hits if keep(hit[0])]

    def _log_ray(
        self, x0: float, y0: float, x1: float, y1: float, hits: list[tuple[int, float]]
    ) -> None:
        """Record a ray in :attr:`cast_log` as the cast of a box of zero size."""
        assert self.cast_log is not None
        x0, y0 = float(x0), float(y0)
        self.cast_log.append(
            CastRecord(Box(x0, y0, x0, y0), float(x1) - x0, float(y1) - y0, tuple(hits))
        )

    def _masked(self, found: list[int], mask: int | None) -> list[int]:
        """``found`` as it is without a mask, else the ids in it whose category is in
        ``mask``."""
        return found if mask is None else list(filter(self._in_mask(mask), found))

    def _in_mask(self, mask: int) -> Callable[[int], bool]:
        """The test ``category & mask != 0`` for an entity of the index, by the category of
        its ``CollisionFilter`` at the last ``process()`` (1 without one)."""
        return in_mask(self._filter_values, mask)

    # ------------------------------------------------------------------ the frame

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Bring the index and the pairs up to date with the world, then dispatch this
        frame's collision events. See the class docstring for what, in which order, and at
        what cost. Extra arguments (esper passes on those of ``esper.process``) are
        ignored."""
        if self._binding.away(self):  # its world's esper.process() after a handler left it
            return
        fresh_database = self._binding.check(self)
        refuse_a_second(self, SpatialProcessor, "each would dispatch every collision event")
        if fresh_database:
            self._forget_world()
        outbox = self._outbox
        if not outbox:
            self._work_out()
            return
        # What an earlier frame's raising handler cut off comes first; the frame is worked
        # out whatever it raises (delivery.Outbox.run_frame). The owed delivery's time is
        # the events phase's, as the frame's own delivery is: all the time not in the
        # frame's other phases (all of it when the frame is not worked out).
        started = _clock()
        self._timings = _NO_TIMINGS
        try:
            outbox.run_frame(self._after_owed)
        finally:
            took = self._timings
            read, update, pairs, _ = took
            self._timings = _timings(
                (read, update, pairs, _clock() - started - read - update - pairs)
            )

    def _after_owed(self) -> None:
        """The frame, after the owed delivery: a handler there may have replaced the world's
        database (``esper.clear_database``), and the frame reads the world it left, so the
        binding is checked again, as at the start of ``process()``."""
        if self._binding.check(self):
            self._forget_world()
        self._work_out(after_owed=True)

    def _work_out(self, after_owed: bool = False) -> None:
        """Work out the frame, post its events and deliver them (the outbox may hold them
        back: see ``Outbox.run_frame``). ``after_owed``: events may still be queued, which
        the registrations plan by."""
        started = _clock()
        outbox = self._outbox
        self._moved = set()
        self._moved_members = ()
        self._moves_held = False
        self._rows_moved = 0
        self._rows_new = []
        self._table_moved = 0
        self._removed = set()
        self._filters_changed = set()

        # Phase 1 reads and checks; everything that can fail fails here, before any change.
        stamp = world_stamp()
        if stamp is self._seen_members and not self._filter_dirty and not self._rows:
            # A quiet frame: no component added or removed anywhere since the last frame
            # (whose apply phase set the members', filters' and rows' stamps alike), no
            # filter edited, no array member. The plans of membership, filters and rows
            # would find nothing and their applies do nothing: only the boxes are read.
            gone: list[int] = []
            arrived: list[tuple[int, tuple[Position, AABB]]] = []
            changed, created, by_buffers, dirty_read, table_moved = self._plan_boxes(
                gone, arrived, None if self._period is None else self._check_wrapped
            )
            read = _clock()
            self._apply_members(
                stamp, gone, arrived, changed, created, by_buffers, dirty_read, table_moved
            )
        else:
            gone, arrived = self._plan_members(stamp)
            filters_gone, filters_arrived, filter_values, filters_read = self._plan_filters(
                stamp
            )
            rows = self._plan_rows(stamp, gone, arrived)
            changed, created, by_buffers, dirty_read, table_moved = self._plan_boxes(
                gone, arrived, None if self._period is None else self._check_wrapped
            )
            read = _clock()

            # Phase 2 applies.
            self._apply_rows_gone(rows)
            self._apply_members(
                stamp, gone, arrived, changed, created, by_buffers, dirty_read, table_moved
            )
            self._apply_rows(stamp, rows)
            self._apply_filters(
                stamp, filters_gone, filters_arrived, filter_values, filters_read
            )
        self._frame += 1
        updated = _clock()
        if not (self._any_kind or self._routes.handlers):
            if (
                any(self._moved_members) or self._rows_moved or self._rows_new
                or self._table_moved
                or self._removed
                or self._filters_changed
            ):
                self._pairs_stale = True
            self._timings = _timings((read - started, updated - read, 0.0, 0.0))
            return
        exits, enters = self._update_pairs()
        routed = _NOTHING_ROUTED
        if self._routes.handlers:
            pair_set = self._pair_set
            routed = self._routes.plan(
                stamp, pair_set.pairs, pair_set.contacts, exits, enters,
                outbox.queued() if after_owed else (),
            )
        swept: list[tuple[int, int, float]] = []
        if self._continuous or stamp is not self._seen_continuous:
            swept = self._sweep(stamp, exits)
        searched = _clock()
        self._timings = _timings((read - started, updated - read, searched - updated, 0.0))
        try:
            self._post(exits, enters, swept, routed, stamp)
            outbox.deliver()
        finally:  # a handler that raises still leaves this frame's record
            self._timings = _timings(
                (read - started, updated - read, searched - updated, _clock() - searched)
            )

    def _check_wrapped(
        self,
        changed: list[Member],
        created: list[Member],
        arrived: list[tuple[int, tuple[Position, AABB]]],
    ) -> None:
        """On a torus, the read phase's last check: every new box has an image in the period
        and is at most half the period wide and high (the index's rule,
        ``_wrap.canonical``, so that the apply phase cannot fail), else the error naming
        the entity, the field and its value; the records already updated are marked
        ``STALE`` first, as a failed read marks them (nothing else has changed yet). A
        replaced component's box is its own (in ``arrived``): the record still holds the
        component it replaces. Complexity: O(k) for the k boxes read."""
        period = self._period
        assert period is not None
        for rec in chain(changed, created):
            x0, y0, x1, y1, entity = rec[2]
            try:
                canonical(x0, y0, x1, y1, entity, period)
            except ValueError:
                for stale in changed:
                    stale[2] = STALE
                pos, aabb = dict(arrived).get(entity, (rec[0], rec[1]))
                raise _wrap_error(entity, pos, aabb, period) from None

    def _forget_world(self) -> None:
        """The world's database was replaced (``esper.clear_database``, or the world deleted
        and made again), so esper reuses ids: queue an exit for every pair reported, forget
        every entity, and let this frame find the new world's as newcomers."""
        self._outbox.forget_arrivals()
        if self._dispatch_exit and not self._pairs_stale:
            self._outbox.post(COLLISION_EXIT, EXIT, self._pair_set.sorted())
        self._routes.forget_world()
        self._continuous.clear()
        self._swept_from.clear()
        self._seen_continuous = None
        release(self._members, self._dirty, self._filters, self._filter_dirty, self._table)
        self._members.clear()
        self._rows.clear()
        self._arrays = {}
        self._seen_rows = None
        self._dirty.clear()
        self._filters.clear()
        self._filter_values.clear()
        self._filter_dirty.clear()
        self._index.clear()
        self._pair_set.clear()
        self._pairs_stale = False
        self._seen_members = self._seen_filters = None
        self._frame += 1  # a gap in the change feed: the followers resynchronise

    def _update_pairs(self) -> tuple[list[Pair], list[Pair]]:
        """Bring ``pairs`` up to date; return this frame's exits and enters, sorted (the
        search chosen by :attr:`pair_search`: see :mod:`ecs_spatial.pair_set`)."""
        filters_changed = self._filters_changed
        # The entities whose pairs may have changed, made only if the incremental search
        # runs; their number is enough to choose the search.
        touched: Collection[int] | None = None
        if filters_changed:
            touched = self.moved | filters_changed
            k = len(touched)
        else:
            k = sum(map(len, self._moved_members)) + self._table_moved + self._rows_moved
            k += len(self._rows_new)
        return self._pair_set.update(
            self._index,
            self.pair_search,
            k,
            self._touched if touched is None else (lambda: touched),
            self._removed,
            # None when no entity has a filter: every pair is accepted, and a full search
            # can then keep the pairs flat (PairSet.update)
            self._accepted if self._filter_values else None,
        )

    def _touched(self) -> Collection[int]:
        """The entities the frame moved or inserted, for the incremental search: where one
        move buffer holds them all (the members table's, or the array rows'), its ids
        copied into an ``array('q')``, which the search and the compiled diff read without
        the set ``moved`` would build (a Python int and a set entry each); else ``moved``.
        An entity is in at most one buffer, once."""
        if self._moved is None and not any(self._moved_members) and not self._rows_new:
            held, n = (
                (self._table_moves[0], self._table_moved) if not self._rows_moved
                else (self._row_moves[0], self._rows_moved) if not self._table_moved
                else (None, 0)
            )
            if held is not None:
                ids = array("q")
                ids.frombytes(held[:8 * n])  # a copy of the few bytes: no view to release
                return ids
        return self.moved

    def _accepted(self, found: list[Pair]) -> list[Pair]:
        """The pairs of ``found`` that the collision filters accept, in the same order."""
        return accepted(found, self._filter_values)

    def _sweep(self, stamp: object, exits: list[Pair]) -> list[tuple[int, int, float]]:
        """The frame's swept contacts ``(mover, other, t)``, sorted by ``t``, then mover,
        then other: for each entity with a ``Continuous`` component that moved since the
        previous frame, the boxes its previous box touched while moving to its new place
        (by the change of its min corner, at its previous size), as the index holds them
        now, that it overlapped neither then (a pair that exited now) nor now (a current
        pair), and that the filters let it collide with.

        Complexity: O(c) for c entities with ``Continuous`` (a look at each one's box),
        plus one ``cast_box`` for each that moved; nothing without any.
        """
        continuous = self._continuous
        swept_from = self._swept_from
        if stamp is not self._seen_continuous:
            found = tables(Continuous)
            gone, arrived = changed_holders(found, continuous, Continuous)
            for entity in gone:
                del continuous[entity]
                swept_from.pop(entity, None)
            for entity, component in arrived:
                continuous[entity] = component
                swept_from.pop(entity, None)  # a new component starts its sweeps afresh
            self._seen_continuous = stamp
        if not continuous:
            return []
        members = self._members
        sync = None if self._table is None else self._table.sync
        wanted = self._dispatch_swept and esper.event_registry.get(COLLISION_SWEPT)
        cast_box = self._index.cast_box
        period = self._period
        pairs = self._pair_set.pairs
        ended = set(exits) if exits else ()
        found_hits: list[tuple[float, int, int]] = []
        for entity, component in continuous.items():
            rec = members.get(entity)
            if rec is None:
                swept_from.pop(entity, None)
                continue
            if sync is not None:
                sync(entity)  # the record's box, up to date with the members table's
            now = rec[2]
            before = swept_from.get(entity)
            if component._teleported:  # said for this frame's move, whether or not it moved
                component._teleported = False
                swept_from[entity] = now
                continue
            if before is now:
                continue
            swept_from[entity] = now
            if before is None or len(before) < 4 or len(now) < 4 or not wanted:
                continue
            dx = now[0] - before[0]
            dy = now[1] - before[1]
            start: Any = before[:4]
            if period is not None:
                # the minimum image of the motion, exact (IEEE remainder); a motion of
                # exactly half a period keeps its sign when the periods dropped are even
                # (+W/2 stays +W/2, 3W/2 becomes -W/2), from the start's canonical image
                dx = math.remainder(dx, period[2])
                dy = math.remainder(dy, period[3])
                start = canonical(before[0], before[1], before[2], before[3], entity, period)
            if dx == 0.0 and dy == 0.0:
                continue
            for other, t in cast_box(start, dx, dy):
                if other == entity:
                    continue
                pair = (entity, other) if entity < other else (other, entity)
                if pair in pairs or pair in ended or not self._accepted([pair]):
                    continue
                found_hits.append((t, entity, other))
        found_hits.sort()
        return [(mover, other, t) for t, mover, other in found_hits]

    def _post(
        self,
        exits: list[Pair],
        enters: list[Pair],
        swept: list[tuple[int, int, float]],
        routed: Routed,
        stamp: object,
    ) -> None:
        """Queue exits, swept contacts, enters, then every current pair, each kind only if
        enabled, the registrations' own after the plain events of each kind (the outbox
        delivers them by its rules). The lists are the outbox's own: handlers may change
        the world freely. The enters and the current pairs name members only, which exist
        in the world of ``stamp``, the stamp this frame read it by: the outbox may pass the
        deletion rule by it while it stays the world's (``Outbox.post``)."""
        post = self._outbox.post
        if self._dispatch_exit:
            post(COLLISION_EXIT, EXIT, exits)
        for handler, keys in routed.exits:
            post(handler, EXIT, keys)
        if swept:
            post(COLLISION_SWEPT, ONCE, swept)
        if self._dispatch_enter:
            post(COLLISION_ENTER, ENTER, enters, stamp)
        for handler, keys in routed.enters:
            post(handler, ENTER, keys)
        if (
            len(self._pair_set)  # not .pairs: that would keep the dict up to date for good
            and self._dispatch_collision
            and esper.event_registry.get(COLLISION)
        ):
            post(COLLISION, STAY, self._pair_set.sorted(), stamp)
        for handler, keys in routed.stays:
            post(handler, STAY, keys)


def _wrap_error(entity: int, pos: Position, aabb: AABB, period: Period) -> ValueError:
    """The error for a box the torus of ``period`` refuses: the field of ``entity``'s
    components at fault and its value (the width or height over half the period, or a
    coordinate with no image in the period)."""
    ox, oy, w, h, ex, ey = period
    x0 = pos._x + aabb._ox + 0.0
    y0 = pos._y + aabb._oy + 0.0
    for name, v, origin, p, end in (("x", x0, ox, w, ex), ("y", y0, oy, h, ey)):
        c = wrap_coord(v, origin, p, end)
        if c != c:
            return ValueError(
                f"entity {entity}: Position {name} {getattr(pos, name)!r} puts its box "
                f"({pos!r}, {aabb!r}) past the float range from the period "
                f"{Box(ox, oy, ex, ey)!r} of the wrapped world (it has no image there)"
            )
    if aabb._h > h * 0.5 and not aabb._w > w * 0.5:
        name, value, limit = "height", aabb.height, h * 0.5
    else:  # the width, also where only the shift to the period rounded it over
        name, value, limit = "width", aabb.width, w * 0.5
    return ValueError(
        f"entity {entity}: AABB {name} {value!r} is over half the period of the wrapped "
        f"world (at most {limit!r}; the period is {Box(ox, oy, ex, ey)!r})"
    )
