"""ecs_spatial.pyglet_debug: the DebugOverlay, rendered headless (EGL + Mesa llvmpipe) and
read back pixel by pixel.

Each test builds a small world, draws the overlay alone into a 200 x 200 window whose
projection is the window's pixels, and checks the pixels against what the model says
should be there: the node outlines where ``index.nodes()`` puts them, each box outlined in
the colour its contacts call for (contacts found by brute force), a line between the centres
of each pair, and the casts. As in test_examples.py nothing is skipped: without the headless
renderer the tests fail and say how to install it.

The package itself never imports pyglet: a subprocess checks it.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import esper
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyglet  # isort: skip

# Headless before anything touches pyglet.window or pyglet.gl (see examples/_scaffold.py).
pyglet.options["headless"] = True

from ecs_spatial import AABB, Box, Position, SpatialProcessor  # noqa: E402
from ecs_spatial.pyglet_debug import LAYERS, DebugColors, DebugOverlay  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETUP_HINT = "run scripts/setup-system.sh (as root) to install the headless renderer's packages"
SIZE = 200
BACKGROUND = (0, 0, 0)
# Opaque and far apart, so that a pixel says which layer drew it.
COLORS = DebugColors(
    nodes=(0, 255, 0, 255), free=(0, 0, 255, 255), touching=(255, 0, 0, 255),
    pairs=(255, 255, 0, 255), casts=(255, 0, 255, 255), hits=(0, 255, 255, 255),
)
RGB = {name: color[:3] for name, color in COLORS._asdict().items()}
TOL = 8  # llvmpipe dithers a colour by a few units


@pytest.fixture(scope="module")
def window() -> Iterator[Any]:
    """One headless window for the module's tests."""
    try:
        win = pyglet.window.Window(SIZE, SIZE, caption="test_pyglet_debug")
    except Exception as exc:  # any failure to open the renderer: say the fix
        pytest.fail(f"cannot open a headless window ({exc}); {SETUP_HINT}", pytrace=False)
    yield win
    win.close()


class Frame:
    """The RGB pixels of one drawn frame, (0, 0) at the bottom left as OpenGL has it."""

    def __init__(self, data: bytes, width: int, height: int) -> None:
        self.data, self.width, self.height = data, width, height

    def at(self, x: int, y: int) -> tuple[int, int, int]:
        k = (y * self.width + x) * 3
        return (self.data[k], self.data[k + 1], self.data[k + 2])

    def near(self, x: float, y: float, rgb: tuple[int, ...], reach: int = 1) -> bool:
        """Whether a pixel within ``reach`` of (x, y) has colour ``rgb`` (a line at x = 100.0
        lies on the boundary between two columns: either may be lit)."""
        for i in range(round(x) - reach, round(x) + reach + 1):
            for j in range(round(y) - reach, round(y) + reach + 1):
                if 0 <= i < self.width and 0 <= j < self.height and _close(self.at(i, j), rgb):
                    return True
        return False

    def count(self, rgb: tuple[int, ...]) -> int:
        d = self.data
        return sum(
            1 for k in range(0, len(d), 3) if _close((d[k], d[k + 1], d[k + 2]), rgb)
        )

    def lit(self) -> int:
        """How many pixels are not the background."""
        d = self.data
        return sum(1 for k in range(0, len(d), 3) if d[k] or d[k + 1] or d[k + 2])


