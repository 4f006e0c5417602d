"""A debug overlay for pyglet: what the spatial layer sees, drawn over the game.

:class:`DebugOverlay` draws, for one :class:`~ecs_spatial.spatial_processor.SpatialProcessor`:

- the quadtree's nodes (``spatial.index.nodes()``, or ``nodes(view)``), as outlines;
- every tracked box, outlined in one colour while it overlaps nothing and in another while it
  has contacts (it is in one of ``spatial.pairs``);
- each pair, as a line between the centres of its two boxes;
- the last casts made through the processor (``spatial.cast_log``): the swept box at its start
  and at its end, the segment its centre travels, and a mark where each hit begins.

On a torus (``SpatialProcessor(wrap=...)``) a box is drawn where the index keeps it, moved into
the period, and one across a seam as its pieces on either side; a pair's line runs from the
centre of its first box to the nearest image of the other's (across the seam if shorter).

It is pymunk's ``pyglet_util.DrawOptions`` and Box2D's debug draw for the index rather than
for bodies: a few lines in the scene, toggled with a key::

    overlay = DebugOverlay(spatial, batch=scene_batch, visible=False)

    @window.event
    def on_key_press(symbol, modifiers):
        if symbol == pyglet.window.key.Q:
            overlay.toggle()

    def update(dt):
        esper.process(dt)
        overlay.update()          # costs nothing while hidden

Only this module imports pyglet; ``import ecs_spatial`` never does, and nothing in the package
imports this module: a game without a window (a server, a test) never loads OpenGL.

How it draws. Each layer (nodes, free boxes, touching boxes, pairs, casts, hits) is one
``GL_LINES`` vertex list of one colour in the overlay's :class:`pyglet.graphics.Batch`, under
a group of its own: ``update()`` rewrites the vertices' positions, and their colours only when
a layer's line count changed. A ``pyglet.shapes.Box`` per outline, as pymunk's ``pyglet_util``
makes a shape per body, would cost far more to move (each ``rect.position = ...`` goes
through pyglet's attribute machinery; the figure: ``docs/design.md``, "Decisions"); one list
a layer costs the Python that lists the coordinates and one buffer write (see
:meth:`DebugOverlay.update`).

The coordinates are the world's: the overlay is drawn in whatever view matrix is current when
its batch is drawn, so a scene with a camera draws it inside the camera's view, as it draws
its own sprites.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

# Only ``pyglet`` itself at import time: ``pyglet.graphics`` loads ``pyglet.gl``, which picks
# the window backend (X11 or headless EGL) for good. A program that imports this module at
# the top may still choose ``pyglet.options["headless"]`` afterwards.
import pyglet

from ._wrap import Period, period_of
from .filtering import accepted
from .geometry import Box
from .spatial_processor import CastRecord, SpatialProcessor

if TYPE_CHECKING:
    from pyglet.graphics import Batch, Group

__all__ = ["LAYERS", "DebugColors", "DebugOverlay"]

RGBA = tuple[int, int, int, int]

LAYERS = ("nodes", "boxes", "pairs", "casts")
"""What an overlay can draw; ``DebugOverlay(layers=...)`` picks some of them."""

LIMIT = 1e12
"""Coordinates beyond this (in either direction) are drawn at it: OpenGL's float32 turns a
coordinate above 3.4e38 into infinity, which no driver is obliged to draw sensibly, and
anything this far out is off any screen. A box that large is still drawn, its far sides
clamped."""


class DebugColors(NamedTuple):
    """The overlay's colours, RGBA (alpha is blended)."""

    nodes: RGBA = (60, 220, 120, 255)
    """The quadtree's node outlines."""
    free: RGBA = (90, 160, 255, 255)
    """A tracked box that overlaps nothing."""
    touching: RGBA = (255, 70, 70, 255)
    """A tracked box with contacts (in a pair)."""
    pairs: RGBA = (255, 230, 60, 255)
    """The line between the centres of a pair's boxes."""
    casts: RGBA = (200, 120, 255, 255)
    """A cast's start and end boxes and its path."""
    hits: RGBA = (255, 255, 255, 255)
    """A cast's box where it first touches a hit entity, and a cross at its centre."""


