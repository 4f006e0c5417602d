"""The example scenes, run headless through the real pyglet renderer (EGL + Mesa llvmpipe).

Each scene renders a few hundred frames with its own command line options, saves its last
frame, and prints its summary line; the tests read the PNG's pixels back (the scene's
colours are there, the frame is not blank), check the summary's counts, and press keys
through pyglet's own event dispatch. Nothing here is skipped: without the headless renderer
the tests fail and say how to install it (scripts/setup-system.sh).

Entity counts are kept small so that the whole file runs in well under half a minute on two
cores with software OpenGL; the full-size scenes are the examples' defaults.
"""

from __future__ import annotations

import gc
import math
import os
import re
import runpy
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import esper  # noqa: E402
import pyglet  # noqa: E402

from ecs_spatial import Box, Position  # noqa: E402

# The tests always render headless; set it before anything touches pyglet.window or pyglet.gl
# (pyglet picks its backend then: see examples/_scaffold.py).
pyglet.options["headless"] = True

SETUP_HINT = "run scripts/setup-system.sh (as root) to install the headless renderer's packages"


def _import(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(name)


@pytest.fixture(scope="module")
def scenes() -> dict[str, ModuleType]:
    """The three scene modules (importing them opens nothing)."""
    return {name: _import(name) for name in ("collisions", "camera", "boids")}


def _create(module: ModuleType, *argv: str) -> Any:
    """The scene, headless; a failure to open the renderer fails the test with the fix."""
    try:
        return module.create(["--headless", *argv])
    except RuntimeError as exc:
        if "headless" in str(exc):
            pytest.fail(f"{exc}\n{SETUP_HINT}", pytrace=False)
        raise


@pytest.fixture
def opened() -> Iterator[list[Any]]:
    """Scenes created by a test; their windows are closed afterwards."""
    created: list[Any] = []
    yield created
    for scene in created:
        scene.app.close()


def _run(module: ModuleType, opened: list[Any], capsys: pytest.CaptureFixture[str],
         *argv: str) -> tuple[Any, dict[str, str]]:
    """Run a scene headless to the end, as ``main`` does; return it and its summary."""
    scene = _create(module, *argv)
    opened.append(scene)
    assert scene.app.run(scene) == 0
    out = capsys.readouterr().out.strip().splitlines()
    return scene, _parse_summary(out[-1], scene.app.name)


def _parse_summary(line: str, name: str) -> dict[str, str]:
    prefix = f"{name}: "
    assert line.startswith(prefix), line
    return dict(field.split("=", 1) for field in line[len(prefix):].split())


def _pixels(path: Path) -> tuple[int, int, Counter[tuple[int, int, int]]]:
    """Width, height and a count of every RGB colour of a PNG, decoded by pyglet."""
    image = pyglet.image.load(str(path)).get_image_data()
    data = image.get_data("RGB", image.width * 3)
    colors: Counter[tuple[int, int, int]] = Counter(
        zip(data[0::3], data[1::3], data[2::3], strict=True)
    )
    return image.width, image.height, colors


def _share(colors: Counter[tuple[int, int, int]], rgb: tuple[int, ...], tol: int = 6) -> float:
    """The fraction of pixels within ``tol`` of the colour ``rgb`` on every channel."""
    total = sum(colors.values())
    near = sum(
        n for c, n in colors.items()
        if abs(c[0] - rgb[0]) <= tol and abs(c[1] - rgb[1]) <= tol and abs(c[2] - rgb[2]) <= tol
    )
    return near / total


def _assert_not_blank(colors: Counter[tuple[int, int, int]]) -> None:
    most, count = colors.most_common(1)[0]
    assert count < 0.97 * sum(colors.values()), f"frame is almost all {most}"
    assert len(colors) > 20, f"only {len(colors)} colours in the frame"


# -- collisions ---------------------------------------------------------------------------------


def test_collisions_renders_and_reports(
    scenes: dict[str, ModuleType], opened: list[Any], capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The headline scene bounces boxes for 200 frames: contacts begin and end, the PNG shows
    the background, walls, free and touching boxes."""
    col = scenes["collisions"]
    png = tmp_path / "collisions.png"
    scene, summary = _run(col, opened, capsys, "--frames", "200", "--boxes", "500",
                          "--size", "640x400", "--fire-every", "60",
                          "--screenshot", str(png))
    assert summary["frames"] == "200"
    assert summary["boxes"] == "500"
    # Three volleys, swept through walls and balls: the summary counts the swept hits, and
    # every bullet of the first two volleys (20 frames at most to cross) was stopped.
    assert summary["fired"] == str(3 * col.VOLLEY)
    assert int(summary["swept_hits"]) == int(summary["collision_swept"]) > 0
    assert int(summary["stopped"]) >= 2 * col.VOLLEY
    assert int(summary["stopped"]) + int(summary["bullets"]) == 3 * col.VOLLEY
    assert int(summary["collision_enter"]) > 100
    assert int(summary["collision_exit"]) > 100
    # Every contact that began and has not ended is a pair now (walls touch walls too).
    assert int(summary["collision_enter"]) - int(summary["collision_exit"]) == len(
        scene.spatial.pairs
    )
    assert float(summary["spatial_ms_mean"]) > 0
    # The events' share (handlers included) is part of the spatial time, not all of it.
    assert 0 < float(summary["spatial_events_ms_mean"]) < float(summary["spatial_ms_mean"])
    # The colours follow the typed handlers: touching boxes are exactly the movers in a
    # pair, and every box has the colour of its state (flashing, touching or free).
    in_pairs = {e for pair in scene.spatial.pairs for e in pair}
    assert int(summary["touching"]) == len(in_pairs.intersection(scene.movers)) > 0
    mesh = scene.mesh
    shown = {e: tuple(mesh.colors[mesh.slot[e] * 24:mesh.slot[e] * 24 + 3]) for e in scene.movers}
    assert shown == {e: scene.colour_of(e) for e in scene.movers}
    assert {col.FLASH, col.TOUCHING, col.FREE} <= set(shown.values())

    width, height, colors = _pixels(png)
    assert (width, height) == (640, 400)
    _assert_not_blank(colors)
    for name in ("BACKGROUND", "WALL", "FREE", "TOUCHING"):
        rgb = getattr(col, name)
        assert _share(colors, rgb) > 0.002, f"no {name} pixels {rgb} in the frame"


def test_collisions_keys(scenes: dict[str, ModuleType], opened: list[Any], tmp_path: Path) -> None:
    """Q, +, -, Space and a click, dispatched through pyglet's window events, do their job."""
    key = pyglet.window.key
    scene = _create(scenes["collisions"], "--boxes", "300", "--size", "640x400")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(5)

    def green() -> int:  # the overlay's node outlines: no box or wall is this green
        png = tmp_path / "overlay.png"
        app.save_screenshot(str(png))
        _, _, colors = _pixels(png)
        return sum(n for (r, g, b), n in colors.items() if g > r + 60 and g > b + 40)

    assert not scene.overlay.visible
    assert green() == 0
    app.press(key.Q)
    nodes = list(scene.spatial.index.nodes())
    assert scene.overlay.visible and scene.overlay.counts["nodes"] == 4 * len(nodes) > 4
    assert scene.overlay.counts["pairs"] == len(scene.spatial.pairs)
    assert green() > 200, "the debug overlay's green node outlines are not in the frame"
    assert "quadtree nodes" in scene.app.hud_text
    app.step(2)  # the overlay follows the frames while shown
    assert scene.overlay.counts["pairs"] == len(scene.spatial.pairs)
    app.press(key.Q)
    assert not scene.overlay.visible
    assert green() == 0

    app.press(key.PLUS)
    assert len(scene.movers) == 800
    app.step(1)
    assert len(scene.spatial.index) == 800 + len(scene.walls)
    app.press(key.MINUS)
    app.press(key.MINUS)
    app.step(1)
    assert len(scene.movers) == 0
    assert len(scene.spatial.index) == len(scene.walls)
    # Every enter got its exit when its box was deleted: the walls touch only each other.
    assert scene.touching() == 0
    assert all(esper.has_component(e, scenes["collisions"].Static)
               for pair in scene.spatial.pairs for e in pair)

    app.window.dispatch_event("on_mouse_press", 320, 200, pyglet.window.mouse.LEFT, 0)
    app.window.dispatch_events()
    assert len(scene.movers) == scenes["collisions"].BURST_SIZE
    app.step(2)

    app.press(key.SPACE)
    before = [scenes["collisions"].box_of(e) for e in scene.movers]
    app.step(3)
    assert [scenes["collisions"].box_of(e) for e in scene.movers] == before
    app.press(key.SPACE)
    app.step(1)
    assert [scenes["collisions"].box_of(e) for e in scene.movers] != before


def _inside(scene: Any, box_of: Any) -> list[int]:
    """The bullets in flight that are outside the arena or overlap a wall or pillar."""
    arena = scene.arena
    bad = []
    for e in scene.bullets:
        b = box_of(e)
        if (b.min_x < arena.min_x or b.min_y < arena.min_y or b.max_x > arena.max_x
                or b.max_y > arena.max_y or any(b.intersects(w) for w in scene.wall_boxes)):
            bad.append(e)
    return bad


def test_collisions_bullets_never_tunnel(scenes: dict[str, ModuleType], opened: list[Any]
                                         ) -> None:
    """F fires bullets at 30 px a frame at walls 12 px thick. With their Continuous
    component each is stopped at the first wall it meets (a swept hit, counted in the HUD);
    after every frame each bullet still in flight is inside the arena, clear of every wall
    and pillar. The same volley with Continuous taken away flies through the walls."""
    col = scenes["collisions"]
    key = pyglet.window.key
    scene = _create(col, "--boxes", "100", "--size", "640x400")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(2)
    app.press(key.F)
    app.step(1)
    app.press(key.F)
    assert len(scene.bullets) == scene.fired == 2 * col.VOLLEY
    for _ in range(25):  # 640 px at 30 px a frame: every bullet meets a wall by then
        app.step(1)
        assert _inside(scene, col.box_of) == []
    assert scene.bullets == set()
    assert scene.stopped == 2 * col.VOLLEY
    assert scene.swept_hits == app.events["collision_swept"] >= col.VOLLEY
    app.step(col._scaffold.HUD_REFRESH_FRAMES)  # the HUD is laid out again
    assert f"swept hits {scene.swept_hits}" in app.hud_text

    # The control: without Continuous the same bullets tunnel out of the arena (11 of 24
    # here: the others happen to end a step overlapping a wall, and stop there).
    app.press(key.F)
    for e in scene.bullets:
        esper.remove_component(e, col.Continuous)
    escaped = set()
    for _ in range(25):
        app.step(1)
        escaped.update(_inside(scene, col.box_of))
    assert len(escaped) >= col.VOLLEY // 4


def _shift_equals(key: Any) -> list[list[tuple[Any, ...]]]:
    """The events of one press of ``+`` (or ``=``), each way pyglet may report it."""
    return [
        # Shift+=, Shift let go first: pyglet's X11 backend presses PLUS, releases EQUAL...
        [("on_key_press", key.PLUS, key.MOD_SHIFT), ("on_text", "+"),
         ("on_key_release", key.EQUAL, 0)],
        # ...so it believes PLUS is still down, and sends the next Shift+= as text alone.
        [("on_text", "+"), ("on_key_release", key.EQUAL, 0)],
        # Shift+= reported as EQUAL with Shift, then its text.
        [("on_key_press", key.EQUAL, key.MOD_SHIFT), ("on_text", "+"),
         ("on_key_release", key.EQUAL, key.MOD_SHIFT)],
        [("on_key_press", key.EQUAL, 0), ("on_text", "="), ("on_key_release", key.EQUAL, 0)],
        [("on_key_press", key.NUM_ADD, 0), ("on_text", "+"),
         ("on_key_release", key.NUM_ADD, 0)],
        # With Ctrl held there is no text at all.
        [("on_key_press", key.PLUS, key.MOD_CTRL), ("on_key_release", key.PLUS, key.MOD_CTRL)],
        # Held down: one key press, the text repeated.
        [("on_key_press", key.PLUS, key.MOD_SHIFT), *[("on_text", "+")] * 4,
         ("on_key_release", key.PLUS, key.MOD_SHIFT)],
    ]


def _minus(key: Any) -> list[list[tuple[Any, ...]]]:
    """The events of one press of ``-``, each way pyglet may report it."""
    return [
        [("on_key_press", key.MINUS, 0), ("on_text", "-"), ("on_key_release", key.MINUS, 0)],
        [("on_text", "-"), ("on_key_release", key.MINUS, 0)],
        [("on_key_press", key.NUM_SUBTRACT, 0), ("on_text", "-"),
         ("on_key_release", key.NUM_SUBTRACT, 0)],
    ]


@pytest.mark.parametrize(
    ("name", "option", "batch"), [("collisions", "--boxes", 500), ("boids", "--boids", 50)]
)
def test_plus_and_minus_once_per_press_however_typed(
    scenes: dict[str, ModuleType], opened: list[Any], name: str, option: str, batch: int
) -> None:
    """Each press of + or - adds or removes one batch, whichever events pyglet sends for it:
    a key press and its text, the text alone, the key press alone, a held key's repeats."""
    key = pyglet.window.key
    scene = _create(scenes[name], option, "10", "--size", "320x240")
    opened.append(scene)
    window = scene.app.window

    def count() -> int:
        return len(scene.movers if name == "collisions" else scene.boids)

    for change, presses in ((batch, _shift_equals(key)), (-batch, _minus(key))):
        for events in presses:
            before = count()
            for event in events:
                window.dispatch_event(*event)
            window.dispatch_events()
            assert count() - before == change, events


def test_collisions_same_seed_same_run(
    scenes: dict[str, ModuleType], opened: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Headless runs use a fixed time step: the same seed gives the same events and state."""
    runs = []
    for _ in range(2):
        scene, summary = _run(scenes["collisions"], opened, capsys, "--frames", "60",
                              "--boxes", "300", "--seed", "7")
        box_of = scenes["collisions"].box_of
        runs.append((summary["collision_enter"], summary["collision_exit"],
                     sorted(scene.spatial.pairs), [box_of(e) for e in scene.movers]))
    assert runs[0] == runs[1]


# -- camera -------------------------------------------------------------------------------------


def test_camera_culls(
    scenes: dict[str, ModuleType], opened: list[Any], capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The camera tours a 10,000-entity world: a visible set with a quad each, on its
    box, from the pool made ready at the start (never grown), and the PNG shows stars,
    ships and the minimap."""
    cam = scenes["camera"]
    png = tmp_path / "camera.png"
    scene, summary = _run(cam, opened, capsys, "--entities", "10000", "--moving", "0.05",
                          "--frames", "200",
                          "--size", "640x400", "--screenshot", str(png))
    total, visible = int(summary["total"]), int(summary["visible"])
    assert total == 10000
    # The tour zoomed out (to 0.43 by now), and what is visible is what lies in the view:
    # its share of the world's area, give or take the clustering of a random world.
    view, world = scene.camera.view(), scene.world
    assert scene.camera.zoom < 0.5
    assert 0.8 < visible / (total * view.area / world.area) < 1.25
    assert int(summary["view_enter"]) > visible  # the tour brought new things into view
    assert int(summary["view_exit"]) > 0
    assert int(summary["view_enter"]) - int(summary["view_exit"]) == visible
    # Exactly the visible entities have quads, each on its box; the other slots are free,
    # quads of zero size; the pool was large enough for the whole tour.
    mesh, index = scene.mesh, scene.spatial.index
    assert set(scene.shown) == set(scene.culling.visible)
    for e, i in mesh.slot.items():
        x0, y0, x1, y1 = index[e]
        assert mesh.corners[i * 12:i * 12 + 12] == [x0, y0, x1, y0, x1, y1, x0, y0, x1, y1, x0, y1]
    assert sorted([*mesh.free, *mesh.slot.values()]) == list(range(mesh.capacity))
    assert all(mesh.corners[i * 12:i * 12 + 12] == [0.0] * 12 for i in mesh.free)
    assert mesh.grown == 0 and int(summary["quads"]) == mesh.capacity

    _, _, colors = _pixels(png)
    _assert_not_blank(colors)
    assert _share(colors, cam.BACKGROUND[:3], tol=3) > 0.5
    assert _share(colors, cam.SHIP) > 0.0002, "no ships in the frame"
    assert _share(colors, (255, 220, 80), tol=10) > 0.0001, "no camera box on the minimap"


#: The most CPU time (this thread's, which other processes do not inflate) a frame of a
#: scene's own tour may take in these tests. A showcase frame fits in 33 ms (60 fps), and the
#: camera's do here (its worst, a jump from the closest zoom to the widest, about 21 ms at
#: the default size); the budget leaves room for a loaded CI machine, and still catches a
#: frame that does per-entity work on the scale of a shape per entity (90 to 140 ms).
FRAME_CPU_BUDGET_MS = 60.0


def _cpu_frame(app: Any) -> float:
    """Step one headless frame (update and draw); its CPU milliseconds."""
    start = time.thread_time()
    app.step(1)
    return (time.thread_time() - start) * 1000.0


def test_camera_tour_frames_stay_within_budget(
    scenes: dict[str, ModuleType], opened: list[Any]
) -> None:
    """The camera's own tour at the default window size and the default world's density
    (30,000 entities here: the visible set is the same as at 100,000): from the first frame
    on (the index is built with the world), zooming out to the widest view, each frame
    within the budget; and so are the jumps a flick of the wheel makes in one frame, from
    the closest zoom to the widest (3,600 entities into view at once) and back."""
    cam = scenes["camera"]
    scene = _create(cam, "--entities", "30000")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    # Run alone, the scene's collector makes its full passes while the world is built and
    # none in the tour; here the garbage of the tests before would bring one into it (50 ms
    # over this process's objects): what is alive now is left out of the collector's passes.
    gc.collect()
    gc.freeze()
    try:
        tour = [_cpu_frame(app) for _ in range(150)]  # 2.5 s: zoom 1.0 out to the widest
        toured_to = scene.camera.zoom
        scene.autopilot = False
        jumps = []
        for zoom in (cam.MAX_ZOOM, cam.MIN_ZOOM) * 2:
            scene.camera.zoom = zoom
            jumps.append(_cpu_frame(app))
            app.step(2)
    finally:
        gc.unfreeze()
    assert toured_to < 0.45
    assert max(tour) < FRAME_CPU_BUDGET_MS, tour
    assert len(scene.culling.visible) > 3000  # the widest view: thousands in view
    assert max(jumps) < FRAME_CPU_BUDGET_MS, jumps
    assert scene.mesh.grown == 0  # the pool made ready at the start was enough


def test_camera_hud_counts_the_culling_events(
    scenes: dict[str, ModuleType], opened: list[Any]
) -> None:
    """The HUD shows real figures from the first frame, and its events share counts the
    time of the CullingProcessor's "view_enter" and "view_exit" handlers (set with
    ``App.on``), as it counts a SpatialProcessor's: a handler that takes 5 ms more makes the
    frame's events 5 ms more."""
    cam = scenes["camera"]
    scene = _create(cam, "--entities", "5000", "--size", "640x400")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(1)
    found = re.search(r"-- fps   spatial ms/frame ([\d.]+) now, ([\d.]+) mean, ([\d.]+) worst "
                      r"\(([\d.]+) in events\)", app.hud_text)
    assert found is not None, app.hud_text
    assert float(found[1]) > 0 and float(found[4]) > 0  # the first frame's enters
    assert f"visible {len(scene.culling.visible):,}" in app.hud_text

    scene.autopilot = False
    slow_calls: list[int] = []

    def slow(e: int) -> None:  # 5 ms, once
        if not slow_calls:
            slow_calls.append(e)
            time.sleep(0.005)

    app.on(cam.VIEW_EXIT, slow)
    scene.camera.zoom = cam.MAX_ZOOM  # most of the view leaves it
    app.step(1)
    assert slow_calls
    events, spatial = app.events_ms.values[-1], app.spatial_ms.values[-1]
    assert 5.0 <= events <= spatial


def test_camera_controls(scenes: dict[str, ModuleType], opened: list[Any]) -> None:
    """An arrow key held down pans the camera (and ends the autopilot); the wheel zooms."""
    key = pyglet.window.key
    scene = _create(scenes["camera"], "--entities", "5000", "--size", "640x400")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(2)
    x0 = scene.camera.x
    app.window.dispatch_event("on_key_press", key.RIGHT, 0)
    app.step(10)
    app.window.dispatch_event("on_key_release", key.RIGHT, 0)
    assert not scene.autopilot
    assert scene.camera.x > x0 + 50
    x1 = scene.camera.x
    app.step(2)
    assert scene.camera.x == x1

    visible_before = len(scene.culling.visible)
    app.window.dispatch_event("on_mouse_scroll", 320, 200, 0, -5)
    app.window.dispatch_events()
    assert scene.camera.zoom < 1.0
    app.step(1)
    assert len(scene.culling.visible) > visible_before
    assert set(scene.shown) == set(scene.culling.visible)


def test_camera_minimap_shows_the_world(
    scenes: dict[str, ModuleType], opened: list[Any], tmp_path: Path
) -> None:
    """Every entity is counted on the minimap, and each of its pixels shows its patch of the
    world: green where a ship is, the empty colour where nothing is, brighter where stars and
    rocks are; the camera's view is outlined on it."""
    cam = scenes["camera"]
    scene = _create(cam, "--entities", "3000", "--moving", "0.05", "--size", "320x240")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(cam.MINIMAP_REFRESH_FRAMES)
    minimap = scene.minimap
    ships = len(esper.get_component(cam.Velocity))
    assert sum(minimap.counts()) == 3000
    assert sum(minimap.ship_counts) == ships > 100
    png = tmp_path / "minimap.png"
    app.save_screenshot(str(png))

    image = pyglet.image.load(str(png)).get_image_data()
    width = image.width
    data = image.get_data("RGB", width * 3)  # rows from the bottom, as the texels are
    side, x0, y0 = minimap.side, round(minimap.x), round(minimap.y)
    seen: Counter[str] = Counter()
    for j in range(1, side - 1):  # inside the 1-pixel frame
        for i in range(1, side - 1):
            k = ((y0 + j) * width + x0 + i) * 3
            rgb = tuple(data[k:k + 3])
            if _near(rgb, cam.MINIMAP_VIEW, 10):
                seen["view"] += 1
                continue
            cell = j * side + i
            if minimap.ship_counts[cell]:
                assert _near(rgb, cam.SHIP, 6), (i, j, rgb)
                seen["ship"] += 1
            elif minimap.static_counts[cell] == 0:
                assert _near(rgb, cam.MINIMAP_EMPTY, 6), (i, j, rgb)
                seen["empty"] += 1
            else:
                assert sum(rgb) > sum(cam.MINIMAP_EMPTY) + 6, (i, j, rgb)
                seen["stars and rocks"] += 1
    assert seen["ship"] > 50 and seen["stars and rocks"] > 1000 and seen["view"] > 10, seen


def test_camera_save_and_load(scenes: dict[str, ModuleType], opened: list[Any]) -> None:
    """F5 saves the game, F9 loads it: right after the load the world is as it was at the
    save (camera, ships, what is visible, a shape for each), and the frames that follow
    repeat those that followed the save exactly: the same positions, the same visible
    set, the same number of view events (none repeated for what was visible)."""
    cam = scenes["camera"]
    key = pyglet.window.key
    scene = _create(cam, "--entities", "4000", "--moving", "0.1", "--size", "320x240")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.press(key.Q)  # the overlay shown across the save and the load
    app.step(5)

    def state() -> tuple[Any, ...]:
        ships = sorted((e, pos.x, pos.y) for e, (pos, _) in
                       esper.get_components(Position, cam.Velocity))
        return (scene.camera.x, scene.camera.y, scene.camera.zoom, ships,
                sorted(scene.culling.visible), scene.spatial.state_hash())

    app.press(key.F5)
    at_save = state()
    events_at_save = dict(app.events)
    app.step(20)
    after = state()
    events_after = {k: app.events[k] - events_at_save.get(k, 0) for k in app.events}
    assert after != at_save and events_after["view_enter"] > 0  # things happened

    app.press(key.F9)
    assert state() == at_save
    assert set(scene.shown) == set(scene.culling.visible)
    assert scene.overlay.visible and scene.overlay.spatial is scene.spatial
    events_at_load = dict(app.events)
    app.step(20)
    assert state() == after
    assert {k: app.events[k] - events_at_load.get(k, 0) for k in app.events} == events_after
    assert set(scene.shown) == set(scene.culling.visible)
    assert app.spatial_ms.values[-1] > 0  # the restored processors are timed
    assert "loaded 1x" in scene.hud()


def _near(rgb: tuple[int, ...], target: tuple[int, ...], tol: int) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(rgb, target, strict=True))


# -- boids --------------------------------------------------------------------------------------


def test_boids_flock(
    scenes: dict[str, ModuleType], opened: list[Any], capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The flock gathers (most boids have neighbours), predators and obstacles are drawn,
    and boids show several neighbour colours."""
    boids = scenes["boids"]
    png = tmp_path / "boids.png"
    _, summary = _run(boids, opened, capsys, "--boids", "200", "--frames", "200",
                      "--size", "640x400", "--screenshot", str(png))
    assert summary["boids"] == "200"
    assert int(summary["with_neighbors"]) > 120
    assert int(summary["proximity_enter"]) > 200
    assert int(summary["proximity_exit"]) > 0
    assert int(summary["swerves"]) > 0  # rays met obstacles, and boids turned away

    _, _, colors = _pixels(png)
    _assert_not_blank(colors)
    assert _share(colors, boids.OBSTACLE_COLOR) > 0.01
    # The HUD's size follows its timings' digits: a predator beneath it is drawn darkened.
    alpha = boids._scaffold.HUD_BACKGROUND[3] / 255
    shaded = tuple(round(c * (1 - alpha)) for c in boids.PREDATOR_COLOR[:3])
    predators = _share(colors, boids.PREDATOR_COLOR, tol=20) + _share(colors, shaded, tol=8)
    assert predators > 0.00005, "no predator in the frame"
    shown = {c for c in map(boids._scaffold.lerp_color, [boids.NEIGHBOR_COLORS] * 13,
                            [i / 12 for i in range(13)])}
    present = [c for c in shown if _share(colors, c, tol=4) > 0.00005]
    assert len(present) >= 3, f"boids show only {present}"


def test_boids_hysteresis(scenes: dict[str, ModuleType], opened: list[Any]) -> None:
    """Boids sense each other with hysteresis: after every frame each boid's neighbours are
    all the boids and predators within VIEW_RADIUS of its centre, and only such ones or
    former neighbours still within EXIT_RADIUS (a brute-force check over every boid). The
    same flock without it (--exit-radius equal to the view radius) sees neighbours flicker
    out and back within a quarter of a second many times more often."""
    boids = scenes["boids"]
    flickers = {}
    for exit_radius in (boids.EXIT_RADIUS, boids.VIEW_RADIUS):
        scene = _create(boids, "--boids", "120", "--size", "480x320", "--seed", "3",
                        "--exit-radius", str(exit_radius))
        opened.append(scene)
        index = scene.spatial.index
        before: dict[int, set[int]] = {}
        for frame in range(150):
            scene.update(1 / 60)  # the world alone: nothing here needs a frame drawn
            if exit_radius == boids.EXIT_RADIUS and frame % 3 == 0:
                sensed = [e for e in index if not esper.has_component(e, boids.Obstacle)]
                for e, prox in esper.get_component(boids.Proximity):
                    assert prox.exit_radius == boids.EXIT_RADIUS
                    cx, cy = index[e].center
                    dist = {o: index[o].distance_to_point(cx, cy) for o in sensed if o != e}
                    near = {o for o, d in dist.items() if d <= boids.VIEW_RADIUS}
                    kept = {o for o in before.get(e, ()) if dist.get(o, math.inf) <= exit_radius}
                    assert near <= set(prox.neighbors) <= near | kept, (frame, e)
            before = {e: set(p.neighbors) for e, p in esper.get_component(boids.Proximity)}
        flickers[exit_radius] = scene.flickers
    assert flickers[boids.VIEW_RADIUS] > 5 * max(flickers[boids.EXIT_RADIUS], 1), flickers


def test_boids_plus_key(scenes: dict[str, ModuleType], opened: list[Any]) -> None:
    """+ adds 50 boids, each with a Proximity and a shape; - takes them away again."""
    key = pyglet.window.key
    scene = _create(scenes["boids"], "--boids", "100", "--size", "640x400")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(3)
    app.press(key.PLUS)
    app.step(3)
    assert len(scene.boids) == 150
    assert len(scene.spatial.index) == 150 + 3 + 4  # boids, predators, obstacles
    assert sum(1 for e in scene.boids if e in scene.triangles) == 150
    app.press(key.MINUS)
    app.step(2)
    assert len(scene.boids) == 100
    assert len(scene.spatial.index) == 100 + 3 + 4


def test_boids_predators_hunt_the_nearest_boid(
    scenes: dict[str, ModuleType], opened: list[Any]
) -> None:
    """A predator heads for the boid nearest to it in the index, past the nearer non-boids
    (itself first of all, at distance 0, and obstacles): ``nearest`` with ``mask=BOID``."""
    boids = scenes["boids"]
    scene = _create(boids, "--boids", "60", "--size", "640x400")
    opened.append(scene)
    scene.app.start(scene)
    scene.app.step(3)
    index = scene.spatial.index
    flock = [e for e in index if esper.has_component(e, boids.Boid)]
    expected = {}
    for e, (pos, _) in esper.get_components(Position, boids.Predator):
        assert index[e].distance_to_point(pos.x, pos.y) == 0.0  # itself, the nearest of all
        expected[e] = min(flock, key=lambda b: (index[b].distance_to_point(pos.x, pos.y), b))
    assert len(expected) == 3
    hunting = esper.get_processor(boids.PredatorProcessor)
    assert hunting is not None
    hunting.process(1 / 60)
    for e, hunter in esper.get_component(boids.Predator):
        assert hunter.target == expected[e]


def _inside_obstacles(scene: Any, boids: ModuleType) -> dict[int, float]:
    """Every boid and predator whose box overlaps an obstacle's inside (touching is not
    inside), with how deep its box is in."""
    deep: dict[int, float] = {}
    for e, (pos, _) in esper.get_components(Position, boids.Sight):
        half = (boids.PREDATOR_SIZE if esper.has_component(e, boids.Predator)
                else boids.BOID_SIZE) / 2
        for o in scene.obstacles:
            depth = min(pos.x + half - o.min_x, o.max_x - pos.x + half,
                        pos.y + half - o.min_y, o.max_y - pos.y + half)
            if depth > 1e-9:  # touching, to the rounding of the face's coordinate
                deep[e] = max(deep.get(e, 0.0), depth)
    return deep


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_boids_never_enter_an_obstacle(
    scenes: dict[str, ModuleType], opened: list[Any], seed: int
) -> None:
    """The flock steers round the obstacles and never enters one: after every frame of a
    300-frame run (a small window, so thin obstacles and a crowded flock, with extra
    predators to scatter it), no boid's or predator's box overlaps an obstacle's inside.
    The flock stays one (most boids have neighbours), the rays of boids and predators met
    obstacles, and the push away from the surface does the steering: the stop at the
    surface (``bumps``) is a guarantee, seldom needed."""
    boids = scenes["boids"]
    scene = _create(boids, "--boids", "120", "--predators", "6", "--size", "480x320",
                    "--seed", str(seed))
    opened.append(scene)
    swerved: set[int] = set()  # predators that saw an obstacle ahead
    for frame in range(300):
        scene.update(1 / 60)  # the world alone: nothing here needs a frame drawn
        assert _inside_obstacles(scene, boids) == {}, f"seed {seed}, frame {frame}"
        swerved.update(e for e, (sight, _) in esper.get_components(boids.Sight, boids.Predator)
                       if sight.avoid_x or sight.avoid_y)
    assert swerved
    stats = scene.app.stats
    assert int(stats["with_neighbors"]) > 100 and float(stats["mean_neighbors"]) > 5
    assert stats["swerves"] > 100
    assert stats["bumps"] <= 10


def test_boids_enter_obstacles_without_the_push_and_the_stop(
    scenes: dict[str, ModuleType], opened: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control for the test above: with the look-ahead ray's swerve alone (the scene's
    steering before the push and the stop), boids fly into the obstacles, several pixels
    deep."""
    boids = scenes["boids"]

    def plain_move(blocks: Any, pos: Any, vel: Any, dt: float, half: float) -> int:
        pos.x += vel.vx * dt
        pos.y += vel.vy * dt
        return 0

    monkeypatch.setattr(boids, "repel", lambda *_: (0.0, 0.0))
    monkeypatch.setattr(boids, "move_clear", plain_move)
    scene = _create(boids, "--boids", "120", "--predators", "6", "--size", "480x320")
    opened.append(scene)
    deepest = 0.0
    for _ in range(300):
        scene.update(1 / 60)
        deepest = max([deepest, *_inside_obstacles(scene, boids).values()])
    assert deepest > 5.0


def test_move_clear_stops_at_the_face_it_would_cross() -> None:
    """The stop at the surface, from every side and corner, at any speed (a move many times
    the obstacle's thickness stops at it too): the body ends touching the face it came to,
    the velocity keeps only its part along that face; a body inside is put out the shortest
    way; a move that passes by is left alone."""
    import boids

    wall = Box(100, 100, 140, 120)
    half = 3.0
    for x0, y0, vx, vy, end, velocity in [
        (90, 110, 600, 0, (97, 110), (0, 0)),          # from the left, head on
        (150, 110, -600, 30, (143, 113), (0, 30)),     # from the right, sliding up
        (120, 90, 20, 2400, (122, 97), (20, 0)),       # from below, 10 times the wall's height
        (120, 130, 0, -600, (120, 123), (0, 0)),       # from above
        (95, 95, 100, 60, (105, 97), (100, 0)),        # a corner, the y face crossed last
        (95, 95, 60, 100, (97, 105), (0, 100)),        # a corner, the x face crossed last
        (110, 101, 0, 0, (110, 97), (0, 0)),           # inside: out by the nearer face
    ]:
        pos = Position(x0, y0)
        vel = boids.Velocity(vx, vy)
        assert boids.move_clear([wall], pos, vel, 0.1, half) == 1, (x0, y0)
        assert (round(pos.x, 2), round(pos.y, 2)) == end, (x0, y0, pos)
        assert (vel.vx, vel.vy) == velocity, (x0, y0)
        body = Box(pos.x - half, pos.y - half, pos.x + half, pos.y + half)
        assert body.intersects(wall)  # touching it...
        assert min(body.max_x - wall.min_x, wall.max_x - body.min_x,
                   body.max_y - wall.min_y, wall.max_y - body.min_y) <= 1e-9  # ...not in it
    for x0, y0, vx, vy in [(50, 50, 100, 0), (90, 90, 0, 600), (97, 90, 0, 600),
                           (90, 124, 600, 0), (143, 110, 100, 100)]:
        pos, vel = Position(x0, y0), boids.Velocity(vx, vy)  # by it, or along a face
        assert boids.move_clear([wall], pos, vel, 0.1, half) == 0, (x0, y0)
        assert (pos.x, pos.y, vel.vx, vel.vy) == (x0 + vx / 10, y0 + vy / 10, vx, vy)


# -- all scenes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "argv"),
    [("collisions", ("--boxes", "200")), ("boids", ("--boids", "60")),
     ("camera", ("--entities", "5000"))],
)
def test_q_shows_and_hides_the_debug_overlay(
    scenes: dict[str, ModuleType], opened: list[Any], tmp_path: Path, name: str,
    argv: tuple[str, ...]
) -> None:
    """Q shows the scene's DebugOverlay, drawn in the frame (the same world state shows
    more pixels in the overlay's colours), and Q again gives back the very same frame; the
    boids' overlay draws their rays, the camera's only what is in view."""
    key = pyglet.window.key
    scene = _create(scenes[name], *argv, "--size", "320x240")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(4)
    overlay = scene.overlay
    assert app.overlay is overlay and not overlay.visible

    def shot(label: str) -> bytes:
        png = tmp_path / f"{label}.png"
        app.save_screenshot(str(png))  # the current state drawn again: no frame stepped
        image = pyglet.image.load(str(png)).get_image_data()
        return bytes(image.get_data("RGB", image.width * 3))

    app.press(key.Q)
    app.press(key.Q)  # Q lays the HUD out again: compare frames laid out by it
    hidden = shot("hidden")
    app.press(key.Q)
    assert overlay.visible
    counts = overlay.counts
    assert counts["free"] + counts["touching"] > 0
    shown = shot("shown")
    changed = sum(1 for i in range(0, len(shown), 3) if shown[i:i + 3] != hidden[i:i + 3])
    assert changed > 200, changed
    if name == "camera":  # the nodes in view too (index.nodes(view)), not every node
        view = scene.camera.view()
        index = scene.spatial.index
        in_view = index.query(view)
        assert counts["free"] + counts["touching"] == 4 * len(in_view)
        nodes = [n for n in index.nodes() if n.box.intersects(view)]
        assert 0 < counts["nodes"] == 4 * len(nodes) < 4 * len(list(index.nodes()))
    app.press(key.Q)
    assert not overlay.visible
    assert shot("hidden-again") == hidden
    if name == "boids":  # the look-ahead rays of the frames since Q: one line each
        assert scene.spatial.cast_log is None  # not recorded while hidden
        app.press(key.Q)
        app.step(2)
        log = scene.spatial.cast_log
        assert log is not None and len(log) > 10
        assert overlay.counts["casts"] == len(log)


def test_hud_and_summary_show_the_same_timing(
    scenes: dict[str, ModuleType], opened: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The last frame's HUD and the summary line show the same frame rate, spatial mean,
    worst frame and events share: one definition (App.timing) for both."""
    scene, summary = _run(scenes["boids"], opened, capsys, "--boids", "30", "--frames", "70",
                          "--size", "320x240")
    hud = scene.app.hud_text
    shown = {
        "fps": r"([\d.]+) fps",
        "spatial_ms_mean": r"([\d.]+) mean",
        "spatial_ms_worst": r"([\d.]+) worst",
        "spatial_events_ms_mean": r"([\d.]+) in events",
    }
    for field, pattern in shown.items():
        found = re.search(pattern, hud)
        assert found is not None, f"no {field} in the HUD: {hud!r}"
        assert found.group(1) == summary[field], (field, hud, summary)
    assert float(summary["fps"]) > 0


# -- flock: the array path -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def flock() -> ModuleType:
    """examples/flock.py, which needs numpy (the examples and test extras have it)."""
    pytest.importorskip("numpy", reason="examples/flock.py needs numpy: the examples extra")
    return _import("flock")


def _frame(scene: Any) -> Any:
    """The scene alone (no HUD) drawn now, read back as a numpy array of RGB rows, the
    bottom row first: ``frame[y, x]`` is the pixel of world point ``(x, y)``."""
    import numpy as np

    app = scene.app
    app.window.switch_to()
    app.window.clear()
    scene.draw()
    buffer = pyglet.image.get_buffer_manager().get_color_buffer()
    image = buffer.get_image_data()  # type: ignore[no-untyped-call]
    data = image.get_data("RGB", image.width * 3)
    return np.frombuffer(data, dtype=np.uint8).reshape(image.height, image.width, 3)


def _lit(frame: Any, background: tuple[int, ...]) -> Any:
    """Where the frame is not the background."""
    import numpy as np

    return np.abs(frame.astype(np.int16) - np.array(background[:3])).max(axis=2) > 8


def test_flock_draws_every_boid_where_its_row_says(
    flock: ModuleType, opened: list[Any], capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """The flock gathers (most boids have neighbours); in the frame, the pixel under each
    boid's position (its array row) is drawn, and every pixel drawn lies within a
    triangle's reach of a boid the index holds, by the minimum-image distance (the images
    across the seams included): one vertex list, filled from the arrays, nothing else."""
    import numpy as np

    png = tmp_path / "flock.png"
    scene, summary = _run(flock, opened, capsys, "--boids", "1000", "--frames", "30",
                          "--size", "480x300", "--screenshot", str(png))
    assert summary["boids"] == "1000"
    assert int(summary["with_neighbors"]) > 800
    assert float(summary["neighbours_ms_mean"]) > 0 and float(summary["steer_ms_mean"]) > 0
    _, _, colors = _pixels(png)
    _assert_not_blank(colors)
    shown = [c for c in map(flock._scaffold.lerp_color, [flock.NEIGHBOR_COLORS] * 17,
                            [i / 16 for i in range(17)])]
    assert sum(_share(colors, c, tol=4) > 0.0005 for c in shown) >= 3

    n = scene.count
    assert len(scene.spatial.index) == n
    pos = scene.pos[:n]
    half = flock.BOX_SIZE / 2
    for e, row in zip(scene.entities, range(n), strict=True):  # the rows are the boxes
        box = scene.spatial.index[e]  # its min corner moved into the period
        x, y = np.mod(pos[row] - half, scene.period)
        assert (box.min_x, box.min_y) == pytest.approx((x, y), abs=1e-9)
    lit = _lit(_frame(scene), flock.BACKGROUND)
    xs, ys = np.floor(pos).astype(int).T
    assert lit[ys, xs].all(), "a boid's own pixel is not drawn"
    ly, lx = np.nonzero(lit)
    centres = np.column_stack([lx + 0.5, ly + 0.5]).astype(np.float64)
    offsets, _ = scene.spatial.index.query_radius_many(centres, 0.6 * flock.LENGTH)
    assert (np.diff(np.frombuffer(offsets, dtype=np.int64)) > 0).all(), "drawn, yet no boid"
    assert scene.mesh.images > 0  # some boids were near a seam: drawn on both sides


def _place(scene: Any, spots: list[tuple[float, float]]) -> None:
    """Put the scene's boids at ``spots``, all heading right, and bring the index up to date
    (the rows written, the SpatialProcessor run once): no step of the flock."""
    n = len(spots)
    assert scene.count == n
    scene.pos[:n] = spots
    scene.vel[:n] = (60.0, 0.0)
    scene.write_rows()
    scene.spatial.process()


def test_flock_across_the_seams(flock: ModuleType, opened: list[Any]) -> None:
    """A boid across the right seam is drawn on both sides of it, one across the top seam
    on both sides of that, one across both in all four corners; the debug overlay (Q) draws
    each box as its pieces in the period (two, two, four, and one for a boid inside) and
    the one pair, made across the seam, then hides again leaving the very frame it found."""
    import numpy as np

    key = pyglet.window.key
    scene = _create(flock, "--boids", "5", "--size", "320x200")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    w, h = 320.0, 200.0
    # On the right seam, on the top seam, on both (the corner), inside, and one just short
    # of the right seam: its box (BOX_SIZE wide) touches the first one's across the seam.
    _place(scene, [(0.0, 100.0), (160.0, 0.0), (0.0, 0.0), (60.0, 60.0), (w - 1.5, 100.0)])
    lit = _lit(_frame(scene), flock.BACKGROUND)

    def drawn(x0: int, x1: int, y0: int, y1: int) -> bool:
        return bool(lit[y0:y1, x0:x1].any())

    # The boid on the right seam points right: its nose (0.6 * LENGTH ahead) is drawn on
    # the left edge, its tail on the right edge.
    assert drawn(0, 3, 98, 103) and drawn(317, 320, 98, 103)
    assert drawn(155, 166, 0, 3) and drawn(155, 166, 197, 200)  # the top seam: both sides
    for x0, y0 in ((0, 0), (317, 0), (0, 197), (317, 197)):  # both seams: four corners
        assert drawn(x0, x0 + 3, y0, y0 + 3), (x0, y0)
    ly, lx = np.nonzero(lit)  # and nothing else: every pixel drawn is near a boid
    near = [min(math.dist((x + 0.5 - dx, y + 0.5 - dy), spot) for spot in scene.pos[:5]
                for dx in (-w, 0, w) for dy in (-h, 0, h)) for x, y in zip(lx, ly, strict=True)]
    assert max(near) <= 0.6 * flock.LENGTH
    assert scene.mesh.drawn == 5 + 1 + 1 + 3 + 1  # each boid, and its images

    assert scene.spatial.pairs == {(scene.entities[0], scene.entities[4])}  # across the seam
    hidden = _frame(scene)
    app.press(key.Q)
    overlay = scene.overlay
    assert overlay.visible
    counts = overlay.counts
    # Four sides to each piece: two, two, four, one and one pieces; those of the pair's
    # boxes (three) touching.
    assert counts["free"] + counts["touching"] == 4 * (2 + 2 + 4 + 1 + 1)
    assert counts["touching"] == 4 * (2 + 1) and counts["pairs"] == 1
    shown = _frame(scene).astype(int)
    free = np.abs(shown - overlay.colors.free[:3]).max(axis=2) <= 8
    for x0, y0 in ((0, 0), (316, 0), (0, 196), (316, 196)):  # the corner box's four pieces
        assert free[y0:y0 + 4, x0:x0 + 4].any(), (x0, y0)
    touching = np.abs(shown - overlay.colors.touching[:3]).max(axis=2) <= 8
    assert touching[98:103, 0:3].any() and touching[98:103, 317:320].any()
    app.press(key.Q)
    assert not overlay.visible
    assert (_frame(scene) == hidden).all()


def test_flock_steers_by_the_neighbours_across_the_seams(flock: ModuleType) -> None:
    """One step of the flock, checked against a model that sums over every other boid
    within VIEW_RADIUS by the minimum-image distance, boid by boid, on a torus small
    enough for many neighbours to lie across a seam; the candidates from the scene's
    NeighbourArrays (rows made in entity order, and in another) and every boid as a
    candidate (then filtered) give the same step."""
    import numpy as np

    width, height = 90.0, 60.0
    rng = np.random.default_rng(5)
    n = 120
    pos = rng.random((n, 2)) * (width, height)
    vel = rng.normal(0.0, 50.0, (n, 2))
    esper.switch_world("flock-steer-test")
    try:
        boxes = np.empty((n, 4))
        half = flock.BOX_SIZE / 2
        boxes[:, :2], boxes[:, 2:] = pos - half, pos + half
        spatial = flock.SpatialProcessor(wrap=Box(0, 0, width, height), events=())
        nb = flock.NeighbourArrays(spatial, flock.QUERY_RADIUS)
        esper.add_processor(spatial, priority=1)
        esper.add_processor(nb)
        array = flock.BoxArray(boxes)
        entities = [esper.create_entity(array.row(i)) for i in range(n)]
        esper.process()
        offsets, rows = flock.neighbours(nb, array, n)
        # rows made in another order than the entities: the lists put in row order
        for e in entities[:n // 2]:
            esper.delete_entity(e, immediate=True)
        reversed_rows = [esper.create_entity(array.row(i)) for i in reversed(range(n // 2))]
        esper.process()
        again = flock.neighbours(nb, array, n)
        assert reversed_rows and len(nb.watchers) == n
    finally:
        esper.switch_world("default")
        esper.delete_world("flock-steer-test")
    every = (np.arange(n + 1) * n, np.tile(np.arange(n), n))

    def model() -> tuple[Any, Any, list[int]]:
        p, v = pos.copy(), vel.copy()
        counts, acc = [], np.zeros((n, 2))
        for i in range(n):
            d = pos - pos[i]
            d -= (width, height) * np.round(d / (width, height))
            d2 = (d * d).sum(axis=1)
            near = [j for j in range(n) if j != i and d2[j] <= flock.VIEW_RADIUS ** 2]
            counts.append(len(near))
            if near:
                acc[i] += flock.COHESION * d[near].mean(axis=0)
                acc[i] += flock.ALIGNMENT * (vel[near].mean(axis=0) - vel[i])
            for j in near:
                if d2[j] < flock.SEPARATION_RADIUS ** 2:
                    acc[i] -= flock.SEPARATION * d[j] / max(d2[j], 1e-6)
        v += acc / 60
        speed = np.hypot(v[:, 0], v[:, 1])
        v *= (np.clip(speed, flock.MIN_SPEED, flock.MAX_SPEED) / speed)[:, None]
        p = np.mod(p + v / 60, (width, height))
        return p, v, counts

    want_pos, want_vel, want_counts = model()
    for candidates, of in ((offsets, rows), again, every):
        p, v = pos.copy(), vel.copy()
        counts = flock.steer(p, v, candidates, of, (width, height), 1 / 60)
        assert counts.tolist() == want_counts
        assert np.allclose(v, want_vel, rtol=1e-9, atol=1e-9)
        assert np.allclose(p, want_pos, rtol=1e-9, atol=1e-9)
    assert sum(want_counts) > 4 * n  # a crowd, not a few strays
    d = pos[:, None, :] - pos[None, :, :]  # without the seams: fewer neighbours
    in_plain_world = int(((d * d).sum(axis=2) <= flock.VIEW_RADIUS ** 2).sum()) - n
    assert sum(want_counts) > in_plain_world


def test_flock_plus_and_minus(flock: ModuleType, opened: list[Any]) -> None:
    """+ adds STEP boids (new rows: the arrays grow, the BoxArray is rebound), - takes them
    away (their entities deleted); the index follows, and every boid is drawn."""
    key = pyglet.window.key
    scene = _create(flock, "--boids", "300", "--size", "320x200")
    opened.append(scene)
    app = scene.app
    app.start(scene)
    app.step(2)
    app.press(key.PLUS)
    app.step(2)
    assert scene.count == 300 + flock.STEP == len(scene.spatial.index)
    assert len(scene.array) >= scene.count and scene.array.buffer is scene.boxes
    assert scene.mesh.drawn >= scene.count
    assert set(scene.spatial.index) == set(scene.entities)
    app.press(key.MINUS)
    app.step(2)
    assert scene.count == 300 == len(scene.spatial.index)
    assert set(scene.spatial.index) == set(scene.entities)
    assert scene.mesh.drawn >= 300


# -- the command line, as a user runs it --------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
    return env


def test_command_line_headless(tmp_path: Path) -> None:
    """`python examples/collisions.py --headless ...` exits 0, prints one summary line and
    writes the PNG."""
    png = tmp_path / "cli.png"
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "collisions.py"), "--headless", "--frames", "30",
         "--boxes", "200", "--size", "320x200", "--screenshot", str(png)],
        capture_output=True, text=True, timeout=120, env=_env(), check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:] + f"\n{SETUP_HINT}"
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("collisions: frames=30 "), result.stdout
    width, height, colors = _pixels(png)
    assert (width, height) == (320, 200)
    _assert_not_blank(colors)


def test_import_opens_nothing() -> None:
    """Importing the scenes and building their worlds needs no window: pyglet.window is not
    even imported (which is what lets --headless be decided in main())."""
    code = (
        "import sys, random, esper\n"
        "import collisions, camera, boids\n"
        "from ecs_spatial import Box\n"
        "walls = collisions.build_walls(640, 400)\n"
        "camera.build_world(random.Random(1), Box(0, 0, 1000, 1000), 500, 0.1)\n"
        "obstacles = boids.build_obstacles(Box(0, 0, 640, 400))\n"
        "assert len(walls) > 20 and len(obstacles) == 4\n"
        "assert 'pyglet.window' not in sys.modules, 'a window module was loaded'\n"
        "assert 'pyglet.gl' not in sys.modules, 'OpenGL was loaded'\n"
        "print('ok')\n"
    )
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(EXAMPLES)])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, env=env, check=False, cwd=EXAMPLES)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_setup_script_finds_the_renderer_packages() -> None:
    """scripts/setup-system.sh --check agrees that the headless renderer is installed (it
    exits 1 and names what is missing otherwise), and says so without calling apt."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup-system.sh"), "--check"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, f"{result.stdout}{result.stderr}\n{SETUP_HINT}"