def _close(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return all(abs(x - y) <= TOL for x, y in zip(a, b, strict=True))


def render(window: Any, *draw: Any) -> Frame:
    """Clear the window, call each of ``draw`` and read the frame back before any flip."""
    window.switch_to()
    pyglet.gl.glClearColor(0, 0, 0, 1)
    window.clear()
    for f in draw:
        f()
    buffer = pyglet.image.get_buffer_manager().get_color_buffer()
    image = buffer.get_image_data()  # type: ignore[no-untyped-call]
    return Frame(image.get_data("RGB", image.width * 3), image.width, image.height)


def make_world(boxes: list[Box], **kwargs: Any) -> tuple[SpatialProcessor, list[int]]:
    """A SpatialProcessor over these boxes, after one process()."""
    spatial = SpatialProcessor(**kwargs)
    esper.add_processor(spatial)
    ids = [
        esper.create_entity(Position(b.min_x, b.min_y), AABB(b.width, b.height)) for b in boxes
    ]
    esper.process()
    return spatial, ids


def brute_pairs(boxes: dict[int, Box]) -> set[tuple[int, int]]:
    return {
        (a, b) for a, b in itertools.combinations(sorted(boxes), 2)
        if boxes[a].intersects(boxes[b])
    }


# -- what is drawn where --------------------------------------------------------------------------


def test_node_outlines_lie_on_the_node_boundaries(window: Any, world: str) -> None:
    """Every side of every node of ``index.nodes()`` is drawn in the node colour (checked at
    its middle and a quarter along), and a pixel well inside a leaf, away from every line,
    is left alone."""
    boxes = [Box(30 + 40 * i, 30 + 40 * j, 34 + 40 * i, 34 + 40 * j)
             for i in range(4) for j in range(4)]
    spatial, _ = make_world(boxes, bounds=Box(20, 20, 180, 180), threshold=2)
    overlay = DebugOverlay(spatial, layers=["nodes"], colors=COLORS)
    frame = render(window, overlay.draw)
    nodes = list(spatial.index.nodes())
    assert len(nodes) > 1  # the tree did split
    assert overlay.counts["nodes"] == 4 * len(nodes)
    for node in nodes:
        x0, y0, x1, y1 = node.box
        for f in (0.25, 0.5):
            for x, y in ((x0 + f * (x1 - x0), y0), (x0 + f * (x1 - x0), y1),
                         (x0, y0 + f * (y1 - y0)), (x1, y0 + f * (y1 - y0))):
                if x < SIZE and y < SIZE:
                    assert frame.near(x, y, RGB["nodes"]), (node, x, y)
    # The middle of a leaf holds no line: the centre of the smallest node is dark unless a
    # boundary passes within 2 px of it.
    leaf = min(nodes, key=lambda n: n.box.width)
    cx, cy = leaf.box.center
    lines_x = {v for n in nodes for v in (n.box.min_x, n.box.max_x)}
    lines_y = {v for n in nodes for v in (n.box.min_y, n.box.max_y)}
    if all(abs(cx - v) > 2 for v in lines_x) and all(abs(cy - v) > 2 for v in lines_y):
        assert frame.at(round(cx), round(cy)) == BACKGROUND
    assert frame.count(RGB["nodes"]) > 100
    overlay.delete()


def test_boxes_are_coloured_by_their_contacts_and_pairs_joined(window: Any, world: str) -> None:
    """Two overlapping boxes are outlined in the touching colour, a lone box in the free
    colour, and the pair is a line between the two centres."""
    a, b, lone = Box(20, 20, 80, 60), Box(60, 40, 120, 100), Box(140, 140, 180, 170)
    spatial, ids = make_world([a, b, lone])
    assert set(spatial.pairs) == {(ids[0], ids[1])}
    overlay = DebugOverlay(spatial, layers=["boxes"], colors=COLORS)
    frame = render(window, overlay.draw)
    for box, name in ((a, "touching"), (b, "touching"), (lone, "free")):
        x0, y0, x1, y1 = box
        # The bottom and left sides, away from the other box's outline.
        for x, y in (((x0 + x1) / 2, y0 if box is not b else y1), (x0 if box is not b else x1,
                                                                   (y0 + y1) / 2)):
            assert frame.near(x, y, RGB[name]), (box, name, x, y, frame.at(round(x), round(y)))
    assert frame.count(RGB["free"]) > 100 and frame.count(RGB["touching"]) > 300
    assert overlay.counts == {"nodes": 0, "free": 4, "touching": 8, "pairs": 0, "casts": 0,
                              "hits": 0}

    overlay.layers = frozenset({"pairs"})
    overlay.update()
    frame = render(window, overlay.draw)
    (ax, ay), (bx, by) = a.center, b.center
    for f in (0.25, 0.5, 0.75):
        assert frame.near(ax + f * (bx - ax), ay + f * (by - ay), RGB["pairs"])
    assert frame.count(RGB["free"]) == frame.count(RGB["touching"]) == 0
    overlay.delete()


def test_the_drawing_follows_the_world(window: Any, world: str) -> None:
    """After the boxes move apart and process() runs, update() redraws them free, with no
    pair line; the old places are dark."""
    spatial, ids = make_world([Box(20, 20, 60, 60), Box(50, 50, 90, 90)])
    overlay = DebugOverlay(spatial, layers=["boxes", "pairs"], colors=COLORS)
    assert overlay.counts["touching"] == 8 and overlay.counts["pairs"] == 1
    esper.component_for_entity(ids[1], Position).x = 130
    esper.process()
    overlay.update()
    frame = render(window, overlay.draw)
    assert overlay.counts["touching"] == 0 and overlay.counts["pairs"] == 0
    assert frame.count(RGB["touching"]) == frame.count(RGB["pairs"]) == 0
    assert frame.near(150, 50, RGB["free"])  # the moved box's bottom side
    assert not frame.near(70, 50, RGB["free"])  # where its bottom side was
    overlay.delete()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-50, 250), st.floats(-50, 250), st.floats(0, 60), st.floats(0, 60)),
        max_size=25,
    ),
    st.sampled_from([1, 2, 4, 16]),
)
def test_counts_match_a_brute_force_model(
    window: Any, specs: list[tuple[float, float, float, float]], threshold: int
) -> None:
    """Random boxes, zero-size ones and ones outside the bounds included: the overlay holds
    four lines a node, four a box with a size (a cross of two for a point), in the touching
    layer exactly for the boxes in a brute-force pair, and one line a pair."""
    esper.switch_world("overlay-model")
    try:
        boxes = [Box(x, y, x + w, y + h) for x, y, w, h in specs]
        spatial, ids = make_world(boxes, bounds=Box(0, 0, 200, 200), threshold=threshold)
        overlay = DebugOverlay(spatial, colors=COLORS)
        pairs = brute_pairs(dict(zip(ids, boxes, strict=True)))
        touching = {e for p in pairs for e in p}

        def lines(box: Box) -> int:
            return 2 if box.width == 0 and box.height == 0 else 4

        by_id = dict(zip(ids, boxes, strict=True))
        assert overlay.counts == {
            "nodes": 4 * len(list(spatial.index.nodes())),
            "free": sum(lines(by_id[e]) for e in ids if e not in touching),
            "touching": sum(lines(by_id[e]) for e in ids if e in touching),
            "pairs": len(pairs),
            "casts": 0,
            "hits": 0,
        }
        overlay.delete()
        assert set(overlay.counts.values()) == {0}
    finally:
        esper.switch_world("default")
        esper.delete_world("overlay-model")


