"""What the processors share: the esper world each serves, and the change feed that the
follower processors (culling, proximity) read from a SpatialProcessor.

The change feed
    A :class:`SpatialSource` counts the ``process()`` calls that brought its index up to date
    (``frame``) and reports what the last one changed (``moved``, ``removed``). A follower
    remembers the last frame it read. When the source is exactly one frame ahead, the
    follower applies that frame's changes; when the source did not run, nothing changed;
    when it is further ahead (the follower missed frames: a handler upstream raised, or the
    follower was taken out of the world for a while), the follower resynchronises from the
    index itself. So a follower never depends on seeing every frame.

The world binding
    A processor serves the esper world of its first ``process()`` and refuses any other. It
    also notices when that world's database is replaced under it (``esper.clear_database``,
    or ``esper.delete_world`` and a new world of the same name): esper then reuses entity
    ids, so the processor reports exits for everything it had reported and starts afresh.
    A follower reads its source only once the source has worked out a frame of the
    database now current (:func:`source_current`): until then the source describes the
    world that was replaced, and the follower sees nothing.

    When a handler switches worlds in the middle of a delivery (a scene change on a hit),
    the old world's ``esper.process()`` goes on calling that world's processors with the
    other world current: they do nothing (:meth:`WorldBinding.away`), and their frames wait
    for their next ``process()`` in their own world.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping, Set
from typing import Any, Protocol

import esper

from ._esper_tables import database as _database
from ._esper_tables import processors as _processors
from .delivery import Outbox, delivering_in, left_by, returned
from .index import QuadTree

__all__ = [
    "NO_CHANGES",
    "ProximitySource",
    "SpatialSource",
    "WorldBinding",
    "changes_since",
    "refuse_a_second",
    "refuse_shallow_copy",
    "source_current",
]

#: The changes of a frame in which the source did not run.
NO_CHANGES: frozenset[int] = frozenset()


class SpatialSource(Protocol):
    """What a follower processor reads from a SpatialProcessor: its index; how many times it
    brought the index up to date (``frame``); and the entities whose box changed (or that
    were inserted) and that left the index during the last of those."""

    @property
    def index(self) -> QuadTree: ...

    @property
    def frame(self) -> int: ...

    @property
    def moved(self) -> Set[int]: ...

    @property
    def removed(self) -> Set[int]: ...


class ProximitySource(SpatialSource, Protocol):
    """What the ProximityProcessor reads from a SpatialProcessor: a :class:`SpatialSource`
    that also reports the indexed entities whose ``CollisionFilter`` values changed (a
    category edit can make or break a pair) and the filter values in effect."""

    @property
    def filters_changed(self) -> Set[int]: ...

    @property
    def filters(self) -> Mapping[int, tuple[int, int, int]]: ...


def changes_since(source: SpatialSource, seen: int | None) -> bool | None:
    """How a follower that last read frame ``seen`` of ``source`` (None: never) catches up:
    ``True`` to apply the source's ``moved`` and ``removed`` (it is one frame ahead),
    ``False`` when nothing changed (the source has not run since), ``None`` to resynchronise
    from the index (the follower missed frames, or never read one)."""
    frame = source.frame
    if seen is None:
        return None
    if frame == seen + 1:
        return True
    if frame == seen:
        return False
    return None


class WorldBinding:
    """The esper world a processor serves, and the database it last saw there.

    Copies and pickles of a processor carry no binding: a copy serves the world of its first
    ``process()``, as a new processor does (so a saved game's processors adopt the world they
    are loaded into).
    """

    __slots__ = ("_database", "order", "world")

    def __init__(self) -> None:
        self.world: str | None = None
        #: When it was first bound, among all bindings: of two processors that must be alone
        #: in a world, the one bound first keeps running.
        self.order = 0
        # esper's id counter of the world's database, held (not its id(): a freed counter's
        # address can come back) to tell a cleared or remade database from the one served.
        self._database: object = None

    def __reduce__(self) -> tuple[type[WorldBinding], tuple[()]]:
        # A fresh binding. (A __getstate__ returning None made copy and pickle skip
        # __setstate__, which left the copy's slots empty: its first process() raised.)
        return (WorldBinding, ())

    def away(self, processor: object) -> bool:
        """Whether ``processor`` is being run in the middle of its world's
        ``esper.process()`` after a handler of that world switched to another world (see
        :func:`~ecs_spatial.delivery.left_by`; also before its first ``process()``): it is
        then to do nothing, its frame left to its next ``process()`` in its own world. O(1)
        while no handler left a world."""
        return left_by(processor, self.world)

    def current(self) -> bool:
        """Whether the database the processor last worked on (at its last :meth:`check`)
        is the current world's: a processor that follows it reads it only then."""
        return self._database is _database()

    def check(self, processor: object) -> bool:
        """Bind ``processor`` to the current world on its first call, and refuse to run in
        any other or from inside an event handler of this world; return whether the world's
        database is a new one since the last call (so ids may have been reused)."""
        world = esper.current_world
        returned(world)
        if delivering_in(world):
            raise RuntimeError(
                f"{type(processor).__name__}.process() was called from inside an event handler "
                f"in esper world {world!r}: events are being delivered; call esper.process() "
                "again after the handlers return"
            )
        if world != self.world:
            if self.world is not None:
                raise RuntimeError(
                    f"this {type(processor).__name__} serves esper world {self.world!r}, but "
                    f"process() ran in world {world!r}: give each world its own processors"
                )
            self.world = world
            self.order = next(_bindings)
            _bound[processor] = self
        database = _database()
        if database is self._database:
            return False
        fresh = self._database is None
        self._database = database
        return not fresh


