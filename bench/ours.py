"""ecs_spatial's own contenders, through its public API only: the QuadTree fed the frame's
moves each way a user can (``FEEDS``), its incremental pair search, and the world as an esper
game with its processors."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import esper

from bench.baselines import np, positions
from bench.harness import Ask, BoxT, Contender, IndexContender, Pair
from bench.world import Step, World
from ecs_spatial import AABB, Box, FrameTimings, Position, QuadTree, SpatialProcessor

_worlds = itertools.count(1)
#: How a QuadTree contender is handed the frame's moves. What a caller would keep (rows,
#: lists, buffers, numpy positions) is filled before the frame, untimed.
FEEDS = {
    "many": "move_many(ids, a generator of tuples over the world's lists, atomic=False)",
    "loop": "a loop of move(e, tuple) over the world's lists",
    "tuples": "a loop of move(e, (x0, y0, x1, y1)) over rows kept by the caller",
    "boxes": "a loop of move(e, Box(x0, y0, x1, y1)) over rows kept by the caller",
    "list": "move_many(ids, a list of tuples kept by the caller, atomic=False)",
    "buffers": "move_many(array('q') ids, array('d') coordinates, atomic=False)",
    "numpy": "move_many of an int64 id array and the numpy positions plus sizes (one vector "
    "add); the pairs as array('q') (find_all_intersections_array)",
}


def tuned_name(name: str, threshold: int) -> str:
    """A table name with its leaf capacity unless the default: ``"X (esper)"`` becomes
    ``"X (esper, threshold=64)"``."""
    if threshold == 16:
        return name
    return f"{name[:-1]}, threshold={threshold})" if name.endswith(")") else (
        f"{name} (threshold={threshold})")


class QuadTreeContender(IndexContender):
    """A ``QuadTree`` (``cls``: the compiled class, or the reference ``PyQuadTree``) built
    with the world's bounds by an ``insert`` per box or one ``insert_many`` (``bulk``); each
    frame ``remove`` the deleted, the moves by ``feed``, ``insert`` the created; the pairs as
    an ``array('q')`` (``find_all_intersections_array``) with ``array_pairs`` or the numpy
    feed."""

    ids: Any  # what ``before`` keeps for the feed, in the containers it takes
    rows: Any

    def __init__(self, name: str = "", *, cls: Any = QuadTree, threshold: int = 16,
                 feed: str = "many", bulk: bool = False, atomic: bool = False,
                 array_pairs: bool = False) -> None:
        if feed not in FEEDS:
            raise ValueError(f"feed must be one of {list(FEEDS)}, got {feed!r}")
        self.name = name or tuned_name(
            "ecs_spatial QuadTree" + (" (insert_many)" if bulk else ""), threshold)
        self.cls, self.threshold, self.feed, self.bulk, self.atomic = (
            cls, threshold, feed, bulk, atomic)
        self.note = FEEDS[feed]
        self.array_pairs = array_pairs or feed == "numpy"

    def fill(self, world: World) -> None:
        self.tree = tree = self.cls((0.0, 0.0, world.side, world.side), threshold=self.threshold)
        boxes = world.boxes()
        if self.bulk:
            tree.insert_many(boxes, boxes.values())
        else:
            for e, box in boxes.items():
                tree.insert(e, box)
        if self.feed == "numpy":
            self.order = world.ids()
            self.ids = np.array(self.order, dtype=np.int64)
            self.size = np.array([[0.0, 0.0, world.ws[e], world.hs[e]] for e in self.order])

    def before(self, world: World, step: Step) -> None:
        feed, moved = self.feed, step.moved
        if feed == "numpy":
            self.pos = positions(world, self.order)
        elif feed == "buffers":
            self.ids = array("q", moved)
            self.rows = array("d", [c for e in moved for c in world.box(e)])
        elif feed == "list":
            self.rows = [world.box(e) for e in moved]
        elif feed in ("tuples", "boxes"):
            self.rows = [(e, *world.box(e)) for e in moved]

    def update(self, world: World, step: Step) -> None:
        tree, feed, moved = self.tree, self.feed, step.moved
        for e in step.deleted:
            tree.remove(e)
        xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
        if feed == "many":
            tree.move_many(moved, ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved),
                           atomic=self.atomic)
        elif feed == "loop":
            move = tree.move
            for e in moved:
                x = xs[e]
                y = ys[e]
                move(e, (x, y, x + ws[e], y + hs[e]))
        elif feed == "tuples":
            move = tree.move
            for e, x0, y0, x1, y1 in self.rows:
                move(e, (x0, y0, x1, y1))
        elif feed == "boxes":
            move = tree.move
            for e, x0, y0, x1, y1 in self.rows:
                move(e, Box(x0, y0, x1, y1))
        elif feed == "numpy":
            tree.move_many(self.ids, self.pos + self.size, atomic=self.atomic)
        else:
            tree.move_many(self.ids if feed == "buffers" else moved, self.rows, atomic=self.atomic)
        for e in step.created:
            tree.insert(e, world.box(e))

    def pairs(self) -> Any:
        if self.array_pairs:
            return self.tree.find_all_intersections_array()
        return self.tree.find_all_intersections()

    def normal(self, raw: Any) -> list[Any]:
        if self.array_pairs and self.kind in ("pairs", "update"):
            return [sorted(zip(raw[0][0::2], raw[0][1::2], strict=True))]
        return super().normal(raw)

    def query(self, box: BoxT) -> list[int]:
        return self.tree.query(box)  # type: ignore[no-any-return]

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        return self.tree.query_radius(x, y, r)  # type: ignore[no-any-return]


class IncrementalContender(QuadTreeContender):
    """The QuadTree with the per-entity pair search every frame: last frame's pairs that
    involve none of the changed entities, plus ``find_intersections_for(changed)``. It forces
    that search, as ``SpatialProcessor.pair_search = "incremental"`` does: when it pays off
    is the library's decision (``pair_search = "auto"``), measured through esper."""

    def __init__(self, *, threshold: int = 16, name: str = "") -> None:
        super().__init__(name or tuned_name("ecs_spatial QuadTree (incremental pairs)",
                                            threshold), threshold=threshold)
        self.note += "; the pairs: last frame's, less the changed, + find_intersections_for"

    def fill(self, world: World) -> None:
        super().fill(world)
        self._pairs: list[Pair] = self.tree.find_all_intersections()
        self._step = Step([], [], [])

    def update(self, world: World, step: Step) -> None:
        super().update(world, step)
        self._step = step

    def pairs(self) -> list[Pair]:
        changed = self._step.moved + self._step.created
        stale = {*changed, *self._step.deleted}
        kept = [p for p in self._pairs if p[0] not in stale and p[1] not in stale]
        kept.extend(self.tree.find_intersections_for(changed))
        kept.sort()
        self._pairs = kept
        return kept