def test_a_point_box_is_a_cross_and_huge_boxes_draw(window: Any, world: str) -> None:
    """A zero-size box is drawn as a cross of ``mark`` half-size; boxes at the float range's
    ends are clamped (no infinity reaches OpenGL) and the rest of the frame is unaffected."""
    point = Box(100, 100, 100, 100)
    huge = Box(-1e300, -1e300, 1e300, 1e300)
    far = Box(1e308, 1e308, 1.5e308, 1.5e308)
    spatial, _ = make_world([point, huge, far])
    overlay = DebugOverlay(spatial, layers=["boxes", "pairs"], colors=COLORS, mark=6)
    frame = render(window, overlay.draw)
    # The point touches the huge box: both are in the touching colour; the far one is free.
    assert frame.near(104, 104, RGB["touching"]) and frame.near(96, 104, RGB["touching"])
    assert not frame.near(110, 110, RGB["touching"], reach=0)
    assert overlay.counts["free"] == 4 and overlay.counts["pairs"] == 1
    overlay.delete()


def test_view_limits_the_drawing_to_what_is_in_it(window: Any, world: str) -> None:
    """With a view, only the boxes intersecting it are drawn (the index's query), the pairs
    with a box in it, and the nodes that intersect it; a callable view is asked each time."""
    boxes = [Box(10 * i, 10 * i, 10 * i + 15, 10 * i + 15) for i in range(20)]
    spatial, ids = make_world(boxes, bounds=Box(0, 0, 220, 220), threshold=2)
    views = [Box(0, 0, 50, 50)]
    overlay = DebugOverlay(spatial, colors=COLORS, view=lambda: views[-1])
    by_id = dict(zip(ids, boxes, strict=True))
    for view in (Box(0, 0, 50, 50), Box(100, 100, 130, 120), Box(500, 500, 600, 600)):
        views.append(view)
        overlay.update()
        inside = [e for e in ids if by_id[e].intersects(view)]
        pairs = [p for p in brute_pairs(by_id) if p[0] in inside or p[1] in inside]
        nodes = [n for n in spatial.index.nodes() if n.box.intersects(view)]
        counts = overlay.counts
        assert counts["free"] + counts["touching"] == 4 * len(inside)
        assert counts["pairs"] == len(pairs)
        assert counts["nodes"] == 4 * len(nodes)
    overlay.delete()


