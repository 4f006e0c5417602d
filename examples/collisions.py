"""Collisions: a few thousand boxes of mixed sizes bounce around an arena walled with static
boxes.

A box turns orange while it touches anything and flashes yellow on each new contact; both are
driven by collision handlers registered by component type with ``spatial.on_collision(Ball,
None, enter=..., exit=...)``, and the colour of a box's state reads its contacts with
``spatial.contacts(box)``: the example never tests a pair itself. Balls bounce off the walls
by a second registration, ``on_collision(Ball, Static, enter=bounce)``. The walls and pillars
are static entities (a Position and an AABB, never assigned to), and static entities cost
nothing per frame.

``F`` fires a volley of bullets from the centre, at 1,800 px/s: 30 px a frame, more than a
wall is thick. Each bullet holds a ``Continuous()`` component, so the processor sweeps its
motion between frames and reports a ``collision_swept`` event (``COLLISION_SWEPT``, with the
fraction ``t`` of the motion at the contact) for every box it passed through: a bullet that
went through a wall in one step is stopped there, never beyond it, and the balls it passed
through flash. The HUD counts the swept hits.

Controls:
    +  / -        add / remove 500 boxes
    F             fire a volley of bullets from the centre
    Q             show / hide the debug overlay (ecs_spatial.pyglet_debug): the quadtree's
                  nodes, every box by its contacts, the pairs
    Space         pause / resume
    mouse click   a burst of boxes at the cursor
    Esc           quit
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass
from typing import Any

import _scaffold
import esper
import pyglet
from pyglet import shapes

from ecs_spatial import (
    AABB,
    COLLISION_ENTER,
    COLLISION_EXIT,
    COLLISION_SWEPT,
    Box,
    Continuous,
    Position,
    SpatialProcessor,
)
from ecs_spatial.pyglet_debug import DebugOverlay

BACKGROUND = (18, 22, 30, 255)
FREE = (70, 130, 200)
TOUCHING = (255, 140, 30)
FLASH = (255, 236, 140)
WALL = (120, 124, 136)
BULLET = (250, 250, 250)

WALL_THICKNESS = 12.0
WALL_SEGMENT = 48.0
"""Walls are rows of separate static boxes, this long: many static entities, none of which
costs anything per frame once it is in the index."""
FLASH_FRAMES = 4
BATCH_SIZE = 500
BURST_SIZE = 60
VOLLEY = 24
BULLET_SPEED = 1800.0
"""Pixels per second: 30 px a frame at 60 Hz, so a bullet steps over a 12 px wall (and its
own 3 px) without ever overlapping it; only the sweep sees the wall."""
BULLET_SIZE = 3.0
LEAF_CAPACITY = 64
"""The tree's threshold: leaves of up to 64 boxes, not the default 16. This scene is dense and
its boxes (3 to 28 px) are large for the default's 60 x 37.5 px leaves, so a third of them
straddle a split line and are tested again in every leaf they reach; leaves of 120 x 75 px
measured faster (two copies of the scene alternated frame by frame; the figures:
docs/design.md#decisions). Tune it the same way for a scene of your own."""


@dataclass(slots=True)
class Velocity:
    """Pixels per second."""

    vx: float
    vy: float


class Static:
    """Marks walls and pillars. They have no Velocity, so nothing ever assigns to their
    Position: after the first frame the SpatialProcessor never looks at them again."""

    __slots__ = ()


class Ball:
    """Marks the bouncing boxes: the component type their collision handlers are
    registered for."""

    __slots__ = ()


class Bullet:
    """Marks the fast movers fired with F (they also hold a ``Continuous()``)."""

    __slots__ = ()


class MovementProcessor(esper.Processor):
    """Moves every entity with a Velocity. Assigning to the Position is all it takes: the
    component marks itself dirty and the SpatialProcessor reinserts it."""

    def process(self, dt: float) -> None:
        for _entity, (pos, vel) in esper.get_components(Position, Velocity):
            pos.x += vel.vx * dt
            pos.y += vel.vy * dt


# -- the world, without a window ---------------------------------------------------------------


def random_box(rng: random.Random) -> tuple[float, float]:
    """A mixed bag of sizes: mostly small boxes, some medium, a few large."""
    roll = rng.random()
    if roll < 0.70:
        return rng.uniform(3, 6), rng.uniform(3, 6)
    if roll < 0.95:
        return rng.uniform(6, 12), rng.uniform(6, 12)
    return rng.uniform(12, 28), rng.uniform(12, 28)


def create_mover(rng: random.Random, x: float, y: float, angle: float | None = None) -> int:
    """A box at (x, y) (its lower-left corner) heading in a random direction."""
    w, h = random_box(rng)
    speed = rng.uniform(30, 120)
    if angle is None:
        angle = rng.uniform(0, math.tau)
    return esper.create_entity(
        Position(x, y), AABB(w, h), Velocity(speed * math.cos(angle), speed * math.sin(angle)),
        Ball(),
    )


def create_bullet(x: float, y: float, angle: float) -> int:
    """A bullet at (x, y) (its lower-left corner) flying at ``BULLET_SPEED`` towards
    ``angle``, swept between frames (``Continuous()``)."""
    return esper.create_entity(
        Position(x, y), AABB(BULLET_SIZE, BULLET_SIZE),
        Velocity(BULLET_SPEED * math.cos(angle), BULLET_SPEED * math.sin(angle)),
        Bullet(), Continuous(),
    )


def build_walls(width: float, height: float) -> list[int]:
    """The arena's four walls and four pillars, as rows of static boxes."""
    t = WALL_THICKNESS
    walls: list[Box] = []

    def row(x0: float, y0: float, x1: float, y1: float) -> None:
        """Split the rectangle into boxes no longer than WALL_SEGMENT along its long side."""
        horizontal = (x1 - x0) >= (y1 - y0)
        length = (x1 - x0) if horizontal else (y1 - y0)
        n = max(1, math.ceil(length / WALL_SEGMENT))
        for i in range(n):
            a = i * length / n
            b = (i + 1) * length / n
            if horizontal:
                walls.append(Box(x0 + a, y0, x0 + b, y1))
            else:
                walls.append(Box(x0, y0 + a, x1, y0 + b))

    row(0, 0, width, t)  # bottom
    row(0, height - t, width, height)  # top
    row(0, t, t, height - t)  # left
    row(width - t, t, width, height - t)  # right
    pw, ph = width * 0.08, height * 0.06
    for fx, fy in ((0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7)):
        cx, cy = width * fx, height * fy
        row(cx - pw / 2, cy - ph / 2, cx + pw / 2, cy + ph / 2)
    return [
        esper.create_entity(Position(b.min_x, b.min_y), AABB(b.width, b.height), Static())
        for b in walls
    ]


def make_spatial(width: float, height: float) -> SpatialProcessor:
    """The scene's SpatialProcessor: the window as its bounds, leaves of ``LEAF_CAPACITY``,
    and the event kinds the scene handles (``collision`` every frame would go unused)."""
    return SpatialProcessor(
        Box(0, 0, width, height),
        threshold=LEAF_CAPACITY,
        events=(COLLISION_ENTER, COLLISION_EXIT, COLLISION_SWEPT),
    )


def box_of(e: int) -> Box:
    """The entity's box, from its Position and AABB."""
    pos = esper.component_for_entity(e, Position)
    box = esper.component_for_entity(e, AABB)
    return Box(pos.x, pos.y, pos.x + box.width, pos.y + box.height)


def bounce(e: int, wall: int) -> None:
    """Push the box out of the wall along the axis of least overlap and send it away (the
    ``enter`` handler of ``on_collision(Ball, Static)``: ``e`` holds the Ball)."""
    box, solid = box_of(e), box_of(wall)
    if not box.intersects(solid):
        return  # another wall of the same corner has pushed it out already
    pos = esper.component_for_entity(e, Position)
    vel = esper.component_for_entity(e, Velocity)
    push_left = box.max_x - solid.min_x
    push_right = solid.max_x - box.min_x
    push_down = box.max_y - solid.min_y
    push_up = solid.max_y - box.min_y
    dx = -push_left if push_left < push_right else push_right
    dy = -push_down if push_down < push_up else push_up
    if abs(dx) < abs(dy):
        pos.x += dx
        vel.vx = math.copysign(vel.vx, dx)
    else:
        pos.y += dy
        vel.vy = math.copysign(vel.vy, dy)


def free_spot(
    rng: random.Random, arena: Box, obstacles: list[Box], size: float = 36
) -> tuple[float, float]:
    """A point inside ``arena`` where a box of up to ``size`` overlaps none of ``obstacles``."""
    while True:
        x = rng.uniform(arena.min_x, arena.max_x - size)
        y = rng.uniform(arena.min_y, arena.max_y - size)
        spot = Box(x, y, x + size, y + size)
        if not any(spot.intersects(o) for o in obstacles):
            return x, y


# -- drawing many moving boxes ------------------------------------------------------------------


class BoxMesh:
    """Every moving box in one pyglet vertex list, drawn by pyglet's own shape shader.

    Why not a ``pyglet.shapes.Rectangle`` per box, as for the walls: each
    ``rect.position = ...`` goes through pyglet's attribute machinery, many times the cost
    of writing the same positions into one list (docs/design.md#decisions). The list holds
    six vertices (two triangles) per box, with the box's corners relative to its
    ``translation``, which is the entity's Position.

    Adding or removing boxes (rare: a key press, a click) only edits the Python-side arrays
    and rebuilds the vertex list at the next :meth:`sync`. A new colour too goes into the
    Python-side array at once and reaches the vertex list at the next :meth:`sync`: each
    access to ``vertex_list.colors`` maps a region of the buffer, several microseconds, and
    a few hundred boxes change colour a frame: one mapping a frame serves them all.
    """

    def __init__(self, batch: pyglet.graphics.Batch, order: int = 0) -> None:
        self.batch = batch
        self.program = shapes.get_default_shader()
        self.group = pyglet.graphics.ShaderGroup(self.program, order=order)
        self.slot: dict[int, int] = {}  # entity -> its index in the arrays below
        self.entities: list[int] = []
        self.positions: list[Position] = []  # the components themselves: read at each sync
        self.corners: list[float] = []  # 12 floats a box, relative to its position
        self.colors: list[int] = []  # 24 bytes a box: RGBA for each of its 6 vertices
        self.recoloured: set[int] = set()  # slots whose colour the vertex list lacks
        self.rgba: dict[tuple[int, int, int], tuple[int, ...]] = {}  # colour -> 24 bytes
        self.vertex_list: Any = None
        self.stale = True

    def __contains__(self, entity: object) -> bool:
        return entity in self.slot

    def __len__(self) -> int:
        return len(self.entities)

    def add(self, entity: int, pos: Position, width: float, height: float,
            color: tuple[int, int, int]) -> None:
        self.slot[entity] = len(self.entities)
        self.entities.append(entity)
        self.positions.append(pos)
        w, h = width, height
        self.corners += (0.0, 0.0, w, 0.0, w, h, 0.0, 0.0, w, h, 0.0, h)
        self.colors += (*color, 255) * 6
        self.stale = True

    def remove(self, entity: int) -> None:
        """Forget the box; the last box moves into its place, so the arrays stay packed."""
        i = self.slot.pop(entity)
        last = len(self.entities) - 1
        if i != last:
            moved = self.entities[last]
            self.entities[i] = moved
            self.positions[i] = self.positions[last]
            self.slot[moved] = i
            self.corners[i * 12:i * 12 + 12] = self.corners[last * 12:]
            self.colors[i * 24:i * 24 + 24] = self.colors[last * 24:]
        del self.entities[last], self.positions[last]
        del self.corners[last * 12:], self.colors[last * 24:]
        self.stale = True

    def set_color(self, entity: int, color: tuple[int, int, int]) -> None:
        """Give the box ``color``, on screen from the next :meth:`sync`."""
        rgba = self.rgba.get(color)
        if rgba is None:
            rgba = self.rgba[color] = (*color, 255) * 6
        slot = self.slot[entity]
        self.colors[slot * 24:slot * 24 + 24] = rgba
        self.recoloured.add(slot)

    def sync(self) -> None:
        """Copy every box's Position, and the new colours, into the vertex list (once a
        frame, before drawing)."""
        if self.stale:
            self._rebuild()  # from the Python-side arrays: every colour included
        elif self.recoloured:
            gpu = self.vertex_list.colors  # one mapping for all of this frame's new colours
            colors = self.colors
            for slot in self.recoloured:
                i = slot * 24
                gpu[i:i + 24] = colors[i:i + 24]
        self.recoloured.clear()
        if not self.positions:
            return
        out: list[float] = []
        extend = out.extend
        for pos in self.positions:
            x = pos.x
            y = pos.y
            extend((x, y, x, y, x, y, x, y, x, y, x, y))
        self.vertex_list.translation[:] = out

    def _rebuild(self) -> None:
        if self.vertex_list is not None:
            self.vertex_list.delete()
            self.vertex_list = None
        n = len(self.entities)
        if n:
            self.vertex_list = self.program.vertex_list(
                6 * n, pyglet.gl.GL_TRIANGLES, self.batch, self.group,
                position=("f", self.corners), colors=("Bn", self.colors),
                translation=("f", [0.0] * (12 * n)), rotation=("f", [0.0] * (6 * n)),
            )
        self.stale = False


# -- the scene ----------------------------------------------------------------------------------


class CollisionScene:
    """Builds the world and the shapes, and turns collision events into colours and bounces."""

    def __init__(self, app: _scaffold.App, boxes: int, fire_every: int = 0) -> None:
        self.app = app
        self.fire_every = fire_every
        self.rng = random.Random(app.args.seed)
        width, height = app.window.width, app.window.height
        self.arena = Box(WALL_THICKNESS, WALL_THICKNESS, width - WALL_THICKNESS,
                         height - WALL_THICKNESS)
        pyglet.gl.glClearColor(*(c / 255 for c in BACKGROUND))

        self.spatial = spatial = make_spatial(width, height)
        esper.add_processor(MovementProcessor(), priority=10)
        esper.add_processor(spatial, priority=5)
        app.time_processors(spatial)
        app.count_events(COLLISION_ENTER, COLLISION_EXIT, COLLISION_SWEPT)
        # Handlers by component type. The processor holds them strongly (unlike
        # esper.set_handler), and calls each with the first type's holder first.
        spatial.on_collision(Ball, None, enter=self.on_touch, exit=self.on_part)
        spatial.on_collision(Ball, Static, enter=bounce)
        spatial.on_collision(Bullet, Static, enter=self.stop_bullet)
        # A bound method of the scene, which the App keeps: esper holds handlers weakly.
        esper.set_handler(COLLISION_SWEPT, self.on_swept)
        app.window.push_handlers(self)  # on_mouse_press
        # The App holds its key commands strongly: lambdas are safe there.
        app.bind("+=", lambda: self.add_boxes(BATCH_SIZE))
        app.bind("-", lambda: self.remove_boxes(BATCH_SIZE))
        app.bind("fF", lambda: self.fire(VOLLEY))
        app.bind(" ", self.toggle_pause)

        self.batch = pyglet.graphics.Batch()
        self.wall_group = pyglet.graphics.Group(order=0)
        self.wall_rects: list[shapes.Rectangle] = []
        self.mesh = BoxMesh(self.batch, order=1)
        # Q: the debug overlay, over the walls and the boxes.
        self.overlay: DebugOverlay = app.debug_overlay(spatial, self.batch, order=2)
        self.movers: list[int] = []  # in creation order, so "-" removes the newest
        self.bullets: set[int] = set()  # in flight
        self.fired = 0
        self.swept_hits = 0  # collision_swept events
        self.stopped = 0  # bullets stopped by a wall
        self.volleys = 0
        self.flashing: dict[int, int] = {}  # mover -> the frame its flash ends
        self.recolour: set[int] = set()  # movers whose state changed this frame
        self.paused = False
        self.frame = 0

        self.walls = build_walls(width, height)
        self.wall_boxes = [box_of(e) for e in self.walls]
        self.static = set(self.walls)
        for e in self.walls:
            # Drawn inset by a pixel, so that the boxes a wall is made of show.
            b = box_of(e)
            self.wall_rects.append(shapes.Rectangle(
                b.min_x + 1, b.min_y + 1, b.width - 2, b.height - 2, color=WALL,
                batch=self.batch, group=self.wall_group,
            ))
        self.add_boxes(boxes)

    # -- entities ---------------------------------------------------------------------------
    def add_boxes(self, n: int, at: tuple[float, float] | None = None) -> None:
        """Create ``n`` moving boxes: anywhere free in the arena, or bursting out of ``at``."""
        for i in range(n):
            if at is None:
                x, y = free_spot(self.rng, self.arena, self.wall_boxes)
                e = create_mover(self.rng, x, y)
            else:
                e = create_mover(self.rng, at[0], at[1], angle=math.tau * i / n)
            self.movers.append(e)
            box = esper.component_for_entity(e, AABB)
            self.mesh.add(e, esper.component_for_entity(e, Position), box.width, box.height,
                          FREE)

    def fire(self, n: int) -> None:
        """A volley of ``n`` bullets from the centre of the arena, evenly spread (each
        volley turned a little from the last)."""
        cx, cy = self.arena.center
        turn = self.volleys * 0.37
        self.volleys += 1
        for i in range(n):
            e = create_bullet(cx, cy, math.tau * i / n + turn)
            self.bullets.add(e)
            self.mesh.add(e, esper.component_for_entity(e, Position), BULLET_SIZE,
                          BULLET_SIZE, BULLET)
        self.fired += n

    def stop_bullet(self, bullet: int, wall: int) -> None:
        """A bullet met a wall: it is gone (deleted at the next process())."""
        if bullet in self.bullets:
            self.bullets.discard(bullet)
            self.mesh.remove(bullet)
            esper.delete_entity(bullet)
            self.stopped += 1

    def remove_boxes(self, n: int) -> None:
        """Delete the ``n`` newest moving boxes (their exits arrive at the next process())."""
        for _ in range(min(n, len(self.movers))):
            e = self.movers.pop()
            esper.delete_entity(e)
            self.mesh.remove(e)
            self.flashing.pop(e, None)

    # -- events ---------------------------------------------------------------------------
    # The handlers run inside the SpatialProcessor: they only note that a box's state changed.
    # colour_of() turns state into colour, once a frame for each box noted
    # (recolour_changed), however many contacts it began or ended.

    def on_touch(self, ball: int, other: int) -> None:
        """A Ball began to touch something: flash it (and the other, if a Ball too)."""
        end = self.frame + FLASH_FRAMES
        for e in (ball, other):
            if e in self.mesh:  # not a wall, nor a box deleted since
                self.flashing[e] = end
                self.recolour.add(e)

    def on_part(self, ball: int, other: int) -> None:
        """A Ball stopped touching something: both may have no contact left."""
        self.recolour.add(ball)
        self.recolour.add(other)

    def on_swept(self, mover: int, other: int, t: float) -> None:
        """A bullet passed through a box between two frames, at ``t`` of its step (the
        events come by ``t``, so a wall's comes before those of anything behind it): a wall
        stops it, a ball it went through flashes."""
        self.swept_hits += 1
        if mover not in self.bullets:
            return  # stopped by a nearer wall in this same step
        if other in self.static:
            self.stop_bullet(mover, other)
        elif other in self.mesh and other not in self.bullets:
            self.flashing[other] = self.frame + FLASH_FRAMES
            self.recolour.add(other)

    def colour_of(self, e: int) -> tuple[int, int, int]:
        """A box's colour: flashing after a new contact, then orange while it touches
        anything, else blue."""
        if e in self.bullets:
            return BULLET
        if e in self.flashing:
            return FLASH
        return TOUCHING if self.spatial.contacts(e) else FREE

    def recolour_changed(self) -> None:
        """Give each box whose state changed this frame the colour of its state."""
        mesh = self.mesh
        for e in self.recolour:
            if e in mesh:  # not a wall, nor deleted since
                mesh.set_color(e, self.colour_of(e))
        self.recolour.clear()

    def touching(self) -> int:
        """How many moving boxes touch anything now (O(boxes): for the HUD and summary)."""
        contacts = self.spatial.contacts
        return sum(1 for e in self.movers if contacts(e))

    # -- input ------------------------------------------------------------------------------
    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        # Burst from a point inside the arena, clear of its walls.
        at_x = min(max(x, self.arena.min_x + 2), self.arena.max_x - 40)
        at_y = min(max(y, self.arena.min_y + 2), self.arena.max_y - 40)
        self.add_boxes(BURST_SIZE, at=(at_x, at_y))

    # -- the frame --------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if self.paused:
            return
        self.frame += 1
        if self.fire_every and self.frame % self.fire_every == 0:
            self.fire(VOLLEY)
        esper.process(dt)
        # Flashes that are over turn to the colour of the box's current state.
        if self.flashing:
            done = [e for e, end in self.flashing.items() if end <= self.frame]
            for e in done:
                del self.flashing[e]
            self.recolour.update(done)
        self.recolour_changed()
        self.app.stats.update(
            boxes=len(self.movers), static=len(self.walls), pairs=len(self.spatial.pairs),
            touching=self.touching(), bullets=len(self.bullets), fired=self.fired,
            swept_hits=self.swept_hits, stopped=self.stopped,
        )

    def draw(self) -> None:
        self.mesh.sync()  # the boxes follow their Positions
        self.batch.draw()

    def hud(self) -> str:
        state = "   PAUSED" if self.paused else ""
        nodes = (f"   quadtree nodes {self.overlay.counts['nodes'] // 4}"
                 if self.overlay.visible else "")
        return (
            f"Collisions{state}\n"
            f"{self.app.timing_text()}\n"
            f"entities {len(self.movers)} moving + {len(self.walls)} static"
            f"   pairs {len(self.spatial.pairs)}   touching {self.touching()}{nodes}\n"
            f"bullets {len(self.bullets)} in flight, {self.stopped} stopped by walls"
            f"   swept hits {self.swept_hits}\n"
            "+/- boxes   F fire   Q debug overlay   Space pause   click burst"
        )


def create(argv: list[str] | None = None) -> CollisionScene:
    """Parse the command line, open the window and build the scene (tests start here)."""
    p = _scaffold.parser(__doc__)
    p.add_argument("--boxes", type=int, default=2000, help="moving boxes (default: 2000)")
    p.add_argument("--overlay", action="store_true",
                   help="start with the debug overlay shown (as the Q key does)")
    p.add_argument("--fire-every", type=int, default=0, metavar="FRAMES",
                   help="fire a volley every FRAMES frames, as the F key does (default: never)")
    args = _scaffold.parse_args(p, argv)
    if args.fire_every < 0:
        p.error("--fire-every must be 0 (never) or more")
    app = _scaffold.App("collisions", args, "ecs_spatial: collisions")
    scene = CollisionScene(app, args.boxes, args.fire_every)
    if args.overlay:
        scene.overlay.visible = True
    return scene


def main(argv: list[str] | None = None) -> int:
    scene = create(argv)
    return scene.app.run(scene)


if __name__ == "__main__":
    sys.exit(main())