_VERTEX_SOURCE = """#version 150 core
in vec2 position;
in vec4 colors;
out vec4 vertex_colors;

uniform WindowBlock
{
    mat4 projection;
    mat4 view;
} window;

void main()
{
    gl_Position = window.projection * window.view * vec4(position, 0.0, 1.0);
    vertex_colors = colors;
}
"""

_FRAGMENT_SOURCE = """#version 150 core
in vec4 vertex_colors;
out vec4 final_color;

void main()
{
    final_color = vertex_colors;
}
"""


def _program() -> Any:
    """The overlay's shader (positions and colours only: pyglet's shape shader adds a
    translation, a rotation and a depth to every vertex, which lines never need). The
    context caches it by its sources, so every overlay shares one."""
    context = pyglet.gl.current_context
    if context is None:
        raise RuntimeError("DebugOverlay needs an OpenGL context: create it after the window")
    return context.create_program(
        (_VERTEX_SOURCE, "vertex"), (_FRAGMENT_SOURCE, "fragment")
    )


@functools.cache
def _overlay_group_class() -> Callable[[Any, int], Group]:
    """The class of an overlay's root group, made at the first overlay (see the imports)."""

    class OverlayGroup(pyglet.graphics.Group):
        """Binds the overlay's shader and turns blending on for its layers.

        Equal only to itself: pyglet merges equal groups of a batch into one, and two
        overlays sharing a batch must keep their own visibility."""

        def __init__(self, program: Any, order: int) -> None:
            super().__init__(order=order)
            self.program = program

        def set_state(self) -> None:
            gl = pyglet.gl
            self.program.use()
            gl.glEnable(gl.GL_BLEND)
            gl.glBlendFunc(gl.GL_SRC_ALPHA, gl.GL_ONE_MINUS_SRC_ALPHA)

        def unset_state(self) -> None:
            pyglet.gl.glDisable(pyglet.gl.GL_BLEND)
            self.program.stop()

        def __eq__(self, other: object) -> bool:
            return self is other

        def __hash__(self) -> int:
            return id(self)

    return OverlayGroup


class _Lines:
    """One layer: a ``GL_LINES`` vertex list of one colour, resized to the lines it is given.

    Its colours are written only when the vertex count changes (a resize); its positions at
    every :meth:`set`. An empty layer holds no vertex list at all."""

    __slots__ = ("batch", "color", "group", "program", "vertex_list")

    def __init__(self, program: Any, batch: Batch, group: Group, color: RGBA) -> None:
        self.program = program
        self.batch = batch
        self.group = group
        self.color = color
        self.vertex_list: Any = None

    @property
    def count(self) -> int:
        """How many lines the layer draws."""
        return 0 if self.vertex_list is None else self.vertex_list.count // 2

    def set(self, points: list[float]) -> None:
        """Draw the lines ``points`` lists: x0, y0, x1, y1 for each, in world coordinates."""
        n = len(points) // 2
        vl = self.vertex_list
        if n == 0:
            self.delete()
            return
        if vl is None:
            self.vertex_list = self.program.vertex_list(
                n, pyglet.gl.GL_LINES, self.batch, self.group,
                position=("f", points), colors=("Bn", self.color * n),
            )
            return
        if vl.count != n:
            vl.resize(n)
            vl.colors[:] = self.color * n
        vl.position[:] = points

    def delete(self) -> None:
        if self.vertex_list is not None:
            self.vertex_list.delete()
            self.vertex_list = None


def _clamp(v: float) -> float:
    return LIMIT if v > LIMIT else (-LIMIT if v < -LIMIT else v)