class _CountingIndex:
    """The processor's index, with its ``nodes`` calls recorded: each call's box and how
    many NodeInfo the caller took from it."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.calls: list[tuple[object, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    def nodes(self, box: object = None) -> Iterator[Any]:
        k = len(self.calls)
        self.calls.append((box, 0))
        for info in self.index.nodes(box):
            self.calls[k] = (box, self.calls[k][1] + 1)
            yield info


def _edge_points(box: Box, step: float = 5.0) -> Iterator[tuple[float, float]]:
    """Points every ``step`` along the four sides of ``box``, corners left out."""
    x0, y0, x1, y1 = box
    for k in range(1, int((x1 - x0) / step)):
        yield x0 + k * step, y0
        yield x0 + k * step, y1
    for k in range(1, int((y1 - y0) / step)):
        yield x0, y0 + k * step
        yield x1, y0 + k * step


def test_with_a_view_only_the_nodes_in_view_are_drawn(window: Any, world: str) -> None:
    """With a view, the overlay asks the index for ``nodes(view)`` and takes just the nodes
    that meet the view (none is listed to be filtered out); every side of those is drawn,
    and no pixel of a side that only nodes out of view have. Without a view, the same
    pixels are drawn: the check could fail."""
    boxes = [Box(26 + 20 * i, 26 + 20 * j, 28 + 20 * i, 28 + 20 * j)
             for i in range(8) for j in range(8)]
    spatial, _ = make_world(boxes, bounds=Box(20, 20, 180, 180), threshold=2)
    index = spatial.index
    view = Box(30, 30, 90, 80)
    inside = [n for n in index.nodes() if n.box.intersects(view)]
    outside = [n for n in index.nodes() if not n.box.intersects(view)]
    assert len(inside) > 4 and len(outside) > 10

    counting = _CountingIndex(index)
    spatial._index = counting  # type: ignore[assignment]  # the overlay reads spatial.index
    overlay = DebugOverlay(spatial, layers=["nodes"], colors=COLORS, view=view)
    assert counting.calls == [(view, len(inside))]
    assert overlay.counts["nodes"] == 4 * len(inside)
    frame = render(window, overlay.draw)
    drawn = [p for n in inside for p in _edge_points(n.box)]
    assert [p for p in drawn if not frame.near(*p, RGB["nodes"])] == []

    def on_a_drawn_side(x: float, y: float) -> bool:
        return any(
            (abs(x - bx) <= 2 and by0 - 2 <= y <= by1 + 2)
            or (abs(y - by) <= 2 and bx0 - 2 <= x <= bx1 + 2)
            for bx0, by0, bx1, by1 in (n.box for n in inside)
            for bx in (bx0, bx1) for by in (by0, by1)
        )

    hidden = [p for n in outside for p in _edge_points(n.box) if not on_a_drawn_side(*p)]
    assert len(hidden) > 50
    assert not any(frame.near(x, y, RGB["nodes"], reach=0) for x, y in hidden)
    overlay.delete()

    everything = DebugOverlay(spatial, layers=["nodes"], colors=COLORS)
    assert counting.calls[-1] == (None, len(inside) + len(outside))
    frame = render(window, everything.draw)
    assert all(frame.near(x, y, RGB["nodes"]) for x, y in hidden)
    everything.delete()


# -- showing, hiding, sharing a batch ------------------------------------------------------------


class _Untouchable:
    """A stand-in processor that fails any attribute read: proves update() did not look."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the hidden overlay read spatial.{name}")


