"""Camera: culling a world far larger than the window.

A 10,000 x 10,000 world holds 100,000 entities: stars and rocks that never move, and ships
that fly about. Only what the CullingProcessor reports visible is drawn: on "view_enter" an
entity takes a quad from a pool, one slot of a vertex list that holds every quad (made
ready at the start for the widest view), and on "view_exit" it hands it back, so the
renderer's work follows what is on screen, never the size of the world, and a zoom out that
brings thousands of entities into view at once costs a few milliseconds. The minimap shows
the whole world coarsely (how many stars and rocks each patch holds, and where the ships
are) and the camera's view on it. Until you touch a control the camera flies a tour on its
own: a figure of eight over the middle of the world, zooming out to the widest view and in
to the closest.

F5 saves the game in memory and F9 loads it back: the world with its processors
(``ecs_spatial.saving``: ``save_world()`` then ``restore_world(state)``, in one pickle with
the camera), so that after a load the ships fly on exactly as they did after the save, and
the CullingProcessor carries on from the view it had, with no event repeated.

Controls:
    arrows / WASD   pan
    mouse drag      pan
    mouse wheel     zoom (about the cursor)
    Q               show / hide the debug overlay (ecs_spatial.pyglet_debug) of what is in
                    view: the quadtree's nodes, every box by its contacts, and the pairs
    F5 / F9         save / load the game (in memory)
    Esc             quit
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import _scaffold
import esper
import pyglet
from pyglet import shapes
from pyglet.math import Mat4, Vec3

from ecs_spatial import (
    AABB,
    VIEW_ENTER,
    VIEW_EXIT,
    Box,
    CullingProcessor,
    Position,
    SpatialProcessor,
)

BACKGROUND = (6, 8, 18, 255)
STAR_COLORS = [(200, 210, 255), (255, 240, 200), (170, 190, 255), (255, 210, 170)]
ROCK_COLORS = [(110, 90, 80), (90, 100, 110), (120, 110, 90)]
SHIP = (80, 255, 160)
MINIMAP = 0.28  # the minimap's side, as a share of the window's height
MINIMAP_REFRESH_FRAMES = 10
"""The ships on the minimap are counted again every 10 frames (6 times a second), not every
frame: a count walks every ship, so a tenth of it a frame (the figures:
docs/design.md#decisions)."""
MINIMAP_EMPTY = (20, 24, 40)
MINIMAP_DENSE = (75, 85, 130)
MINIMAP_FRAME = (120, 130, 160)
MINIMAP_VIEW = (255, 220, 80)
MIN_ZOOM, MAX_ZOOM = 0.4, 4.0
PAN_SPEED = 600.0  # screen pixels per second
TOUR_ZOOM_PERIOD = 12.0
"""Seconds the tour takes to zoom out to MIN_ZOOM, in to MAX_ZOOM and back."""


@dataclass(slots=True)
class Look:
    """How an entity is drawn when it is visible."""

    color: tuple[int, int, int]


@dataclass(slots=True)
class Velocity:
    vx: float
    vy: float


class ShipProcessor(esper.Processor):
    """Flies the ships and turns them back at the edges of the world."""

    def __init__(self, world: Box) -> None:
        self.world = world

    def process(self, dt: float) -> None:
        world = self.world
        for _e, (pos, vel) in esper.get_components(Position, Velocity):
            x = pos.x + vel.vx * dt
            y = pos.y + vel.vy * dt
            if not world.min_x <= x <= world.max_x:
                vel.vx = -vel.vx
                x = min(max(x, world.min_x), world.max_x)
            if not world.min_y <= y <= world.max_y:
                vel.vy = -vel.vy
                y = min(max(y, world.min_y), world.max_y)
            pos.x = x
            pos.y = y


def build_world(rng: random.Random, world: Box, n: int, moving_share: float) -> None:
    """``n`` entities scattered over ``world``: about ``moving_share`` of them ships, the rest
    stars (small) and rocks (larger), all static. Needs no window."""
    uniform = rng.uniform
    for _ in range(n):
        x = uniform(world.min_x, world.max_x)
        y = uniform(world.min_y, world.max_y)
        roll = rng.random()
        if roll < moving_share:
            speed = uniform(40, 160)
            angle = uniform(0, math.tau)
            esper.create_entity(
                Position(x, y), AABB.centered(10, 10), Look(SHIP),
                Velocity(speed * math.cos(angle), speed * math.sin(angle)),
            )
        elif roll < 0.95:
            s = uniform(2, 5)
            esper.create_entity(Position(x, y), AABB.centered(s, s), Look(rng.choice(STAR_COLORS)))
        else:
            esper.create_entity(
                Position(x, y), AABB.centered(uniform(10, 40), uniform(10, 40)),
                Look(rng.choice(ROCK_COLORS)),
            )


class Camera:
    """A point of the world at the centre of the window, and a zoom (screen px per world px)."""

    def __init__(self, x: float, y: float, width: int, height: int) -> None:
        self.x, self.y, self.zoom = x, y, 1.0
        self.width, self.height = width, height

    def view(self) -> Box:
        """The part of the world in the window: the CullingProcessor calls this every frame."""
        hw = self.width / 2 / self.zoom
        hh = self.height / 2 / self.zoom
        return Box(self.x - hw, self.y - hh, self.x + hw, self.y + hh)

    def matrix(self) -> Mat4:
        """World to window coordinates, for ``window.view``."""
        return Mat4.from_translation(Vec3(self.width / 2, self.height / 2, 0)) @ (
            Mat4.from_scale(Vec3(self.zoom, self.zoom, 1))
            @ Mat4.from_translation(Vec3(-self.x, -self.y, 0))
        )

    def to_world(self, sx: float, sy: float) -> tuple[float, float]:
        return (
            self.x + (sx - self.width / 2) / self.zoom,
            self.y + (sy - self.height / 2) / self.zoom,
        )


class Minimap:
    """The whole world in a square of the HUD, one texel a screen pixel: darker or brighter
    as the patch of the world under it holds fewer or more stars and rocks, green where a ship
    is; and the camera's view as a rectangle.

    The stars and rocks are one texture (one quad to draw, however many entities), counted
    and uploaded once, when the minimap is built; the ships are counted again at each
    :meth:`refresh`, and drawn over it as a :class:`ViewMesh` of one-pixel quads, one for each
    texel that holds a ship. Not by uploading the texture again: an upload into a texture
    makes the renderer finish every frame in flight first, a wait many times the count's own
    work (docs/design.md#decisions). It reads positions from esper, not from the index:
    it wants every entity, not what a query would find.
    """

    def __init__(self, world: Box, batch: pyglet.graphics.Batch, x: float, y: float,
                 side: int) -> None:
        self.world = world
        self.x, self.y, self.side = x, y, side
        self.static_counts = [0] * (side * side)
        self.ship_counts = [0] * (side * side)
        ships = {e for e, _vel in esper.get_component(Velocity)}
        counts = self.static_counts
        for e, cell in self._cells(esper.get_component(Position)):
            if e not in ships:
                counts[cell] += 1
        # A texel twice as full as the average one is drawn in the brightest colour.
        full = 2.0 * max(sum(counts), 1) / len(counts)
        palette = [
            bytes((*_scaffold.lerp_color((MINIMAP_EMPTY, MINIMAP_DENSE), n / full), 255))
            for n in range(max(counts) + 1)
        ]
        static = pyglet.image.ImageData(side, side, "RGBA",
                                        b"".join([palette[n] for n in counts]))
        self.sprite = pyglet.sprite.Sprite(static.get_texture(), x, y, batch=batch,
                                           group=pyglet.graphics.Group(order=2))
        self.dots = ViewMesh(batch, capacity=256, order=3)  # texel -> its ship dot
        over = pyglet.graphics.Group(order=4)
        self.outline = shapes.Box(x, y, side, side, thickness=1, color=MINIMAP_FRAME,
                                  batch=batch, group=over)
        self.view = shapes.Box(x, y, 1, 1, thickness=1, color=MINIMAP_VIEW, batch=batch,
                               group=over)
        self.refresh()

    def _cells(self, positions: Iterable[tuple[int, Position]]) -> Iterator[tuple[int, int]]:
        """(entity, the index of its texel) for each (entity, Position), texels row by row
        from the bottom; a point outside the world counts in the nearest texel at its edge."""
        world, n = self.world, self.side
        x0, y0 = world.min_x, world.min_y
        sx, sy = n / world.width, n / world.height
        last = n - 1
        for e, pos in positions:
            i = min(max(int((pos.x - x0) * sx), 0), last)
            j = min(max(int((pos.y - y0) * sy), 0), last)
            yield e, j * n + i

    def counts(self) -> list[int]:
        """How many entities each texel stands for (as of the last refresh)."""
        return [a + b for a, b in zip(self.static_counts, self.ship_counts, strict=True)]

    def refresh(self) -> None:
        """Count the ships again and move the dots: one on each texel that holds a ship."""
        n = self.side
        ships = self.ship_counts = [0] * (n * n)
        moving = ((e, pos) for e, (pos, _vel) in esper.get_components(Position, Velocity))
        for _e, cell in self._cells(moving):
            ships[cell] += 1
        dots = self.dots
        for cell in [c for c in dots.slot if not ships[c]]:
            dots.remove(cell)
        x, y = self.x, self.y
        for cell, count in enumerate(ships):
            if count and cell not in dots:
                i, j = cell % n, cell // n
                dots.add(cell, Box(x + i, y + j, x + i + 1, y + j + 1), SHIP)
        dots.sync()

    def show_view(self, view: Box) -> None:
        """Draw the camera's view where it is in the world (cut to the minimap's square)."""
        world = self.world
        sx, sy = self.side / world.width, self.side / world.height
        x0 = (max(view.min_x, world.min_x) - world.min_x) * sx
        y0 = (max(view.min_y, world.min_y) - world.min_y) * sy
        x1 = (min(view.max_x, world.max_x) - world.min_x) * sx
        y1 = (min(view.max_y, world.max_y) - world.min_y) * sy
        self.view.position = (self.x + x0, self.y + y0)
        self.view.width = max(x1 - x0, 2)
        self.view.height = max(y1 - y0, 2)


class ViewMesh:
    """The quads of everything in view, in one pyglet vertex list drawn by pyglet's own
    shape shader: a pool of slots, one quad (two triangles, six vertices) each.

    Why not a ``pyglet.shapes.Rectangle`` per entity: making, showing or hiding one goes
    through pyglet's attribute machinery, so a zoom out that brings thousands of entities
    into view stalled the handlers for frames (docs/design.md#decisions). Here :meth:`add`
    and :meth:`remove` write a slot's corners and colour into Python lists (a free slot is a
    quad of zero size, drawn as nothing), and :meth:`sync` copies the span of slots that
    changed into the vertex list once a frame. The pool is made ready up front for the
    widest view (:meth:`reserve`); it doubles if a view ever holds more.
    """

    def __init__(self, batch: pyglet.graphics.Batch, capacity: int = 1024,
                 order: int = 0) -> None:
        self.batch = batch
        self.program = shapes.get_default_shader()
        self.group = pyglet.graphics.ShaderGroup(self.program, order=order)
        self.slot: dict[int, int] = {}  # entity -> its slot
        self.free: list[int] = []
        self.corners: list[float] = []  # 12 floats a slot, world coordinates
        self.colors: list[int] = []  # 24 bytes a slot: RGBA for each of its 6 vertices
        self.rgba: dict[tuple[int, int, int], tuple[int, ...]] = {}  # colour -> 24 bytes
        self.vertex_list: Any = None
        self.changed = (0, 0)  # the span of slots [lo, hi) the vertex list lacks
        self.reserve(capacity)
        self.grown = 0  # times a full pool doubled

    @property
    def capacity(self) -> int:
        return len(self.corners) // 12

    def __contains__(self, entity: object) -> bool:
        return entity in self.slot

    def __len__(self) -> int:
        return len(self.slot)

    def reserve(self, capacity: int) -> None:
        """Have at least ``capacity`` slots (the new ones free); the vertex list is made
        again at the next :meth:`sync`."""
        old = self.capacity
        if capacity <= old:
            return
        self.corners += [0.0] * (12 * (capacity - old))
        self.colors += [0] * (24 * (capacity - old))
        self.free.extend(range(capacity - 1, old - 1, -1))  # the lowest slots first
        if self.vertex_list is not None:
            self.vertex_list.delete()
            self.vertex_list = None

    def add(self, entity: int, box: Box, color: tuple[int, int, int]) -> None:
        """Draw ``box`` for ``entity`` from the next :meth:`sync`."""
        if not self.free:
            self.reserve(2 * self.capacity)
            self.grown += 1
        i = self.free.pop()
        self.slot[entity] = i
        self.place(i, box)
        rgba = self.rgba.get(color)
        if rgba is None:
            rgba = self.rgba[color] = (*color, 255) * 6
        self.colors[i * 24:i * 24 + 24] = rgba

    def place(self, i: int, box: Box) -> None:
        """Put slot ``i``'s quad on ``box``."""
        x0, y0, x1, y1 = box
        self.corners[i * 12:i * 12 + 12] = (x0, y0, x1, y0, x1, y1, x0, y0, x1, y1, x0, y1)
        lo, hi = self.changed
        self.changed = (i, i + 1) if lo == hi else (min(lo, i), max(hi, i + 1))

    def remove(self, entity: int) -> None:
        """Stop drawing the entity: its slot goes back to the pool."""
        i = self.slot.pop(entity)
        self.corners[i * 12:i * 12 + 12] = _NOTHING
        lo, hi = self.changed
        self.changed = (i, i + 1) if lo == hi else (min(lo, i), max(hi, i + 1))
        self.free.append(i)

    def sync(self) -> None:
        """Bring the vertex list up to date (once a frame, before drawing)."""
        if self.vertex_list is None:
            n = self.capacity
            self.vertex_list = self.program.vertex_list(
                6 * n, pyglet.gl.GL_TRIANGLES, self.batch, self.group,
                position=("f", self.corners), colors=("Bn", self.colors),
                translation=("f", [0.0] * (12 * n)), rotation=("f", [0.0] * (6 * n)),
            )
        else:
            lo, hi = self.changed
            if lo == hi:
                return
            self.vertex_list.position[lo * 12:hi * 12] = self.corners[lo * 12:hi * 12]
            self.vertex_list.colors[lo * 24:hi * 24] = self.colors[lo * 24:hi * 24]
        self.changed = (0, 0)


_NOTHING = (0.0,) * 12  # a quad of zero size: a free slot


class CameraScene:
    """The world, the camera, the pool of quads and the minimap."""

    def __init__(self, app: _scaffold.App, entities: int, moving_share: float,
                 world_size: float, zoom: float = 1.0) -> None:
        self.app = app
        self.world = Box(0, 0, world_size, world_size)
        pyglet.gl.glClearColor(*(c / 255 for c in BACKGROUND))
        # Building a world of 100,000 takes a second or two: say so, rather than a black
        # window.
        app.show_status(f"Camera: building a world of {entities:,} entities...")
        build_world(random.Random(app.args.seed), self.world, entities, moving_share)
        self.total = entities

        w, h = app.window.width, app.window.height
        self.camera = Camera(world_size / 2, world_size / 2, w, h)
        self.camera.zoom = min(max(zoom, MIN_ZOOM), MAX_ZOOM)
        # Where in its zoom cycle the tour begins: at the initial zoom, zooming out.
        self.tour_phase = math.pi - math.asin(
            2.0 * math.log(self.camera.zoom / MIN_ZOOM) / math.log(MAX_ZOOM / MIN_ZOOM) - 1.0
        )
        self.autopilot = True
        self.time = 0.0

        # This scene asks the index only what is in view: no collision events wanted.
        self.spatial = SpatialProcessor(self.world, events=())
        # The bound method is the view: the processor asks for the box each frame.
        self.culling = CullingProcessor(self.spatial, self.camera.view)
        esper.add_processor(ShipProcessor(self.world), priority=10)
        esper.add_processor(self.spatial, priority=5)
        esper.add_processor(self.culling, priority=0)
        # The index is built while the world is (0.7 s for 100,000 boxes), so that the first
        # frame is a frame like the others.
        self.spatial.process()
        app.time_processors(self.spatial, self.culling)
        app.count_events(VIEW_ENTER, VIEW_EXIT)
        # Set through the App, which keeps them and counts their time in the HUD's events.
        app.on(VIEW_ENTER, self.on_view_enter)
        app.on(VIEW_EXIT, self.on_view_exit)

        self.batch = pyglet.graphics.Batch()
        # Q: the debug overlay, drawn in the camera's view with the scene's batch, of what is
        # in view only (it asks for the camera's box at each update), so its cost follows
        # the view, not the world. The tree's nodes too, since index.nodes(view) lists only
        # those in view (docs/design.md#decisions). No casts: the scene makes none.
        self.overlay = app.debug_overlay(self.spatial, self.batch, order=10,
                                         view=self.camera.view,
                                         layers=("nodes", "boxes", "pairs"))
        # The pool of quads, ready for the widest view (the entities per unit of area, over
        # the view's area at the smallest zoom, and a margin: a view at the edge of a denser
        # patch holds more).
        widest = (w / MIN_ZOOM) * (h / MIN_ZOOM) * entities / self.world.area
        self.mesh = ViewMesh(self.batch, capacity=round(1.5 * widest) + 64)
        self.shown = self.mesh.slot  # visible entity -> its slot
        self.moving_shown: set[int] = set()  # visible ships: their quads follow them

        self.keys = pyglet.window.key.KeyStateHandler()
        # Two pushes: handlers pushed together share one level, where the second on_key_press
        # would replace the first.
        app.window.push_handlers(self.keys)
        app.window.push_handlers(self)
        side = round(h * MINIMAP)
        self.minimap = Minimap(self.world, app.hud_batch, w - side - 10, 10, side)
        self.frame = 0
        self.saved: bytes | None = None
        self.saved_at: int | None = None  # the frame of the save
        self.loads = 0

    # -- quads follow the culling events ----------------------------------------------------
    def on_view_enter(self, e: int) -> None:
        """Give the entity a quad from the pool, on its box as the index holds it (the
        SpatialProcessor ran before the culling: the box of this frame)."""
        self.mesh.add(e, self.spatial.index[e], esper.component_for_entity(e, Look).color)
        if esper.has_component(e, Velocity):
            self.moving_shown.add(e)

    def on_view_exit(self, e: int) -> None:
        """Hand the entity's quad back to the pool."""
        self.mesh.remove(e)
        self.moving_shown.discard(e)

    # -- input ------------------------------------------------------------------------------
    def on_key_press(self, symbol: int, modifiers: int) -> bool | None:
        key = pyglet.window.key
        if symbol == key.F5:
            self.save()
        elif symbol == key.F9:
            self.load()
        else:
            if symbol in (key.LEFT, key.RIGHT, key.UP, key.DOWN, key.A, key.D, key.W, key.S):
                self.autopilot = False
            return None  # the KeyStateHandler below must see the pan keys too
        return True  # pyglet.event.EVENT_HANDLED

    # -- save and load ------------------------------------------------------------------------
    def save(self) -> None:
        """Save the world, its processors and the camera (``App.save``: one pickle)."""
        self.saved = self.app.save(self.camera, self.time, self.autopilot, self.frame)
        self.saved_at = self.frame

    def load(self) -> None:
        """Put the saved game back: the world and its processors, the camera, and a shape
        for each entity the restored CullingProcessor sees (it carries on from its view: no
        "view_enter" comes for what was visible at the save)."""
        if self.saved is None:
            return
        camera, time, autopilot, frame = self.app.load(self.saved)
        assert isinstance(camera, Camera)
        assert isinstance(time, float) and isinstance(autopilot, bool)
        assert isinstance(frame, int)
        self.camera = camera  # the restored CullingProcessor's view is its method
        self.time, self.autopilot, self.frame = time, autopilot, frame
        self.overlay.view = camera.view
        spatial = esper.get_processor(SpatialProcessor)
        culling = esper.get_processor(CullingProcessor)
        assert isinstance(spatial, SpatialProcessor)
        assert isinstance(culling, CullingProcessor)
        self.spatial, self.culling = spatial, culling
        for e in list(self.shown):
            self.on_view_exit(e)  # every shape back to the pool...
        for e in sorted(culling.visible):
            self.on_view_enter(e)  # ...and one for each entity in view, from the pool
        self.minimap.refresh()
        self.loads += 1

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int,
                      modifiers: int) -> None:
        self.autopilot = False
        self.camera.x -= dx / self.camera.zoom
        self.camera.y -= dy / self.camera.zoom

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        """Zoom about the cursor: the world point under it stays under it."""
        self.autopilot = False
        cam = self.camera
        wx, wy = cam.to_world(x, y)
        cam.zoom = min(max(cam.zoom * 1.15**scroll_y, MIN_ZOOM), MAX_ZOOM)
        nx, ny = cam.to_world(x, y)
        cam.x += wx - nx
        cam.y += wy - ny

    # -- the frame --------------------------------------------------------------------------
    def update(self, dt: float) -> None:
        self.time += dt
        cam = self.camera
        if self.autopilot:
            # A slow figure of eight over the middle of the world, zooming from where it
            # began out to the widest view and in to the closest, evenly in the zoom's
            # logarithm.
            size = self.world.width
            cam.x = size / 2 + size * 0.3 * math.sin(self.time * 0.05)
            cam.y = size / 2 + size * 0.2 * math.sin(self.time * 0.1)
            swing = math.sin(self.time * math.tau / TOUR_ZOOM_PERIOD + self.tour_phase)
            cam.zoom = MIN_ZOOM * (MAX_ZOOM / MIN_ZOOM) ** ((1.0 + swing) / 2.0)
        else:
            key = pyglet.window.key
            step = PAN_SPEED * dt / cam.zoom
            cam.x += step * (self.keys[key.RIGHT] or self.keys[key.D]) - step * (
                self.keys[key.LEFT] or self.keys[key.A])
            cam.y += step * (self.keys[key.UP] or self.keys[key.W]) - step * (
                self.keys[key.DOWN] or self.keys[key.S])
        esper.process(dt)
        mesh, index = self.mesh, self.spatial.index
        for e in self.moving_shown:
            mesh.place(mesh.slot[e], index[e])
        self.frame += 1
        if self.frame % MINIMAP_REFRESH_FRAMES == 0:
            self.minimap.refresh()
        self.minimap.show_view(cam.view())
        self.app.stats.update(
            total=self.total, visible=len(self.culling.visible), quads=self.mesh.capacity
        )

    def draw(self) -> None:
        self.mesh.sync()
        window = self.app.window
        window.view = self.camera.matrix()
        self.batch.draw()
        window.view = Mat4()  # the HUD and the minimap are drawn in window coordinates

    def hud(self) -> str:
        mode = "autopilot (any control takes over)" if self.autopilot else "manual"
        if self.saved_at is not None:
            mode += f"   saved at frame {self.saved_at}, loaded {self.loads}x"
        return (
            f"Camera: culling   {mode}\n"
            f"{self.app.timing_text()}\n"
            f"entities {self.total:,}   visible {len(self.culling.visible):,}"
            f"   quads {self.mesh.capacity:,} ({len(self.mesh.free):,} pooled)"
            f"   zoom {self.camera.zoom:.2f}\n"
            "arrows/WASD/drag pan   wheel zoom   Q debug overlay   F5 save   F9 load"
        )


def create(argv: list[str] | None = None) -> CameraScene:
    """Parse the command line, open the window and build the scene (tests start here)."""
    p = _scaffold.parser(__doc__)
    p.add_argument("--entities", type=int, default=100_000, help="default: 100000")
    p.add_argument("--moving", type=float, default=0.01,
                   help="share of the entities that move (default: 0.01: 1,000 ships in 100,000)")
    p.add_argument("--world", type=float, default=None,
                   help="world width and height (default: keeps 100,000 in 10,000 x 10,000)")
    p.add_argument("--zoom", type=float, default=1.0,
                   help=f"initial zoom, {MIN_ZOOM} to {MAX_ZOOM} (default: 1)")
    args = _scaffold.parse_args(p, argv)
    world = args.world or 10_000 * math.sqrt(args.entities / 100_000)
    app = _scaffold.App("camera", args, "ecs_spatial: camera")
    return CameraScene(app, args.entities, args.moving, world, args.zoom)


def main(argv: list[str] | None = None) -> int:
    scene = create(argv)
    return scene.app.run(scene)


if __name__ == "__main__":
    sys.exit(main())
