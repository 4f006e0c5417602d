"""Proximity sensing: each watcher knows which entities lie within its radius.

An entity with a :class:`Proximity` component is a *watcher*. After each
:meth:`ProximityProcessor.process`, ``proximity.neighbors`` holds every other indexed entity
whose box lies within ``radius`` of the watcher's centre, and the changes have been
dispatched as esper events::

    "proximity_exit"(watcher, other)    # was a neighbour, is not any more
    "proximity_enter"(watcher, other)   # is a neighbour now and was not

All exits first, then all enters, each kind in ascending ``(watcher, other)`` order. The
events are exactly the difference between the set of ``(watcher, neighbour)`` pairs at the
previous ``process()`` and now, so every enter gets its exit: also when the other entity is
deleted or leaves the index, and when the watcher is deleted, loses its ``Proximity``
component or loses its position (then all its neighbours exit at once). Replacing a
watcher's ``Proximity`` with ``esper.add_component`` keeps the pairs that still hold.

The rules, each in one place:

- **centre**: the centre of the watcher's box in the SpatialProcessor's index if it is
  indexed (it has Position and AABB), else its ``Position``; a watcher with neither has no
  neighbours;
- **within reach**: ``index[other].distance_to_point(cx, cy) <= radius``, the rule of
  :meth:`Box.distance_to_point <ecs_spatial.geometry.Box.distance_to_point>` and of
  ``QuadTree.query_radius``; for an entity that was a neighbour at the previous
  ``process()`` (of this watcher, or of the component it replaced), ``<= exit_radius``
  instead when the watcher has one (hysteresis: enter at ``radius``, exit beyond
  ``exit_radius``);
- **mask**: ``category & mask != 0``, with the other entity's ``CollisionFilter.category``
  as the SpatialProcessor put it in effect at its last ``process()``
  (1 if it has none); the watcher's own filter plays no part;
- a watcher is never its own neighbour; only indexed entities are neighbours.

Cost: a watcher whose neighbourhood cannot have changed costs nothing. Each frame the
processor works from what the SpatialProcessor reports as ``moved``, ``removed`` and
``filters_changed``:

- a watcher that moved, is new, or whose ``radius``, ``mask`` or ``exit_radius`` was
  assigned is queried afresh (``index.query_radius``: O(log n + neighbours), plus a box
  look-up for each neighbour between ``radius`` and ``exit_radius``);
- every other watcher is touched only through the entities that changed: each such entity
  finds the watchers whose reach it may enter in a grid of the watchers' reach squares,
  and the watchers it may have left through a reverse map (other -> watchers that see it);
  one distance test per such pair, against ``radius`` for a newcomer and the exit reach
  for a neighbour (an eighth of a watcher's re-query, per changed entity);
- when so much changed that re-querying every watcher is cheaper than the changed
  entities' reverse look-ups, the processor re-queries every watcher instead and lets the
  reach grid go stale until it pays again (``python -m bench queries`` measures both; the
  figures behind the constants: ``docs/design.md``, "Decisions").

Watchers without an AABB (centre from their Position) are compared with their last centre
every frame: O(such watchers), a float comparison each.

On a torus (``SpatialProcessor(wrap=...)``) the distance is the minimum-image distance of
the index's ``query_radius`` (the least from an image of the centre to the box), for the
exit reach too; a watcher's ``radius`` over half the smaller period is refused with
``ValueError`` naming the watcher and its radius before anything changes (its exit reach
may be larger). Each frame then re-queries every watcher (the reach grid knows no seams).
"""

from __future__ import annotations

import copyreg
import itertools
import math
import sys
from collections.abc import KeysView, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import esper

from ._esper_tables import changed_holders, tables, world_stamp
from ._grid import CellGrid
from ._versions import PROXIMITY, PROXIMITY_PROCESSOR
from ._wrap import Period, period_of, point_images, wrap_point
from .components import Position
from .delivery import ENTER, EXIT, Outbox
from .events import PROXIMITY_ENTER, PROXIMITY_EXIT
from .filtering import category, in_mask, is_bits, sensed
from .following import (
    NO_CHANGES,
    Follower,
    ProximitySource,
    WorldBinding,
    changes_since,
    refuse_a_second,
    refuse_shallow_copy,
)
from .geometry import Box, reach