def test_hidden_draws_nothing_and_costs_nothing(window: Any, world: str) -> None:
    """A hidden overlay draws no pixel (its own batch, or a batch it shares), and its
    update() reads nothing of the processor; shown again it draws at once."""
    spatial, _ = make_world([Box(20, 20, 80, 60), Box(60, 40, 120, 100)], threshold=1)
    overlay = DebugOverlay(spatial, colors=COLORS, visible=False)
    assert overlay.counts == dict.fromkeys(overlay.counts, 0)  # nothing built while hidden
    assert render(window, overlay.draw).lit() == 0
    real, overlay.spatial = overlay.spatial, _Untouchable()  # type: ignore[assignment]
    overlay.update()
    overlay.spatial = real

    assert overlay.toggle() is True
    shown = render(window, overlay.draw)
    assert shown.lit() > 300
    assert overlay.toggle() is False
    assert render(window, overlay.draw).lit() == 0

    # In a shared batch, the scene's shapes stay and the overlay's go.
    batch = pyglet.graphics.Batch()
    square = pyglet.shapes.Rectangle(150, 150, 20, 20, color=(200, 200, 200), batch=batch)
    shared = DebugOverlay(spatial, batch, colors=COLORS)
    with_overlay = render(window, batch.draw)
    shared.visible = False
    without = render(window, batch.draw)
    assert with_overlay.lit() > without.lit() == 400
    assert without.data == render(window, DebugOverlay(spatial, batch, visible=False).draw,
                                  batch.draw).data
    shared.draw()  # a shared batch is drawn by its owner: draw() adds nothing
    square.delete()
    overlay.delete()
    shared.delete()


def test_two_overlays_in_one_batch_keep_their_own_visibility(window: Any, world: str) -> None:
    """pyglet merges equal groups of a batch: each overlay's group is equal only to itself,
    so hiding one leaves the other drawn."""
    spatial, _ = make_world([Box(20, 20, 80, 60)])
    batch = pyglet.graphics.Batch()
    first = DebugOverlay(spatial, batch, layers=["boxes"], colors=COLORS)
    second = DebugOverlay(spatial, batch, layers=["boxes"],
                          colors=COLORS._replace(free=(255, 255, 255, 255)))
    first.visible = False
    frame = render(window, batch.draw)
    assert frame.count((255, 255, 255)) > 100 and frame.count(RGB["free"]) == 0
    first.visible, second.visible = True, False
    frame = render(window, batch.draw)
    assert frame.count((255, 255, 255)) == 0 and frame.count(RGB["free"]) > 100
    first.delete()
    second.delete()