@dataclass(slots=True, eq=False)
class Velocity:
    """The user's own component: plain slots."""

    vx: float
    vy: float


@dataclass(slots=True, eq=False)
class SlotPosition:
    """A bare esper game's position: plain slots, no spatial layer (the overhead's baseline)."""

    x: float
    y: float


@dataclass(slots=True, eq=False)
class SlotAABB:
    """A bare esper game's box size: plain slots."""

    width: float
    height: float


class Movement(esper.Processor):
    """The user's movement processor: every entity with a Velocity moves and bounces off the
    world's edges by plain assignment to its position, with the world's own arithmetic (so
    that its boxes stay the world's)."""

    def __init__(self, side: float, position: type[Any], aabb: type[Any]) -> None:
        self.side, self.position, self.aabb = side, position, aabb

    def process(self, *args: Any, **kwargs: Any) -> None:
        side = self.side
        for _, (vel, pos, box) in esper.get_components(Velocity, self.position, self.aabb):
            x = pos.x + vel.vx
            if x < 0.0:
                x = -x
                vel.vx = -vel.vx
            else:
                lim = side - box.width
                if x > lim:
                    x = lim + lim - x
                    vel.vx = -vel.vx
            y = pos.y + vel.vy
            if y < 0.0:
                y = -y
                vel.vy = -vel.vy
            else:
                lim = side - box.height
                if y > lim:
                    y = lim + lim - y
                    vel.vy = -vel.vy
            pos.x = x
            pos.y = y


def nothing(a: int, b: int) -> None:
    """Every pair event's handler: does nothing, so that the figures are the delivery's own
    (one function: esper holds handlers weakly, and registering it twice adds nothing; two
    named arguments, not ``*args``, which would build a tuple a call)."""


def nothing_of(*args: int) -> None:
    """The same for events of any arity (views: one entity)."""


class InEsper(Contender):
    """A contender with an esper world of its own: ``enter()`` switches to it (made on first
    use), ``close()`` deletes it."""

    esper_name = ""

    def enter(self) -> None:
        self.esper_name = self.esper_name or f"bench-{next(_worlds)}"
        esper.switch_world(self.esper_name)

    def close(self) -> None:
        if self.esper_name in esper.list_worlds():
            esper.switch_world("default")
            esper.delete_world(self.esper_name)