def refuse_a_second(processor: object, kind: type, why: str) -> None:
    """Raise ``RuntimeError`` if another ``kind`` processor serves the current esper world
    and was bound to it before ``processor`` (call it after ``WorldBinding.check``): for the
    processors whose state would be duplicated, or fought over, by a second one. The one
    bound first keeps running. Complexity: a pass over the world's processors (a few)."""
    mine = _bound[processor]
    for other in _processors():
        if other is not processor and isinstance(other, kind):
            theirs = _bound.get(other)
            if theirs is not None and theirs.world == mine.world and theirs.order < mine.order:
                raise RuntimeError(
                    f"esper world {mine.world!r} has two {kind.__name__}s: {why}; remove one "
                    "(esper.remove_processor), or give each world its own"
                )


def source_current(source: object) -> bool:
    """Whether a follower may read ``source`` now: it has worked out a frame of the current
    world's database (after ``esper.clear_database``, or a world made again, it describes
    the old world until its next ``process()``, and the ids it names may be new entities').
    A source that is not a SpatialProcessor is taken to be current. O(1)."""
    binding = getattr(source, "_binding", None)
    return not isinstance(binding, WorldBinding) or binding.current()



class Follower:
    """The frame a follower (culling, proximity) works out behind what a raising handler left
    owed (``Outbox.run_frame``): the owed delivery's handlers may have replaced the database,
    so it is checked again, and nothing is read from a source that has not yet seen the
    current database (:func:`source_current`): only the exits queued are delivered then, and
    the next ``process()`` resynchronises. The follower gives ``spatial``, ``_outbox``,
    ``_check_database()`` and ``_work_out()``."""

    spatial: Any
    _outbox: Outbox

    def _check_database(self) -> None:
        raise NotImplementedError

    def _work_out(self) -> None:
        raise NotImplementedError

    def _after_owed(self) -> None:
        self._check_database()
        if source_current(self.spatial):
            self._work_out()
        else:
            self._outbox.deliver()

def refuse_shallow_copy(processor: object) -> None:
    """``__copy__`` of every processor: a shallow copy would share the original's index,
    pairs and tracked components, so that running one would change the other."""
    raise TypeError(
        f"a {type(processor).__name__} cannot be copied with copy.copy (the copy would share "
        "its state with the original); use copy.deepcopy or pickle for an independent one"
    )


_bindings = itertools.count(1)
#: Each processor's binding, from its first ``check``: how refuse_a_second finds the others'
#: without reading their attributes.
_bound: weakref.WeakKeyDictionary[object, WorldBinding] = weakref.WeakKeyDictionary()