def test_delete_frees_and_showing_again_rebuilds(window: Any, world: str) -> None:
    """delete() hides the overlay and frees every vertex list; shown again, it rebuilds."""
    spatial, _ = make_world([Box(20, 20, 80, 60), Box(60, 40, 120, 100)])
    overlay = DebugOverlay(spatial, colors=COLORS)
    assert overlay.counts["pairs"] == 1
    overlay.delete()
    assert not overlay.visible and set(overlay.counts.values()) == {0}
    assert render(window, overlay.draw).lit() == 0
    overlay.visible = True
    assert overlay.counts["pairs"] == 1 and render(window, overlay.draw).lit() > 300
    overlay.delete()


def test_bad_arguments_are_refused_by_name(world: str) -> None:
    """An unknown layer, a negative or non-int cast count, a negative or NaN mark: each a
    ValueError naming it (checked before any OpenGL is touched)."""
    spatial = SpatialProcessor()
    with pytest.raises(ValueError, match=r"unknown layer\(s\) \['tree'\]"):
        DebugOverlay(spatial, layers=["nodes", "tree"])
    for casts in (-1, 2.5, True):
        with pytest.raises(ValueError, match="casts must be an int >= 0"):
            DebugOverlay(spatial, casts=casts)  # type: ignore[arg-type]
    for mark in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="mark must be >= 0"):
            DebugOverlay(spatial, mark=mark)
    assert set(LAYERS) == {"nodes", "boxes", "pairs", "casts"}


# -- the package does not need pyglet ----------------------------------------------------------