class EsperGame(InEsper):
    """The world as an esper game: every box an entity with a position and a box
    (``Position`` and ``AABB``, or the classes given), moved with ``move_to`` to the world's
    positions (``movement="follow"``) or (``"velocity"``) by the user's ``Movement`` on a
    ``Velocity``, in ``advance``, ahead of every contender's timed frame; then a
    ``SpatialProcessor`` (``spatial``: its arguments; False: none, and nothing answered) and
    what ``setup`` adds (handlers, ``self.processors``). Phases: ``movement``, each
    processor by its class name, the SpatialProcessor's ``timings`` (``spatial.read`` ...).
    ``world``: a world of its own (not checked), run ``turn`` frames a turn after 3
    unmeasured, each phase the turn's median: worlds of different sizes in one run."""

    def __init__(self, name: str = "ecs_spatial SpatialProcessor (esper)", *,
                 spatial: dict[str, Any] | bool = True, movement: str = "follow",
                 setup: Callable[[EsperGame], None] | None = None,
                 extra: Callable[[int], list[object]] | None = None, world: World | None = None,
                 turn: int = 1, position: type[Any] = Position, aabb: type[Any] = AABB) -> None:
        if movement not in ("follow", "velocity"):
            raise ValueError(f"movement must be follow or velocity, got {movement!r}")
        self.name, self.movement, self.setup, self.extra = name, movement, setup, extra
        self.options = {} if spatial is True else spatial
        self.own, self.turn, self.position, self.aabb = world, turn, position, aabb
        self.exact = None if world is not None or spatial is False else True

    def build(self, world: World, ask: Ask) -> None:
        self.world = w = self.own or world
        self.kind, self.radius = ask.kind, ask.radius
        self.enter()
        self.positions: dict[int, Any] = {}
        self.processors: list[esper.Processor] = []
        self.spatial: SpatialProcessor | None = None
        self.mover = Movement(w.side, self.position, self.aabb)
        moving = set(w.moving) if self.movement == "velocity" else set()
        for e in w.ids():
            self._create(w, e, e in moving)
        if isinstance(self.options, dict):
            self.spatial = SpatialProcessor(Box(0.0, 0.0, w.side, w.side), **self.options)
            self.processors.append(self.spatial)
        if self.setup is not None:
            self.setup(self)
        for p in self.processors:
            p.process()  # the first insertion, untimed

    def _create(self, w: World, e: int, moving: bool) -> None:
        pos = self.position(w.xs[e], w.ys[e])
        made = esper.create_entity(pos, self.aabb(w.ws[e], w.hs[e]),
                                   *([Velocity(w.vxs[e], w.vys[e])] if moving else []),
                                   *(self.extra(e) if self.extra else []))
        if made != e:  # esper numbers entities from 1 in a fresh world, as World does
            raise RuntimeError(f"esper gave id {made} to world entity {e}")
        self.positions[e] = pos

    def advance(self) -> None:
        if self.movement == "velocity" and self.own is None:  # see the class docstring
            self.enter()
            t0 = self.clock()
            self.mover.process()
            self.phases["movement"] = self.clock() - t0

    def update(self, world: World, step: Step) -> None:
        self.enter()
        if self.own is None:
            self._frame(world, step, self.movement == "follow")
            return
        frames = []
        for _ in range(3 + self.turn):
            self.phases = {}
            self._frame(self.own, Step([], [], []), True)
            frames.append(self.phases)
        self.phases = {k: sorted(f[k] for f in frames[3:])[self.turn // 2] for k in frames[0]}

    def _frame(self, world: World, step: Step, move: bool) -> None:
        clock, phases, positions = self.clock, self.phases, self.positions
        t0 = clock()
        for e in step.deleted:
            esper.delete_entity(e, immediate=True)
            del positions[e]
        moving = set(world.moving) if step.created and self.movement == "velocity" else ()
        for e in step.created:
            self._create(world, e, e in moving)
        if move and self.movement == "velocity":
            self.mover.process()
        elif move:
            xs, ys = world.xs, world.ys
            for e in step.moved:
                positions[e].move_to(xs[e], ys[e])
        if move:
            phases["movement"] = clock() - t0
        for p in self.processors:
            t0 = clock()
            p.process()
            phases[type(p).__name__] = clock() - t0
        if self.spatial is not None:
            phases.update(zip((f"spatial.{f}" for f in FrameTimings._fields),
                              self.spatial.timings, strict=True))

    def answer(self, questions: list[Any]) -> Any:
        s, kind = self.spatial, self.kind
        if s is None:
            return None
        if kind == "view":
            return [s.query(Box(*box)) for box in questions]
        if kind == "radius":
            return [s.query_radius(x, y, self.radius) for x, y in questions]
        return [sorted(s.pairs)]