def _outline(out: list[float], x0: float, y0: float, x1: float, y1: float, mark: float) -> None:
    """Append the four sides of a box (a cross of half-size ``mark`` for a point) to
    ``out``, clamped to ``LIMIT``."""
    if x0 == x1 and y0 == y1:  # before clamping: a box beyond LIMIT is not a point
        _cross(out, _clamp(x0), _clamp(y0), mark)
        return
    if not (x0 >= -LIMIT and x1 <= LIMIT and y0 >= -LIMIT and y1 <= LIMIT):
        x0, y0, x1, y1 = _clamp(x0), _clamp(y0), _clamp(x1), _clamp(y1)
    out.extend((x0, y0, x1, y0, x1, y0, x1, y1, x1, y1, x0, y1, x0, y1, x0, y0))


def _pieces(
    x0: float, y0: float, x1: float, y1: float, period: Period
) -> list[tuple[float, float, float, float]]:
    """A box of a wrapped index (canonical: its max corner may pass the right or top seam)
    as the pieces that lie in the period: cut at each seam it crosses, the part past it
    moved back by a period (up to four pieces, across both seams)."""
    ox, oy, w, h, ex, ey = period
    xs = [(x0, x1)] if x1 <= ex else [(x0, ex), (ox, x1 - w)]
    ys = [(y0, y1)] if y1 <= ey else [(y0, ey), (oy, y1 - h)]
    return [(ax0, ay0, ax1, ay1) for ax0, ax1 in xs for ay0, ay1 in ys]


def _cross(out: list[float], x: float, y: float, mark: float) -> None:
    out.extend((x - mark, y - mark, x + mark, y + mark, x - mark, y + mark, x + mark, y - mark))