def test_the_package_never_imports_pyglet() -> None:
    """``import ecs_spatial`` (and every module of it but pyglet_debug) loads no pyglet, and
    works where pyglet cannot be imported at all; pyglet_debug is the one module that
    needs it, and says so with an ImportError, and it loads no OpenGL at import."""
    code = (
        "import sys, pkgutil, importlib\n"
        "sys.modules['pyglet'] = None  # any import of pyglet now fails\n"
        "import ecs_spatial\n"
        "for m in pkgutil.iter_modules(ecs_spatial.__path__):\n"
        "    if m.name != 'pyglet_debug':\n"
        "        importlib.import_module('ecs_spatial.' + m.name)\n"
        "try:\n"
        "    import ecs_spatial.pyglet_debug\n"
        "except ImportError:\n"
        "    print('ok')\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env, check=False)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
    code = "import sys, ecs_spatial; print(sorted(m for m in sys.modules if 'pyglet' in m))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env, check=False)
    assert result.stdout.strip() == "[]", result.stderr[-2000:]
    # Importing the overlay's module loads pyglet but not its window backend: a program may
    # import it at the top and still pick headless mode afterwards.
    code = (
        "import sys, ecs_spatial.pyglet_debug\n"
        "assert 'pyglet' in sys.modules\n"
        "print(sorted(m for m in ('pyglet.gl', 'pyglet.window', 'pyglet.graphics')"
        " if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env, check=False)
    assert result.stdout.strip() == "[]", result.stderr[-2000:]


# -- casts ----------------------------------------------------------------------------------------


def test_shown_overlay_records_the_casts_and_hidden_stops(world: str, window: Any) -> None:
    """Shown, the overlay installs a ``deque(maxlen=casts)`` as ``spatial.cast_log`` where
    there was None, and puts None back when hidden or deleted; a log of the user's own is
    used as it is and left in place; without the casts layer nothing is installed."""
    spatial, _ = make_world([Box(50, 50, 60, 60)])
    overlay = DebugOverlay(spatial, casts=5)
    log = spatial.cast_log
    assert isinstance(log, deque) and log.maxlen == 5
    overlay.visible = False
    assert spatial.cast_log is None
    spatial.raycast(0, 0, 100, 100)  # not recorded: nothing listens
    overlay.visible = True
    assert spatial.cast_log is not log and spatial.cast_log is not None
    assert len(spatial.cast_log) == 0
    overlay.delete()
    assert spatial.cast_log is None

    mine: list[Any] = []
    spatial.cast_log = mine
    overlay = DebugOverlay(spatial, casts=5)
    overlay.visible = False
    assert spatial.cast_log is mine
    overlay.delete()
    spatial.cast_log = None
    DebugOverlay(spatial, layers=["boxes"]).delete()
    assert spatial.cast_log is None


def test_a_ray_is_drawn_with_a_mark_at_its_hit(window: Any, world: str) -> None:
    """A ray cast through the processor is drawn from its start to its end in the cast
    colour, with a cross in the hit colour where it enters the box it hits."""
    spatial, ids = make_world([Box(120, 40, 160, 160)])
    overlay = DebugOverlay(spatial, layers=["casts"], colors=COLORS, mark=5)
    hits = spatial.raycast(20, 100, 190, 100)
    assert [e for e, _ in hits] == ids and hits[0][1] == pytest.approx(100 / 170)
    overlay.update()
    frame = render(window, overlay.draw)
    assert overlay.counts["casts"] == 1 and overlay.counts["hits"] == 2
    for x in (30, 60, 90, 180):
        assert frame.near(x, 100, RGB["casts"]), x
    # The cross at x = 120 (t = 100 / 170): its arms reach 5 px along both diagonals.
    assert frame.near(124, 104, RGB["hits"]) and frame.near(116, 96, RGB["hits"])
    assert frame.near(124, 96, RGB["hits"]) and frame.near(116, 104, RGB["hits"])
    assert not frame.near(60, 104, RGB["hits"], reach=2)
    overlay.delete()


def test_a_box_cast_shows_start_end_path_and_hit(window: Any, world: str) -> None:
    """A box cast is drawn as its box at the start and at the end and the path of its
    centre (cast colour), and its box where it first touches each hit (hit colour)."""
    spatial, ids = make_world([Box(100, 20, 110, 180)])
    overlay = DebugOverlay(spatial, layers=["casts"], colors=COLORS, mark=2)
    start = Box(20, 80, 40, 100)
    hits = spatial.cast_box(start, 140, 0)
    assert [e for e, _ in hits] == ids and hits[0][1] == pytest.approx(60 / 140)
    overlay.update()
    frame = render(window, overlay.draw)
    assert overlay.counts["casts"] == 4 + 4 + 1 and overlay.counts["hits"] == 4 + 2
    assert frame.near(20, 90, RGB["casts"])  # the start box's left side
    assert frame.near(180, 90, RGB["casts"])  # the end box's right side
    assert frame.near(70, 90, RGB["casts"])  # the path of the centre
    assert frame.near(90, 80, RGB["hits"]) and frame.near(100, 95, RGB["hits"])  # at t
    overlay.delete()


def test_only_the_last_casts_are_drawn(window: Any, world: str) -> None:
    """With ``casts=n`` the overlay draws the newest n casts of the log, however long the
    log is (a list of the user's own here), and none with ``casts=0``."""
    spatial, _ = make_world([Box(100, 0, 110, 200)])
    spatial.cast_log = []
    for y in range(10, 110, 10):  # ten rays, each through the box: one hit each
        spatial.raycast(0, y, 200, y)
    assert len(spatial.cast_log) == 10
    overlay = DebugOverlay(spatial, layers=["casts"], colors=COLORS, casts=3)
    frame = render(window, overlay.draw)
    assert overlay.counts == {"nodes": 0, "free": 0, "touching": 0, "pairs": 0, "casts": 3,
                              "hits": 6}
    for y in (80, 90, 100):
        assert frame.near(50, y, RGB["casts"])
    for y in (10, 50, 70):
        assert not frame.near(50, y, RGB["casts"])
    overlay.delete()
    overlay = DebugOverlay(spatial, layers=["casts"], colors=COLORS, casts=0)
    assert overlay.counts["casts"] == 0
    overlay.delete()
