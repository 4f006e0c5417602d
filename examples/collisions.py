"""Collisions: a few thousand boxes of mixed sizes bounce around an arena walled with static
boxes.

A box turns orange while it touches anything and flashes yellow on each new contact; both are
driven by the SpatialProcessor's "collision_enter" / "collision_exit" events, the example never
tests a pair itself. Boxes bounce off the walls in the same enter handler. The walls and
pillars are static entities (a Position and an AABB, never assigned to), and static entities
cost nothing per frame.

Controls:
    +  / -        add / remove 500 boxes
    Q             show / hide the quadtree's nodes (from index.nodes())
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
    Box,
    Position,
    SpatialProcessor,
)

BACKGROUND = (18, 22, 30, 255)
FREE = (70, 130, 200)
TOUCHING = (255, 140, 30)
FLASH = (255, 236, 140)
WALL = (120, 124, 136)
NODE = (60, 220, 120, 110)

WALL_THICKNESS = 12.0
WALL_SEGMENT = 48.0
"""Walls are rows of separate static boxes, this long: many static entities, none of which
costs anything per frame once it is in the index."""
FLASH_FRAMES = 4
BATCH_SIZE = 500
BURST_SIZE = 60
OVERLAY_REFRESH_FRAMES = 6
"""The quadtree overlay is rebuilt 10 times a second: rebuilding a few hundred outlines every
frame would cost more than the spatial processor itself."""
LEAF_CAPACITY = 64
"""The tree's threshold: leaves of up to 64 boxes, not the default 16. This scene is dense and
its boxes (3 to 28 px) are large for the default's 60 x 37.5 px leaves, so a third of them
straddle a split line and are tested again in every leaf they reach. Leaves of 120 x 75 px
took 12% off the processor's time per frame (two copies of the scene alternated frame by
frame, 300 frames, medians; 128 gave 9%) and 7% off its instructions (callgrind, 40.7M to
37.9M a frame). Tune it the same way for a scene of your own."""


@dataclass(slots=True)
class Velocity:
    """Pixels per second."""

    vx: float
    vy: float


class Static:
    """Marks walls and pillars. They have no Velocity, so nothing ever assigns to their
    Position: after the first frame the SpatialProcessor never looks at them again."""

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
        Position(x, y), AABB(w, h), Velocity(speed * math.cos(angle), speed * math.sin(angle))
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
    and the two event kinds the scene handles (``collision`` every frame would go unused)."""
    return SpatialProcessor(
        Box(0, 0, width, height),
        threshold=LEAF_CAPACITY,
        events=(COLLISION_ENTER, COLLISION_EXIT),
    )


def box_of(e: int) -> Box:
    """The entity's box, from its Position and AABB."""
    pos = esper.component_for_entity(e, Position)
    box = esper.component_for_entity(e, AABB)
    return Box(pos.x, pos.y, pos.x + box.width, pos.y + box.height)