__all__ = ["Proximity", "ProximityProcessor", "ProximitySource"]

_INF = math.inf
_MAX = sys.float_info.max
#: One frame's changes as the source reports them: moved, removed, filters changed.
_Changes = tuple[AbstractSet[int], AbstractSet[int], AbstractSet[int]]


class Proximity:
    """A watcher's sense of its surroundings: ``radius`` (world units, from the centre of the
    watcher's box), ``mask`` (tested against the other entity's collision category) and
    ``exit_radius``, the reach a neighbour must pass to leave (None: ``radius``).

    A neighbour enters at ``radius`` and exits only beyond ``exit_radius``, so that an
    entity pacing between the two radii gives no events (hysteresis, as a thermostat has):
    ``Proximity(50, exit_radius=60)``. Without ``exit_radius`` the two are one.

    ``neighbors`` is written by the :class:`ProximityProcessor`; it is a read-only, live set
    view of the other entities within reach as of its last ``process()``, empty until then
    and after the component is detached from its entity.

    Assigning ``radius``, ``mask`` or ``exit_radius`` takes effect at the next ``process()``,
    and costs that watcher one fresh query there. Values are checked by ``process()``, which
    raises ``ValueError`` (``TypeError`` for a value that is not a number) naming the entity,
    the field and the value, before anything changes: a radius must be a finite number
    ``>= 0``, a mask an int, an exit radius None or a finite number ``>= radius``.

    A copy (``copy.copy``, ``copy.deepcopy``, ``pickle``) is a fresh value with the same
    radius, mask and exit radius, no neighbours, and no processor tracking it. A
    ProximityProcessor pickled together with it (one pickle: ``ecs_spatial.saving``) gives it
    back its neighbours.

    >>> p = Proximity(50.0)
    >>> p.radius, hex(p.mask), p.exit_radius, set(p.neighbors)
    (50.0, '0xffffffff', None, set())
    """

    __slots__ = ("_entity", "_exit", "_mask", "_neighbors", "_radius", "_sink")

    def __init__(
        self, radius: float, mask: int = 0xFFFFFFFF, exit_radius: float | None = None
    ) -> None:
        self._radius = radius
        self._mask = mask
        self._exit = exit_radius
        _check_values("Proximity", self)
        # entity -> None; the processor owns the contents, ``neighbors`` exposes its keys.
        self._neighbors: dict[int, None] = {}
        # Set by the processor that tracks this component: the set of entities whose
        # radius/mask changed, and our entity, so that an assignment costs O(1) there and
        # nothing for the watchers that did not change.
        self._sink: set[int] | None = None
        self._entity = 0

    @property
    def radius(self) -> float:
        """The reach, from the watcher's centre to the nearest point of another box."""
        return self._radius

    @radius.setter
    def radius(self, value: float) -> None:
        self._radius = value
        if self._sink is not None:
            self._sink.add(self._entity)

    @property
    def mask(self) -> int:
        """The categories this watcher senses: ``other_category & mask`` must be non-zero."""
        return self._mask

    @mask.setter
    def mask(self, value: int) -> None:
        self._mask = value
        if self._sink is not None:
            self._sink.add(self._entity)

    @property
    def exit_radius(self) -> float | None:
        """The reach a neighbour must pass to stop being one (None: ``radius``, no
        hysteresis). A new neighbour still enters only within ``radius``."""
        return self._exit

    @exit_radius.setter
    def exit_radius(self, value: float | None) -> None:
        self._exit = value
        if self._sink is not None:
            self._sink.add(self._entity)

    @property
    def neighbors(self) -> KeysView[int]:
        """The other entities within reach after the last ``process()``: a read-only live set
        view (``set(p.neighbors)`` takes a copy). Complexity: O(1)."""
        return self._neighbors.keys()

    def __repr__(self) -> str:
        return (
            f"Proximity(radius={self._radius!r}, mask={self._mask!r}, "
            f"exit_radius={self._exit!r}, neighbors={sorted(self._neighbors)!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # A plain value, like the other components' copies: a copy that shared the
        # neighbours' dict with its original (as the default copy of the slots did) would
        # have them emptied under it when attached elsewhere.
        return (
            copyreg.__newobj__,  # type: ignore[attr-defined]  # stdlib, missing from typeshed
            (type(self),),
            (self._radius, self._mask, self._exit),
        )

    def __setstate__(self, state: Any) -> None:
        self._neighbors = {}
        self._sink = None
        self._entity = 0
        self._radius, self._mask, self._exit = PROXIMITY.upgraded(self, state)


def _check(entity: int, proximity: Proximity) -> None:
    """Raise the error that names the entity and the bad value, if any."""
    _check_values(f"Proximity of entity {entity}:", proximity)


def _check_values(where: str, proximity: Proximity) -> None:
    """Raise the error that names ``where``, the field and the bad value, if any: the radius
    a finite real number ``>= 0`` (an int as large as a float can hold), the mask an int,
    the exit radius None or a finite real number ``>= radius``."""
    radius = proximity._radius
    if not isinstance(radius, (int, float)) or isinstance(radius, bool):
        raise TypeError(f"{where} radius must be a number, got {radius!r}")
    if not 0 <= radius <= _MAX:  # also refuses NaN, and ints beyond the float range
        raise ValueError(f"{where} radius must be finite and >= 0, got {radius!r}")
    mask = proximity._mask
    if not is_bits(mask):
        raise TypeError(f"{where} mask must be an int, got {mask!r}")
    exit_radius = proximity._exit
    if exit_radius is None:
        return
    if not isinstance(exit_radius, (int, float)) or isinstance(exit_radius, bool):
        raise TypeError(f"{where} exit_radius must be None or a number, got {exit_radius!r}")
    if not radius <= exit_radius <= _MAX:
        raise ValueError(
            f"{where} exit_radius must be None or finite and >= radius ({radius!r}), "
            f"got {exit_radius!r}"
        )


class ProximityProcessor(esper.Processor, Follower):
    """Keeps every watcher's ``Proximity.neighbors`` and dispatches ``"proximity_enter"`` /
    ``"proximity_exit"`` for the changes (see the module docstring for the rules).

    ``spatial`` is the SpatialProcessor whose index holds the entities to sense. Add this
    processor to the same world after it (a lower priority, or the same priority added
    later), as ``esper.process()`` then drives both in turn: each frame it applies that
    frame's ``moved`` and ``removed``, and when it missed frames it resynchronises from the
    index, reporting exactly the changes since what it last reported
    (:mod:`ecs_spatial.following`). One ProximityProcessor per world: it serves the esper
    world of its first ``process()`` and refuses (``RuntimeError``) to run in another; run
    by its world's ``esper.process()`` after a handler switched worlds, it does nothing.
    Its events follow the rules of :mod:`ecs_spatial.delivery`.

    A bad radius or mask makes ``process()`` raise before anything changes; the next
    successful ``process()`` re-queries every watcher, so no change is lost.
    """

    #: The cost of one changed entity's reverse look-up (a query on the reach grid, then a
    #: distance test per watcher found), relative to one watcher's re-query with
    #: ``index.query_radius``, as measured (docs/design.md, "Decisions"). Decides when
    #: re-querying every watcher is cheaper.
    REVERSE_COST = 0.13
    #: The cost of putting one watcher into a fresh reach grid, relative to a re-query.
    REBUILD_COST = 0.03

    __copy__ = refuse_shallow_copy

    def __init__(self, spatial: ProximitySource) -> None:
        self.spatial = spatial
        self._watchers: dict[int, Proximity] = {}
        # The world's change stamp as of the last frame applied: while world_stamp() returns
        # the same object, no Proximity was added, removed or replaced anywhere.
        self._stamp: object = None
        # Watchers with a centre: entity -> (cx, cy, radius, mask, exit reach) in effect,
        # the exit reach being exit_radius, or radius without one.
        self._geometry: dict[int, tuple[float, float, float, int, float]] = {}
        # Watchers not in the index: entity -> centre from Position, or None without one.
        self._unindexed: dict[int, tuple[float, float] | None] = {}
        # other -> the watchers that currently count it as a neighbour (exits on its moves).
        # Stale together with the reach grid (see _apply).
        self._seen_by: dict[int, set[int]] = {}
        # Reach squares (centre +- radius) of the watchers with a centre, in a grid whose cell
        # is twice the median radius, for "which watchers might this moved box concern"
        # (see _grid.py for why a grid). Left stale while re-querying everything is cheaper.
        self._reach = CellGrid()
        self._reach_stale = True
        self._changed: set[int] = set()  # watchers whose radius/mask was assigned
        self._binding = WorldBinding()
        self._outbox = Outbox()
        self._seen_frame: int | None = None  # the source's last frame read (following.py)

    def __getstate__(self) -> dict[str, Any]:
        """The processor's attributes, and each watcher's neighbours: a Proximity pickles
        as a plain value, so the pairs it holds for this processor are saved here."""
        state = self.__dict__.copy()
        state["_pairs"] = {
            entity: list(proximity._neighbors) for entity, proximity in self._watchers.items()
        }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Take the attributes back and hand each watcher its neighbours and this
        processor's change sink, as tracking it did: pickled together with the world's
        components (one pickle, so that they are the same objects), the processor carries
        on where it stopped. Complexity: O(watchers + pairs)."""
        state = dict(PROXIMITY_PROCESSOR.upgraded(self, state))
        pairs = state.pop("_pairs")
        self.__dict__.update(state)
        for entity, proximity in self._watchers.items():
            proximity._neighbors.clear()
            proximity._neighbors.update(dict.fromkeys(pairs[entity]))
            proximity._sink = self._changed
            proximity._entity = entity

    def process(self, *args: Any, **kwargs: Any) -> None:
        """Bring every watcher's ``neighbors`` up to date, then dispatch the exits and the
        enters, each kind sorted by ``(watcher, other)``.

        Complexity: O(d (log n + k) + m + p) with d the watchers that moved, are new or
        changed their radius or mask, k their neighbours, m the entities that moved, left
        the index or changed their filter (a grid look-up each), p the (entity, watcher)
        pairs those look-ups return; a re-query of every watcher instead when the estimates
        ``REVERSE_COST`` and ``REBUILD_COST`` say it is cheaper. Plus O(w) for w watchers
        when a component was added or removed anywhere in the world (esper's cache was
        rebuilt), and O(e log e) for e events.
        """
        if self._binding.away(self):  # its world's esper.process() after a handler left it
            return
        self._check_database()
        refuse_a_second(
            self, ProximityProcessor, "both would keep every watcher's neighbors and report them"
        )
        # What a raising handler cut off earlier comes first; the frame is worked out
        # whatever it raises (delivery.Outbox.run_frame).
        self._outbox.run_frame(self._after_owed)

    def _check_database(self) -> None:
        """Start afresh if the world's database is a new one (ids are reused)."""
        if self._binding.check(self):
            self._outbox.forget_arrivals()
            self._forget_world()

    def _work_out(self) -> None:
        """Work out the frame, post its events and deliver them (the outbox may hold them
        back: see ``Outbox.run_frame``)."""
        outbox = self._outbox
        spatial = self.spatial
        feed = changes_since(spatial, self._seen_frame)
        changes: _Changes = (
            (spatial.moved, spatial.removed, spatial.filters_changed)
            if feed
            else (NO_CHANGES, NO_CHANGES, NO_CHANGES)
        )
        # A failed _plan leaves _seen_frame as it was: the next frame resynchronises.
        plan = self._plan(changes, feed is None)
        self._seen_frame = spatial.frame
        exits, enters = self._apply(*plan, changes)
        exits.sort()
        enters.sort()
        outbox.post(PROXIMITY_EXIT, EXIT, exits)
        outbox.post(PROXIMITY_ENTER, ENTER, enters)
        outbox.deliver()

    def _forget_world(self) -> None:
        """The world's database was replaced (ids are reused): queue an exit for every pair
        reported, and forget every watcher, so that this frame finds them all afresh."""
        exits: list[tuple[int, int]] = []
        for entity, proximity in self._watchers.items():
            exits.extend((entity, other) for other in proximity._neighbors)
            proximity._neighbors.clear()
            proximity._sink = None
        self._outbox.post(PROXIMITY_EXIT, EXIT, sorted(exits))
        self._watchers.clear()
        self._geometry.clear()
        self._unindexed.clear()
        self._seen_by.clear()
        self._reach_stale = True
        self._changed.clear()
        self._stamp = None
        self._seen_frame = None

    # -- phase 1: read-only; everything that can fail fails here ---------------------------

    def _plan(
        self, changes: _Changes, requery_all: bool
    ) -> tuple[
        object,
        list[int],
        list[tuple[int, Proximity]],
        dict[int, tuple[float, float] | None],
        set[int],
        bool,
    ]:
        """Work out, without changing anything, the membership changes and the watchers to
        re-query with their centres; validate every value about to be used."""
        spatial = self.spatial
        index = spatial.index
        watchers = self._watchers
        stamp = world_stamp()
        gone: list[int] = []
        arrived: list[tuple[int, Proximity]] = []  # new watchers and replaced components
        if stamp is not self._stamp:
            # Something was added or removed somewhere in the world: compare the watchers
            # with esper's tables (never a rebuild of esper's lists: see _esper_tables).
            gone, arrived = changed_holders(tables(Proximity), watchers, Proximity)
            # A replaced component leaves too: _apply hands its pairs to the new one.
            gone.extend(entity for entity, _ in arrived if entity in watchers)
            if arrived:
                _refuse_shared(watchers, gone, arrived)

        dirty: set[int] = set()
        for entity, proximity in arrived:
            _check(entity, proximity)
            dirty.add(entity)
        for entity in self._changed:
            proximity_ = watchers.get(entity)
            if proximity_ is not None and entity not in dirty:
                _check(entity, proximity_)
                dirty.add(entity)
        moved, removed, filters_changed = changes
        # Iterate the smaller side: moved can be the whole world, watchers a tenth of it.
        for changed in (moved, removed):
            if len(changed) < len(watchers):
                for entity in changed:
                    if entity in watchers:
                        dirty.add(entity)
            else:
                for entity in watchers:
                    if entity in changed:
                        dirty.add(entity)
        for entity, centre in self._unindexed.items():
            if entity not in dirty and (entity in index or _position_centre(entity) != centre):
                dirty.add(entity)
        for entity in gone:
            dirty.discard(entity)
        for entity, _ in arrived:
            dirty.add(entity)

        # Re-query every watcher when that costs less than the changed entities' reverse
        # look-ups (plus rebuilding the reach grid if it went stale).
        if not requery_all:
            reverse = len(moved) + len(removed) + len(filters_changed)
            cost = reverse * self.REVERSE_COST
            if self._reach_stale:
                cost += len(self._geometry) * self.REBUILD_COST
            requery_all = cost > len(self._geometry) - len(dirty)
        wrap = index.wrap
        if wrap is not None:
            requery_all = True  # the reach grid and its distance tests know no seams
        if requery_all:
            dirty = set(watchers)
            for entity in gone:
                dirty.discard(entity)
            for entity, _ in arrived:
                dirty.add(entity)

        centres: dict[int, tuple[float, float] | None] = {}
        boxless: set[int] = set()  # the dirty watchers outside the index
        get = index.get
        for entity in dirty:
            box = get(entity)
            if box is None:
                centres[entity] = _position_centre(entity)
                boxless.add(entity)
            else:
                centres[entity] = box.center
        if wrap is not None:
            _refuse_over_half(
                watchers, arrived, [e for e, c in centres.items() if c is not None], wrap
            )
        return stamp, gone, arrived, centres, boxless, requery_all

    # -- phase 2: apply ----------------------------------------------------------------------

    def _apply(
        self,
        stamp: object,
        gone: list[int],
        arrived: list[tuple[int, Proximity]],
        centres: dict[int, tuple[float, float] | None],
        boxless: set[int],
        requery_all: bool,
        changes: _Changes,
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """Put the plan into effect; return the exits and the enters, unsorted."""
        spatial = self.spatial
        index = spatial.index
        watchers = self._watchers
        geometry = self._geometry
        unindexed = self._unindexed
        seen_by = self._seen_by
        reach = self._reach
        # The categories the SpatialProcessor put in effect (the one filter rule).
        categories = spatial.filters
        exits: list[tuple[int, int]] = []
        enters: list[tuple[int, int]] = []

        self._stamp = stamp
        self._changed.clear()
        # The reverse map (seen_by) and the reach grid are kept only while they are used:
        # a frame that re-queries every watcher leaves both stale, and the next incremental
        # frame rebuilds them (speed: see docs/design.md#decisions).
        track = not requery_all
        if track and self._reach_stale:
            seen_by.clear()
            for entity, proximity in watchers.items():
                for other in proximity._neighbors:
                    watching = seen_by.get(other)
                    if watching is None:
                        seen_by[other] = {entity}
                    else:
                        watching.add(entity)

        # Membership. A replaced component takes over its predecessor's pairs, so that only
        # the difference is reported; a departed watcher's pairs all exit.
        arrived_ids = {entity for entity, _ in arrived}
        handed_over: dict[int, dict[int, None]] = {}
        for entity in gone:
            old = watchers.pop(entity)
            old._sink = None
            pairs = dict(old._neighbors)
            old._neighbors.clear()
            if entity in arrived_ids:
                handed_over[entity] = pairs
                continue
            for other in pairs:
                exits.append((entity, other))
                if track:
                    _unsee(seen_by, other, entity)
            geometry.pop(entity, None)
            unindexed.pop(entity, None)
            if not self._reach_stale:
                reach.discard(entity)
        for entity, proximity in arrived:
            proximity._neighbors.clear()
            proximity._neighbors.update(handed_over.get(entity, ()))
            proximity._sink = self._changed
            proximity._entity = entity
            watchers[entity] = proximity

        # Re-query the dirty watchers.
        query_radius = index.query_radius
        for entity, centre in centres.items():
            proximity = watchers[entity]
            pairs = proximity._neighbors
            if entity in boxless:
                unindexed[entity] = centre
            elif unindexed:
                unindexed.pop(entity, None)
            if centre is None:
                for other in pairs:
                    exits.append((entity, other))
                    if track:
                        _unsee(seen_by, other, entity)
                pairs.clear()
                geometry.pop(entity, None)
                continue
            cx, cy = centre
            radius = proximity._radius
            mask = proximity._mask
            # exit_radius is None for most watchers: the hysteresis costs them two tests here
            # and one below (speed: see docs/design.md#decisions).
            band = proximity._exit
            geometry[entity] = (cx, cy, radius, mask, radius if band is None else band)
            now = sensed(query_radius(cx, cy, radius), categories, mask)
            now.discard(entity)
            if band is not None and pairs and band > radius:
                # Hysteresis: a neighbour beyond radius stays while within the exit reach
                # (one box look-up and distance test per such neighbour; nothing without).
                self._keep_within(entity, cx, cy, mask, band, pairs, now, categories)
            if pairs.keys() != now:
                for other in [o for o in pairs if o not in now]:
                    del pairs[other]
                    exits.append((entity, other))
                    if track:
                        _unsee(seen_by, other, entity)
                for other in now:
                    if other not in pairs:
                        pairs[other] = None
                        enters.append((entity, other))
                        if track:
                            watching = seen_by.get(other)
                            if watching is None:
                                seen_by[other] = {entity}
                            else:
                                watching.add(entity)

        if requery_all:
            self._reach_stale = True  # reach grid and seen_by: see `track` above
        else:
            self._update_reach(centres)
            self._reverse(centres, categories, changes, exits, enters)
        return exits, enters

    def _keep_within(
        self,
        entity: int,
        cx: float,
        cy: float,
        mask: int,
        keep: float,
        pairs: dict[int, None],
        now: set[int],
        categories: Mapping[int, tuple[int, int, int]],
    ) -> None:
        """Add to ``now`` (the entities within ``radius`` of the centre) the neighbours in
        ``pairs`` that are still sensed and within ``keep``, the exit reach: the hysteresis
        band. Complexity: O(neighbours), a box look-up for each not in ``now``."""
        index = self.spatial.index
        get = index.get
        selected = in_mask(categories, mask)
        wrap = index.wrap
        if wrap is not None:  # the minimum-image distance: the least from the nine images
            images = _images(cx, cy, period_of(wrap))
            for other in pairs:
                box = get(other)
                if (
                    other not in now
                    and box is not None
                    and selected(other)
                    and any(box.distance_to_point(px, py) <= keep for px, py in images)
                ):
                    now.add(other)
            return
        for other in pairs:
            if other in now:
                continue
            box = get(other)
            if (
                box is not None
                and selected(other)
                and box.distance_to_point(cx, cy) <= keep
            ):
                now.add(other)

    def _update_reach(self, centres: dict[int, tuple[float, float] | None]) -> None:
        """Bring the reach grid in line with ``_geometry``: rebuilt if stale (with a cell
        size fitted to the radii in use), else only the watchers re-queried this frame."""
        reach = self._reach
        geometry = self._geometry
        if self._reach_stale:
            radii = sorted(g[2] for g in geometry.values())
            reach.reset(2.0 * radii[len(radii) // 2] if radii else 1.0)
            for entity, (cx, cy, radius, _, _) in geometry.items():
                reach.put(entity, _reach_box(cx, cy, radius))
            self._reach_stale = False
            return
        for entity in centres:
            g = geometry.get(entity)
            if g is None:
                reach.discard(entity)
            else:
                reach.put(entity, _reach_box(g[0], g[1], g[2]))

    def _reverse(
        self,
        dirty: dict[int, tuple[float, float] | None],
        categories: Mapping[int, tuple[int, int, int]],
        changes: _Changes,
        exits: list[tuple[int, int]],
        enters: list[tuple[int, int]],
    ) -> None:
        """Update the pairs of the watchers not re-queried (not in ``dirty``) with the entities
        that moved, changed their filter or left the index: one distance test per (entity,
        watcher whose reach box it touches or that saw it)."""
        get = self.spatial.index.get
        moved, removed, filters_changed = changes
        geometry = self._geometry
        watchers = self._watchers
        seen_by = self._seen_by
        reach_query = self._reach.query
        # A filter edit can make or break a pair without a move. (moved and removed are
        # disjoint; an entity reported removed yet in the index is rechecked, defensively.)
        others = [e for e in filters_changed if e not in moved]
        others.extend(e for e in removed if e not in moved and get(e) is not None)
        for other in itertools.chain(moved, others):
            box = get(other)
            if box is None:
                continue  # not indexed: its exits come with the removed below
            targets = reach_query(box)
            seeing = seen_by.get(other)
            if seeing:
                targets.update(seeing)
            if not targets:
                continue
            bits = category(categories, other)
            distance = box.distance_to_point
            # `bits & mask`: inlined copy of filtering.in_mask's test, one per watcher
            # (speed: see docs/design.md#decisions)
            for watcher in targets:
                if watcher == other or watcher in dirty:
                    continue
                cx, cy, radius, mask, keep = geometry[watcher]
                pairs = watchers[watcher]._neighbors
                # A neighbour stays within the exit reach (radius without hysteresis); any
                # other entity enters within radius. The same tests as without hysteresis.
                if other in pairs:
                    if not (bits & mask and distance(cx, cy) <= keep):
                        del pairs[other]
                        exits.append((watcher, other))
                        _unsee(seen_by, other, watcher)
                elif bits & mask and distance(cx, cy) <= radius:
                    pairs[other] = None
                    enters.append((watcher, other))
                    # Looked up afresh: an exit above may have dropped the entry.
                    watching = seen_by.get(other)
                    if watching is None:
                        seen_by[other] = {watcher}
                    else:
                        watching.add(watcher)
        for other in removed:
            seeing = seen_by.get(other)
            if seeing and get(other) is None:
                for watcher in list(seeing):
                    if watcher not in dirty:
                        del watchers[watcher]._neighbors[other]
                        exits.append((watcher, other))
                        _unsee(seen_by, other, watcher)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(watchers={len(self._watchers)})"


def _refuse_shared(
    watchers: dict[int, Proximity], gone: list[int], arrived: list[tuple[int, Proximity]]
) -> None:
    """Refuse one Proximity instance on two entities, in the watchers as they will be once
    ``gone`` leave and ``arrived`` join or replace theirs: each needs its own neighbours.
    Only an arrival can bring such sharing, so this runs on frames with one."""
    current = dict(watchers)
    for entity in gone:
        del current[entity]
    current.update(arrived)
    owner: dict[int, int] = {}
    for entity in sorted(current):
        other = owner.setdefault(id(current[entity]), entity)
        if other != entity:
            raise ValueError(
                f"one Proximity component is attached to entities {other} and {entity}: "
                "give each watcher its own"
            )


def _images(cx: float, cy: float, period: Period) -> list[tuple[float, float]]:
    """The nine images of the centre that the index's ``query_radius`` measures from on a
    torus: the least distance from them to a stored box is the minimum-image distance."""
    return list(point_images(*wrap_point(cx, cy, period), period))


def _refuse_over_half(
    watchers: dict[int, Proximity],
    arrived: list[tuple[int, Proximity]],
    placed: list[int],
    wrap: Box,
) -> None:
    """On a torus: refuse the first (by id) of the watchers ``placed`` (those about to be
    queried) whose radius is over half the smaller period, as the index's ``query_radius``
    would, naming the watcher and its radius, before anything changes."""
    _, _, w, h, _, _ = period_of(wrap)
    half = min(w, h) * 0.5
    current = {**watchers, **dict(arrived)}
    over = [e for e in placed if current[e]._radius > half]
    if over:
        entity = min(over)
        radius = current[entity]._radius
        raise ValueError(
            f"watcher entity {entity}: Proximity radius {radius!r} is over half the smaller "
            f"period ({half!r}) of the wrapped world {wrap!r}: a neighbour could be within "
            "it through two of its images"
        )


def _unsee(seen_by: dict[int, set[int]], other: int, watcher: int) -> None:
    """Forget that ``watcher`` sees ``other``."""
    watching = seen_by.get(other)
    if watching is not None:
        watching.discard(watcher)
        if not watching:
            del seen_by[other]


def _position_centre(entity: int) -> tuple[float, float] | None:
    """The centre of a watcher outside the index: its Position, or None without one.
    Raises ``ValueError`` naming the entity for a NaN or infinite coordinate."""
    position = esper.try_component(entity, Position)
    if position is None:
        return None
    x = position.x
    y = position.y
    if not (-_INF < x < _INF and -_INF < y < _INF):
        raise ValueError(f"Position of watcher entity {entity} must be finite, got ({x!r}, {y!r})")
    return (x, y)


def _reach_box(cx: float, cy: float, radius: float) -> Box:
    """The square that every box within ``radius`` of the centre meets (``geometry.reach``,
    the index's own rule and margin), clamped to the finite range for the reach grid (a
    reach past it holds every finite box there)."""
    x0, y0, x1, y1 = reach(cx, cy, radius)
    return Box(max(x0, -_MAX), max(y0, -_MAX), min(x1, _MAX), min(y1, _MAX))