# -- the screenshots -----------------------------------------------------------------------------


def test_screenshots_script_makes_every_scene_picture(tmp_path: Path) -> None:
    """scripts/screenshots.py runs each scene headless and writes its picture: run here at a
    small size and for a few frames, so that it cannot go stale. The pictures of scenes that
    the README and the site show are exactly those it makes (docs/bench.png, the benchmark
    suite's plot, apart)."""
    script = ROOT / "scripts" / "screenshots.py"
    result = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path), "--size", "320x200",
         "--frames", "3", "--quick"],
        capture_output=True, text=True, timeout=300, env=_env(), check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:] + f"\n{SETUP_HINT}"
    shots = runpy.run_path(str(script))["SHOTS"]
    for scene in shots:
        width, height, colors = _pixels(tmp_path / f"{scene}.png")
        assert (width, height) == (320, 200), scene
        assert len(colors) > 20, f"{scene}: only {len(colors)} colours"
    assert len(result.stdout.splitlines()) == len(shots)
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    shown = {Path(m).stem for page in pages
             for m in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", page.read_text())}
    assert shown - {"bench"} == set(shots)
    assert all((ROOT / "docs" / f"{scene}.png").is_file() for scene in shots)


# -- examples/minimal.py: the getting-started program --------------------------------------------


def _minimal(*argv: str, env: dict[str, str] | None = None) -> tuple[list[str], set[str]]:
    """Run ``python -X importtime examples/minimal.py ARGV`` as a reader would and check that
    it exits 0 and prints contacts, each ``frame N: A and B touch|part``, in frame order, each
    pair touching then parting in turn and apart at the end. Return its lines, and the
    modules it imported (``-X importtime`` lists them on stderr)."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", str(EXAMPLES / "minimal.py"), *argv],
        capture_output=True, text=True, timeout=120, env=env or _env(), check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    touching: set[tuple[int, int]] = set()
    last_frame = 0
    for line in lines:
        m = re.fullmatch(r"frame +(\d+): (\d+) and (\d+) (touch|part)", line)
        assert m, line
        frame, pair, touch = int(m[1]), (int(m[2]), int(m[3])), m[4] == "touch"
        assert frame >= last_frame and pair[0] < pair[1], line
        assert (pair in touching) != touch, f"{line}: out of turn"
        (touching.add if touch else touching.discard)(pair)
        last_frame = frame
    assert not touching, f"still touching after the last frame: {touching}"
    imported = {row.rsplit("|", 1)[-1].strip() for row in result.stderr.splitlines()}
    return lines, imported


def test_minimal_runs_headless_and_prints_every_contact() -> None:
    """`python examples/minimal.py` exits 0 without importing pyglet, and prints each of the
    three pairs touching, then parting."""
    lines, imported = _minimal()
    assert not {name for name in imported if name.startswith("pyglet")}
    assert sorted(line.split(": ")[1] for line in lines) == [
        f"{pair} {what}" for pair in ("1 and 2", "1 and 3", "2 and 3") for what in ("part", "touch")
    ]


def test_minimal_window_draws_the_same_frames() -> None:
    """`--window` runs the same loop through a pyglet window (headless here: EGL) and prints
    the same lines."""
    env = _env()
    env["PYGLET_HEADLESS"] = "1"
    lines, imported = _minimal("--window", env=env)
    assert "pyglet.window" in imported
    assert lines == _minimal()[0]