class DebugOverlay:
    """Draws a :class:`~ecs_spatial.spatial_processor.SpatialProcessor`'s index, boxes,
    pairs and casts with pyglet (see the module docstring for what each looks like).

    ``batch``: the :class:`pyglet.graphics.Batch` to draw into; a new one of its own if
    None (then :meth:`draw` draws it). Pass the scene's batch to have the overlay drawn with
    the scene, in the scene's view; ``order`` places it among the batch's groups (above
    groups of lower order). ``layers`` picks what to draw, among :data:`LAYERS`; ``colors``
    how (:class:`DebugColors`); ``casts`` how many of the last casts to draw; ``mark`` the
    half-size, in world units, of the crosses that stand for a point box and for each hit.

    ``view``: None to draw everything, or a box (or a callable returning one, called at each
    :meth:`update`, such as a camera's ``view`` method) outside which boxes, pairs and nodes
    are left out: a world of 100,000 boxes is drawn at the cost of the few hundred in view.

    Casts: while the overlay is shown, it makes sure ``spatial.cast_log`` records casts; if
    it was None, the overlay sets a ``deque(maxlen=casts)`` of its own there, and puts None
    back when hidden or deleted (recording is then off again, and costs nothing).

    Must be created with an OpenGL context current (after the window is opened).
    """

    def __init__(
        self,
        spatial: SpatialProcessor,
        batch: Batch | None = None,
        *,
        visible: bool = True,
        layers: Iterable[str] = LAYERS,
        colors: DebugColors = DebugColors(),  # noqa: B008  (an immutable NamedTuple)
        casts: int = 32,
        mark: float = 3.0,
        view: Box | Callable[[], Box] | None = None,
        order: int = 100,
    ) -> None:
        chosen = tuple(layers)
        unknown = sorted(set(chosen).difference(LAYERS))
        if unknown:
            raise ValueError(f"unknown layer(s) {unknown!r}: expected some of {list(LAYERS)!r}")
        if isinstance(casts, bool) or not isinstance(casts, int) or casts < 0:
            raise ValueError(f"casts must be an int >= 0, got {casts!r}")
        if not mark >= 0:  # NaN too
            raise ValueError(f"mark must be >= 0, got {mark!r}")
        self.spatial = spatial
        self.layers = frozenset(chosen)
        self.colors = colors
        self.casts = casts
        self.mark = float(mark)
        self.view = view
        self._own_batch = batch is None
        self.batch: Batch = pyglet.graphics.Batch() if batch is None else batch
        program = _program()
        self.group: Group = _overlay_group_class()(program, order)

        def layer(order: int, color: RGBA) -> _Lines:
            group = pyglet.graphics.Group(order=order, parent=self.group)
            return _Lines(program, self.batch, group, color)

        # Drawn in this order: each layer over the ones before it.
        self._nodes = layer(0, colors.nodes)
        self._free = layer(1, colors.free)
        self._touching = layer(2, colors.touching)
        self._pairs = layer(3, colors.pairs)
        self._casts = layer(4, colors.casts)
        self._hits = layer(5, colors.hits)
        self._all = (self._nodes, self._free, self._touching, self._pairs, self._casts,
                     self._hits)
        self._cast_log: deque[CastRecord] | None = None  # the log the overlay installed
        self._visible = False
        self.group.visible = False
        if visible:
            self.visible = True

    # -- showing and hiding ---------------------------------------------------------------
    @property
    def visible(self) -> bool:
        """Whether the overlay is drawn. Showing it starts cast recording (see the class
        docstring) and refreshes it at once; hiding it stops what the overlay started."""
        return self._visible

    @visible.setter
    def visible(self, value: bool) -> None:
        value = bool(value)
        if value == self._visible:
            return
        self._visible = value
        self.group.visible = value
        if value:
            if "casts" in self.layers and self.spatial.cast_log is None:
                self._cast_log = deque(maxlen=self.casts)
                self.spatial.cast_log = self._cast_log
            self.update()
        else:
            self._release_cast_log()

    def toggle(self) -> bool:
        """Show the overlay if hidden, hide it if shown; return whether it is shown now."""
        self.visible = not self._visible
        return self._visible

    # -- the frame --------------------------------------------------------------------------
    def update(self) -> None:
        """Bring the drawing up to date with the processor's last ``process()`` (call it
        once a frame, after ``esper.process()``). Nothing at all while hidden.

        Complexity: O(nodes + boxes + pairs + casts) of Python, a line drawn at a time
        (``python -m tools.overlay_cost`` measures it in the collisions scene; the figures:
        docs/design.md#decisions); with a ``view``, O(log n + k) for
        the k boxes in view and their pairs, and for the nodes that meet it
        (``index.nodes(view)``, which opens no subtree out of view). The GPU upload is one
        buffer write a layer.
        """
        if not self._visible:
            return
        spatial = self.spatial
        index = spatial.index
        layers = self.layers
        mark = self.mark
        view = self.view
        if callable(view):
            view = view()

        if "nodes" in layers:
            out: list[float] = []
            # With a view, the index lists the nodes in it alone, never opening a subtree out
            # of view (speed: see docs/design.md#decisions).
            for info in index.nodes() if view is None else index.nodes(view):
                nb = info.box
                _outline(out, nb[0], nb[1], nb[2], nb[3], mark)
            self._nodes.set(out)
        else:
            self._nodes.delete()

        want_boxes = "boxes" in layers
        want_pairs = "pairs" in layers
        if want_boxes or want_pairs:
            get = index.__getitem__
            members: Iterable[int]
            pairs: Iterable[tuple[int, int]]
            if view is None:
                members, pairs = index, spatial.pairs
            else:
                # The pairs of what is in view, found around it: reading ``spatial.pairs``
                # would cost a search of the whole world where the processor keeps no pairs
                # (``events=()``; speed: see docs/design.md#decisions).
                members = index.query(view)
                pairs = accepted(index.find_intersections_for(members), spatial.filters)
            wrap = index.wrap
            period = None if wrap is None else period_of(wrap)
            touching: set[int] = set()
            lines: list[float] = []
            extend = lines.extend
            add = touching.add
            for a, b in pairs:
                add(a)
                add(b)
                if want_pairs:
                    ax0, ay0, ax1, ay1 = get(a)
                    bx0, by0, bx1, by1 = get(b)
                    centres = ((ax0 + ax1) * 0.5, (ay0 + ay1) * 0.5,
                               (bx0 + bx1) * 0.5, (by0 + by1) * 0.5)
                    if period is not None:  # to the image of b's centre nearest a's
                        acx, acy, bcx, bcy = centres
                        centres = (acx, acy, acx + math.remainder(bcx - acx, period[2]),
                                   acy + math.remainder(bcy - acy, period[3]))
                    if min(centres) >= -LIMIT and max(centres) <= LIMIT:
                        extend(centres)
                    else:
                        extend(map(_clamp, centres))
            self._pairs.set(lines)
            if want_boxes:
                free: list[float] = []
                hot: list[float] = []
                if period is not None:  # each box as its pieces in the period
                    for e in members:
                        into = hot if e in touching else free
                        for piece in _pieces(*get(e), period):
                            _outline(into, *piece, mark)
                    members = ()
                # inlined copy of _outline (speed: see docs/design.md#decisions)
                for e in members:
                    x0, y0, x1, y1 = get(e)
                    if (x0 >= -LIMIT and x1 <= LIMIT and y0 >= -LIMIT and y1 <= LIMIT
                            and (x0 != x1 or y0 != y1)):
                        (hot if e in touching else free).extend(
                            (x0, y0, x1, y0, x1, y0, x1, y1, x1, y1, x0, y1, x0, y1, x0, y0))
                    else:
                        _outline(hot if e in touching else free, x0, y0, x1, y1, mark)
                self._free.set(free)
                self._touching.set(hot)
            else:
                self._free.delete()
                self._touching.delete()
        else:
            for lines_ in (self._free, self._touching, self._pairs):
                lines_.delete()

        log = spatial.cast_log if "casts" in layers else None
        if log:
            # The newest ``casts`` records, oldest first, without copying a long log.
            records = list(itertools.islice(reversed(log), self.casts))
            paths: list[float] = []
            hits: list[float] = []
            for record in reversed(records):
                self._add_cast(record, paths, hits)
            self._casts.set(paths)
            self._hits.set(hits)
        else:
            self._casts.delete()
            self._hits.delete()

    def _add_cast(self, record: CastRecord, paths: list[float], hits: list[float]) -> None:
        """One cast: its box at the start and at the end, the path of its centre, and at
        each hit the box where it first touches (a cross at its centre)."""
        x0, y0, x1, y1 = record.box
        dx, dy = record.dx, record.dy
        mark = self.mark
        cx, cy = (x0 + x1) * 0.5, (y0 + y1) * 0.5
        point = x0 == x1 and y0 == y1
        if not point:
            _outline(paths, x0, y0, x1, y1, mark)
            _outline(paths, x0 + dx, y0 + dy, x1 + dx, y1 + dy, mark)
        paths.extend((_clamp(cx), _clamp(cy), _clamp(cx + dx), _clamp(cy + dy)))
        for _entity, t in record.hits:
            ox, oy = dx * t, dy * t
            if not point:
                _outline(hits, x0 + ox, y0 + oy, x1 + ox, y1 + oy, mark)
            _cross(hits, _clamp(cx + ox), _clamp(cy + oy), mark)

    def draw(self) -> None:
        """Draw the overlay's own batch (if shown). With a batch passed in, the overlay is
        drawn when that batch is, and this draws nothing."""
        if self._own_batch and self._visible:
            self.batch.draw()

    def delete(self) -> None:
        """Free the overlay's vertex lists and hide it (showing it again rebuilds them)."""
        self.visible = False
        for lines in self._all:
            lines.delete()

    @property
    def counts(self) -> dict[str, int]:
        """How many lines each layer holds now: ``nodes``, ``free``, ``touching``, ``pairs``,
        ``casts`` and ``hits`` (for tests and HUDs)."""
        return {
            "nodes": self._nodes.count, "free": self._free.count,
            "touching": self._touching.count, "pairs": self._pairs.count,
            "casts": self._casts.count, "hits": self._hits.count,
        }

    def _release_cast_log(self) -> None:
        """Put None back in ``spatial.cast_log`` if the overlay installed what is there."""
        if self._cast_log is not None:
            if self.spatial.cast_log is self._cast_log:
                self.spatial.cast_log = None
            self._cast_log = None