def bounce(e: int, wall: int) -> None:
    """Push the box out of the wall along the axis of least overlap and send it away."""
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
    ``rect.position = ...`` goes through pyglet's attribute machinery, and moving 2,000
    Rectangles costs about 10 ms of CPU a frame here; writing the same 2,000 positions into
    one list costs about 0.9 ms. The list holds six vertices (two triangles) per box, with the
    box's corners relative to its ``translation``, which is the entity's Position.

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

    def __init__(self, app: _scaffold.App, boxes: int) -> None:
        self.app = app
        self.rng = random.Random(app.args.seed)
        width, height = app.window.width, app.window.height
        self.arena = Box(WALL_THICKNESS, WALL_THICKNESS, width - WALL_THICKNESS,
                         height - WALL_THICKNESS)
        pyglet.gl.glClearColor(*(c / 255 for c in BACKGROUND))

        self.spatial = make_spatial(width, height)
        esper.add_processor(MovementProcessor(), priority=10)
        esper.add_processor(self.spatial, priority=5)
        app.time_processors(self.spatial)
        app.count_events(COLLISION_ENTER, COLLISION_EXIT)
        # Bound methods of an object the scene keeps: esper holds handlers weakly, so a
        # lambda would be dropped at once.
        esper.set_handler(COLLISION_ENTER, self.on_collision_enter)
        esper.set_handler(COLLISION_EXIT, self.on_collision_exit)
        app.window.push_handlers(self)  # on_mouse_press
        # The App holds its key commands strongly: lambdas are safe there.
        app.bind("+=", lambda: self.add_boxes(BATCH_SIZE))
        app.bind("-", lambda: self.remove_boxes(BATCH_SIZE))
        app.bind("qQ", self.toggle_overlay)
        app.bind(" ", self.toggle_pause)

        self.batch = pyglet.graphics.Batch()
        self.wall_group = pyglet.graphics.Group(order=0)
        self.overlay_group = pyglet.graphics.Group(order=2)
        self.wall_rects: list[shapes.Rectangle] = []
        self.mesh = BoxMesh(self.batch, order=1)
        self.movers: list[int] = []  # in creation order, so "-" removes the newest
        self.contacts: dict[int, int] = {}  # mover -> how many things it touches now
        self.flashing: dict[int, int] = {}  # mover -> the frame its flash ends
        self.recolour: set[int] = set()  # movers whose state changed this frame
        self.paused = False
        self.overlay: list[shapes.Box] | None = None
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

    def remove_boxes(self, n: int) -> None:
        """Delete the ``n`` newest moving boxes (their exits arrive at the next process())."""
        for _ in range(min(n, len(self.movers))):
            e = self.movers.pop()
            esper.delete_entity(e)
            self.mesh.remove(e)
            self.contacts.pop(e, None)
            self.flashing.pop(e, None)

    # -- events -----------------------------------------------------------------------------
    # The handlers run inside the SpatialProcessor: they only keep each box's state and note
    # that it changed. colour_of() turns state into colour, once a frame for each box noted
    # (recolour_changed), however many contacts it began or ended.

    def on_collision_enter(self, a: int, b: int) -> None:
        """Count the contact, flash both boxes, and bounce a box off a wall it hit."""
        movers = self.mesh.slot
        for e, other in ((a, b), (b, a)):
            if e not in movers:
                continue  # a wall, or a box deleted since this frame's events were found
            self.contacts[e] = self.contacts.get(e, 0) + 1
            self.flashing[e] = self.frame + FLASH_FRAMES
            self.recolour.add(e)
            if other in self.static:
                bounce(e, other)

    def on_collision_exit(self, a: int, b: int) -> None:
        """Uncount the contact; a box that touches nothing any more turns back to blue."""
        contacts = self.contacts
        for e in (a, b):
            left = contacts.get(e)
            if left is None:
                continue  # a wall
            if left > 1:
                contacts[e] = left - 1
            else:
                del contacts[e]
                self.recolour.add(e)

    def colour_of(self, e: int) -> tuple[int, int, int]:
        """A box's colour: flashing after a new contact, then orange while it touches
        anything, else blue."""
        if e in self.flashing:
            return FLASH
        return TOUCHING if e in self.contacts else FREE

    def recolour_changed(self) -> None:
        """Give each box whose state changed this frame the colour of its state."""
        mesh = self.mesh
        for e in self.recolour:
            if e in mesh:  # not deleted since
                mesh.set_color(e, self.colour_of(e))
        self.recolour.clear()

    # -- input ------------------------------------------------------------------------------
    def toggle_pause(self) -> None:
        self.paused = not self.paused

    def on_mouse_press(self, x: int, y: int, button: int, modifiers: int) -> None:
        # Burst from a point inside the arena, clear of its walls.
        at_x = min(max(x, self.arena.min_x + 2), self.arena.max_x - 40)
        at_y = min(max(y, self.arena.min_y + 2), self.arena.max_y - 40)
        self.add_boxes(BURST_SIZE, at=(at_x, at_y))

    def toggle_overlay(self) -> None:
        if self.overlay is None:
            self.overlay = []
            self._refresh_overlay()
        else:
            for outline in self.overlay:
                outline.delete()
            self.overlay = None

    def _refresh_overlay(self) -> None:
        assert self.overlay is not None
        for outline in self.overlay:
            outline.delete()
        self.overlay = [
            shapes.Box(
                node.box.min_x, node.box.min_y, node.box.width, node.box.height,
                thickness=1, color=NODE, batch=self.batch, group=self.overlay_group,
            )
            for node in self.spatial.index.nodes()
        ]

    # -- the frame --------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        if self.paused:
            return
        self.frame += 1
        esper.process(dt)
        # Flashes that are over turn to the colour of the box's current state.
        if self.flashing:
            done = [e for e, end in self.flashing.items() if end <= self.frame]
            for e in done:
                del self.flashing[e]
            self.recolour.update(done)
        self.recolour_changed()
        if self.overlay is not None and self.frame % OVERLAY_REFRESH_FRAMES == 0:
            self._refresh_overlay()
        self.app.stats.update(
            boxes=len(self.movers), static=len(self.walls), pairs=len(self.spatial.pairs),
            touching=len(self.contacts),
        )

    def draw(self) -> None:
        self.mesh.sync()  # the boxes follow their Positions
        self.batch.draw()

    def hud(self) -> str:
        state = "   PAUSED" if self.paused else ""
        nodes = f"   quadtree nodes {len(self.overlay)}" if self.overlay is not None else ""
        return (
            f"Collisions{state}\n"
            f"{self.app.timing_text()}\n"
            f"entities {len(self.movers)} moving + {len(self.walls)} static"
            f"   pairs {len(self.spatial.pairs)}   touching {len(self.contacts)}{nodes}\n"
            "+/- boxes   Q quadtree   Space pause   click burst"
        )


def create(argv: list[str] | None = None) -> CollisionScene:
    """Parse the command line, open the window and build the scene (tests start here)."""
    p = _scaffold.parser(__doc__)
    p.add_argument("--boxes", type=int, default=2000, help="moving boxes (default: 2000)")
    p.add_argument("--quadtree", action="store_true",
                   help="start with the quadtree overlay shown (as the Q key does)")
    args = _scaffold.parse_args(p, argv)
    app = _scaffold.App("collisions", args, "ecs_spatial: collisions")
    scene = CollisionScene(app, args.boxes)
    if args.quadtree:
        scene.toggle_overlay()
    return scene


def main(argv: list[str] | None = None) -> int:
    scene = create(argv)
    return scene.app.run(scene)


if __name__ == "__main__":
    sys.exit(main())
