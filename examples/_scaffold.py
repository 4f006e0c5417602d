"""What every example scene shares, and nothing else: the command line, the window (real or
headless), the frame loop with its fixed time step, the HUD label, the timing of the spatial
processors, the screenshot and the one-line summary.

A scene is an object with three methods, and the scene module builds it in the open::

    class Scene:
        def update(self, dt: float) -> None: ...   # one step of the world: esper.process(dt)
        def draw(self) -> None: ...                # draw the world's batch
        def hud(self) -> str: ...                  # the HUD's text, refreshed a few times a second

    def main(argv=None):
        app = App("collisions", parse_args(parser(__doc__), argv), "Collisions")
        scene = CollisionScene(app)                # world building, handlers, processors
        return app.run(scene)

A scene binds its keys that type a character (``+``, ``-``, ``q``, space) with
:meth:`App.bind` rather than reading them in an ``on_key_press`` of its own: pyglet reports
such a key as a key press and as text, and sometimes as text alone (see :class:`Commands`).

Why the care about imports. pyglet picks its platform backend (X11 or headless EGL) when
``pyglet.window`` or ``pyglet.gl`` is first imported, so ``--headless`` must be known before
that happens. ``import pyglet`` and ``from pyglet import shapes`` are safe at module level:
pyglet hands out lazy module proxies that load on first use. ``from pyglet.window import key``
at module level is not (it loads the X11 backend and fails on a machine without a screen):
scenes reach the key codes as ``pyglet.window.key`` inside their handlers.

Headless mode (``--headless``) renders offscreen through pyglet's EGL backend and Mesa's
software rasteriser (``scripts/setup-system.sh`` installs what it needs on Debian). It runs
``--frames`` frames, each with the same time step ``dt = 1/60``, on a pyglet clock that is
driven by the frame count instead of the wall clock: the same seed gives the same run.

The summary line, printed once at the end, is ``key=value`` pairs that the tests parse::

    collisions: frames=300 spatial_ms_mean=1.92 spatial_ms_worst=3.10 ... fps=71.4 ...

Its frame rate and milliseconds are the HUD's, from one definition (:meth:`App.timing`), so
the last frame's HUD and the summary line show the same figures.
"""

from __future__ import annotations

import argparse
import math
import pickle
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, Protocol

import esper
import pyglet

from ecs_spatial import FrameTimings, SpatialProcessor
from ecs_spatial.pyglet_debug import DebugOverlay  # imports pyglet alone: safe here
from ecs_spatial.saving import collector_paused, restore_world, save_world

__all__ = [
    "FIXED_DT",
    "MAX_DT",
    "App",
    "Commands",
    "FrameTimes",
    "Scene",
    "Timing",
    "lerp_color",
    "parse_args",
    "parser",
]

FIXED_DT = 1.0 / 60.0
"""The time step of every headless frame, and the rate at which windowed scenes are updated."""

MAX_DT = 1.0 / 30.0
"""In a window, a slow frame advances the world by at most this much: the world slows down
rather than letting fast boxes jump through thin walls."""

HUD_REFRESH_FRAMES = 15
"""The HUD text is laid out again every this many frames: relaying a pyglet Label costs about
half a millisecond, too much to spend on every frame for digits nobody can read at 60 Hz.
The first frames are the exception: the HUD is laid out after each of them, so that it shows
the figures of the frames run so far from the first frame on."""

HUD_BACKGROUND = (0, 0, 0, 160)
"""The HUD's backing: black at alpha 160, so that the world shows, darkened, beneath it."""

SETUP_HINT = "run scripts/setup-system.sh (as root) to install the headless renderer's packages"


class Scene(Protocol):
    """What :meth:`App.run` asks of a scene."""

    def update(self, dt: float) -> None:
        """Advance the world by ``dt`` seconds (usually: ``esper.process(dt)``)."""

    def draw(self) -> None:
        """Draw the world (the HUD is drawn by the App, on top)."""

    def hud(self) -> str:
        """The HUD text: a few short lines."""


def parser(description: str | None, **defaults: Any) -> argparse.ArgumentParser:
    """The options every scene takes; the scene adds its own and may override defaults.

    ``description`` is usually the scene module's docstring, so ``--help`` shows the
    controls.
    """
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--headless",
        action="store_true",
        help="render offscreen (EGL), with a fixed time step, then print a summary and exit",
    )
    p.add_argument(
        "--frames",
        type=int,
        default=None,
        metavar="N",
        help="stop after N frames (headless default: 300; windowed default: run until closed)",
    )
    p.add_argument(
        "--screenshot", metavar="FILE.png", help="save the last frame as a PNG image"
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of the world (default: 1)")
    p.add_argument(
        "--size",
        type=_size,
        default=(960, 600),
        metavar="WxH",
        help="window size in pixels (default: 960x600)",
    )
    p.set_defaults(**defaults)
    return p


def parse_args(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv`` (``sys.argv[1:]`` when ``None``) and fill in the frame count default."""
    args = p.parse_args(argv)
    if args.frames is None and args.headless:
        args.frames = 300
    if args.frames is not None and args.frames < 1:
        p.error("--frames must be at least 1")
    return args


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, got {text!r}") from None
    if w < 64 or h < 64:
        raise argparse.ArgumentTypeError(f"window too small: {text}")
    return w, h


class FrameTimes:
    """Durations in milliseconds, one per frame: the mean, the worst and a recent mean.

    The first frame is kept apart (``first``): it inserts the whole world into the index and
    would otherwise stand as the "worst" steady frame.
    """

    __slots__ = ("first", "values")

    def __init__(self) -> None:
        self.first: float | None = None
        self.values: list[float] = []

    def add(self, ms: float) -> None:
        if self.first is None:
            self.first = ms
        else:
            self.values.append(ms)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values) if self.values else (self.first or 0.0)

    @property
    def worst(self) -> float:
        return max(self.values) if self.values else (self.first or 0.0)

    def recent(self, n: int = 60) -> float:
        """The mean of the last ``n`` frames."""
        tail = self.values[-n:]
        return statistics.fmean(tail) if tail else (self.first or 0.0)


class Timing(NamedTuple):
    """The run's timing so far, as the HUD and the summary line both show it (see
    :meth:`App.timing`): every figure leaves the first frame out."""

    fps: float
    """Frames drawn per second of wall-clock time, over every interval between two frames
    drawn: in a window, the rate the screen shows; headless, where frames run back to back,
    the rate the work of a frame allows."""
    spatial_ms_mean: float
    """The timed processors' milliseconds per frame (see :meth:`App.time_processors`)."""
    spatial_ms_worst: float
    """The slowest frame's: the worst frame, as far as the spatial work goes."""
    events_ms_mean: float
    """The part of ``spatial_ms_mean`` spent dispatching events, handlers included."""

    def fields(self) -> dict[str, str]:
        """The figures as the summary line prints them; the HUD prints the same strings."""
        return {
            "fps": f"{self.fps:.1f}",
            "spatial_ms_mean": f"{self.spatial_ms_mean:.2f}",
            "spatial_ms_worst": f"{self.spatial_ms_worst:.2f}",
            "spatial_events_ms_mean": f"{self.events_ms_mean:.2f}",
        }


def _typed_by(symbol: int) -> str | None:
    """The character the key ``symbol`` types without Shift, or None. pyglet's key symbols
    are X11 keysyms on every platform: a printable ASCII key is its character's code
    (``key.PLUS == ord("+")``), a keypad key is its character's code plus 0xff80
    (``key.NUM_ADD == 0xffab``, ``key.NUM_0 == 0xffb0``)."""
    if 0x20 <= symbol < 0x7F:
        return chr(symbol)
    if 0xFFAA <= symbol <= 0xFFB9 or symbol in (0xFF80, 0xFFBD):  # keypad * + , - . / 0-9 space =
        return chr(symbol - 0xFF80)
    return None


class Commands:
    """Commands bound to the characters that type them, each run once per key press.

    pyglet reports a key that types a character in two events: ``on_key_press(symbol,
    modifiers)``, then ``on_text(text)``. Either may come alone. The text comes alone when
    pyglet's X11 backend thinks the key is still down: Shift+= is pressed as ``key.PLUS`` and,
    if Shift goes up first, released as ``key.EQUAL``, so PLUS stays in its set of held keys and
    every later Shift+= sends only ``on_text("+")``; the text comes alone too from an input
    method, or from a key pyglet has no symbol for. The key press comes alone with Ctrl or
    Alt held (no text then), and from a test that presses keys by hand.

    So both events run the command, and the first one to run it holds it until a key is
    released: the text that follows its key press, and the text a held key repeats, run
    nothing more. Any release lets go of every command, as the release of Shift+= may carry
    either symbol. Characters bound to the same command object share its hold (bind ``+``
    and ``=`` together, so that Shift+= reported as ``key.EQUAL`` then ``"+"`` runs once).
    """

    # pyglet, like esper, keeps the handlers of an object by weak reference: the App keeps
    # its Commands.
    __slots__ = ("__weakref__", "_held", "commands")

    def __init__(self) -> None:
        self.commands: dict[str, Callable[[], object]] = {}
        self._held: set[Callable[[], object]] = set()

    def bind(self, characters: str, command: Callable[[], object]) -> None:
        """Run ``command`` once for each key press that types any of ``characters``."""
        for char in characters:
            self.commands[char] = command

    # -- pyglet window events -------------------------------------------------------------
    def on_key_press(self, symbol: int, modifiers: int) -> bool | None:
        char = _typed_by(symbol)
        return self._run(char) if char is not None else None

    def on_text(self, text: str) -> bool | None:
        return self._run(text)

    def on_key_release(self, symbol: int, modifiers: int) -> None:
        self._held.clear()

    def _run(self, char: str) -> bool | None:
        command = self.commands.get(char)
        if command is None:
            return None  # not ours: Esc, arrows... go on to the other handlers
        if command not in self._held:
            self._held.add(command)
            command()
        return True  # pyglet.event.EVENT_HANDLED


class _EventCounter:
    """Counts one esper event. esper keeps handlers by weak reference, so the App keeps these
    objects and registers their bound method (a lambda would vanish at once)."""

    __slots__ = ("__weakref__", "counts", "name")

    def __init__(self, name: str, counts: Counter[str]) -> None:
        self.name = name
        self.counts = counts

    def handle(self, *_args: object) -> None:
        self.counts[self.name] += 1


class _TimedHandler:
    """A scene's esper handler, set through :meth:`App.on`: the App keeps it (esper holds
    handlers weakly) and adds the time of each call to ``App.handler_ms``."""

    __slots__ = ("__weakref__", "app", "handler")

    def __init__(self, app: App, handler: Callable[..., object]) -> None:
        self.app = app
        self.handler = handler

    def handle(self, *args: Any) -> None:
        start = time.perf_counter()
        try:
            self.handler(*args)
        finally:
            self.app.handler_ms += (time.perf_counter() - start) * 1000.0


class App:
    """The window, the frame loop and the bookkeeping around one scene.

    Creating an App switches esper to a fresh world of its own (``esper.switch_world``), so
    scenes never see each other's entities, processors or event handlers, also when the tests
    run several in one process.

    Attributes a scene uses: ``args``, ``window``, ``headless``, ``hud_batch`` (for overlays
    drawn in screen coordinates, such as a minimap), ``events`` (a Counter filled by
    :meth:`count_events`) and ``stats`` (extra ``key=value`` figures for the summary line);
    :meth:`bind` for its keys, :meth:`on` for its esper handlers and :meth:`debug_overlay`
    for its ``Q`` key.
    """

    _worlds_created = 0

    def __init__(self, name: str, args: argparse.Namespace, caption: str) -> None:
        self.name = name
        self.args = args
        self.headless: bool = bool(args.headless)
        self.frames_wanted: int | None = args.frames
        self.frame = 0
        self.events: Counter[str] = Counter()
        self.stats: dict[str, object] = {}
        self.spatial_ms = FrameTimes()
        self.spatial_cpu_ms = FrameTimes()
        self.events_ms = FrameTimes()
        self.frame_ms = FrameTimes()
        self.frame_cpu_ms = FrameTimes()
        self.scene: Scene | None = None
        self._counters: list[_EventCounter] = []
        self._handlers: list[_TimedHandler] = []
        self.handler_ms = 0.0  # the time in handlers set with on(), over the whole run
        self._timed: list[esper.Processor] = []  # wrapped by time_processors()
        self._timed_ms = 0.0
        self._timed_cpu_ms = 0.0
        self._timed_events_ms = 0.0
        self._virtual_time = 0.0
        self._last_draw: float | None = None
        self._drawn_intervals = 0
        self._drawn_ms = 0.0
        self._finished = False
        self.commands = Commands()
        self.overlay: DebugOverlay | None = None

        App._worlds_created += 1
        self.world = f"{name}-{App._worlds_created}"
        self._previous_world = esper.current_world
        esper.switch_world(self.world)

        width, height = args.size
        self.window = _create_window(width, height, caption, self.headless)
        if self.headless:
            # The pyglet clock follows the frame count, not the wall clock, so whatever the
            # scene schedules on it (pyglet.clock.schedule_once...) is deterministic too.
            self._clock = pyglet.clock.Clock(time_function=self._now)
            pyglet.clock.set_default(self._clock)
        self.window.push_handlers(on_draw=self._on_draw, on_close=self._on_close)
        self.window.push_handlers(self.commands)

        self.hud_batch = pyglet.graphics.Batch()
        self._hud_background = pyglet.shapes.Rectangle(
            0, 0, 1, 1, color=HUD_BACKGROUND, batch=self.hud_batch,
            group=pyglet.graphics.Group(order=0),
        )
        self._hud_label = pyglet.text.Label(
            "", x=10, y=height - 8, width=width - 20, multiline=True,
            anchor_x="left", anchor_y="top", font_size=11, color=(235, 235, 235, 255),
            batch=self.hud_batch, group=pyglet.graphics.Group(order=1),
        )

    # -- what scenes call ---------------------------------------------------------------
    def bind(self, characters: str, command: Callable[[], object]) -> None:
        """Run ``command`` once for each key press that types any of ``characters``, however
        pyglet reports it (a key press, its text, or both: see :class:`Commands`). Bind the
        characters of one key together (``"+="``: with Shift and without) to one command."""
        self.commands.bind(characters, command)

    def show_status(self, text: str) -> None:
        """Draw ``text`` in the HUD on an empty window, at once: what a scene that takes a
        while to build shows while it builds (the loop has not started, and the window
        would stay black)."""
        self.window.switch_to()
        self.window.clear()
        self._hud_label.text = text
        self._refresh_background()
        self.hud_batch.draw()
        self.window.flip()
        self.window.dispatch_events()

    def on(self, name: str, handler: Callable[..., object]) -> None:
        """Set ``handler`` for the esper event ``name``, kept by the App (esper holds
        handlers by weak reference) and timed: the time it takes while a processor that
        :meth:`time_processors` times dispatches the event counts in that processor's
        events share (the HUD's "in events"), as a SpatialProcessor's own
        ``timings.events`` counts the handlers of its events."""
        timed = _TimedHandler(self, handler)
        self._handlers.append(timed)
        esper.set_handler(name, timed.handle)

    def debug_overlay(
        self, spatial: SpatialProcessor, batch: pyglet.graphics.Batch, **options: Any
    ) -> DebugOverlay:
        """The ``Q`` key of every scene: a :class:`~ecs_spatial.pyglet_debug.DebugOverlay` of
        ``spatial`` in the scene's ``batch`` (so it is drawn with the scene, in the scene's
        view), hidden at first, shown and hidden by ``Q``, and brought up to date after each
        update while shown. ``options`` go to the overlay (``view=``, ``layers=``...)."""
        overlay = DebugOverlay(spatial, batch, visible=False, **options)
        self.overlay = overlay

        def toggle() -> None:
            overlay.toggle()
            self._refresh_hud()

        self.bind("qQ", toggle)
        return overlay

    def time_processors(self, *processors: esper.Processor) -> None:
        """Time these processors' ``process()`` for the HUD and the summary line.

        Each one's bound ``process`` is wrapped in an instance attribute (esper looks the
        method up on every call, so the wrapper is what runs); the milliseconds of all of them
        within one frame add up to that frame's "spatial ms". The scene's event handlers run
        inside ``process()`` (esper dispatches synchronously), so their time is included: keep
        them short. The milliseconds are measured twice: on the wall clock (what the frame
        rate feels) and as this thread's CPU time, which other processes on a busy machine do
        not inflate. The HUD and the summary show apart the share spent in events, handlers
        included, so that a slow handler is not mistaken for a slow index: a
        SpatialProcessor's own ``timings.events``, and for any other processor (culling,
        proximity) the time of the handlers set with :meth:`on` while it ran.
        """
        for processor in processors:
            self._timed.append(processor)
            inner = processor.process

            def timed(
                *args: Any,
                _inner: Callable[..., Any] = inner,
                _processor: esper.Processor = processor,
                **kwargs: Any,
            ) -> None:
                start = time.perf_counter()
                start_cpu = time.thread_time()
                handlers_before = self.handler_ms
                try:
                    _inner(*args, **kwargs)
                finally:
                    self._timed_ms += (time.perf_counter() - start) * 1000.0
                    self._timed_cpu_ms += (time.thread_time() - start_cpu) * 1000.0
                    timings = getattr(_processor, "timings", None)
                    if isinstance(timings, FrameTimings):  # its handlers are in there
                        self._timed_events_ms += timings.events * 1000.0
                    else:
                        self._timed_events_ms += self.handler_ms - handlers_before

            processor.process = timed  # type: ignore[method-assign]

    def save(self, *extra: object) -> bytes:
        """A save file of the current esper world and its processors
        (:func:`ecs_spatial.saving.save_world`), pickled in one pickle with ``extra`` objects
        of the scene (so that what a processor refers to, a camera whose ``view`` method a
        CullingProcessor calls, comes back as the same object): the bytes for :meth:`load`.

        The timing wrappers of :meth:`time_processors` hold the App and its window, which
        do not pickle: they are taken off for the save, and put back; so is the debug
        overlay's cast log (a shown overlay records the casts: the save holds none)."""
        overlay = self.overlay
        shown = overlay is not None and overlay.visible
        if overlay is not None:
            overlay.visible = False
        timed = self._untime()
        try:
            with collector_paused():
                return pickle.dumps((save_world(), extra))
        finally:
            self.time_processors(*timed)
            if overlay is not None:
                overlay.visible = shown

    def load(self, saved: bytes) -> tuple[object, ...]:
        """Put the world that :meth:`save` saved in place of the current one (its processors
        removed, its database cleared, then :func:`ecs_spatial.saving.restore_world`), time
        the restored processors that replace timed ones, and return the ``extra`` objects.
        esper's event handlers stay as they were set: they are not part of a save. The
        scene then adopts the new processors and component objects (its shapes, its
        references)."""
        with collector_paused():
            state, extra = pickle.loads(saved)
        overlay = self.overlay
        shown = overlay is not None and overlay.visible
        if overlay is not None:
            overlay.visible = False
        timed_types = {type(p) for p in self._untime()}
        for processor, _priority in state.processors:
            esper.remove_processor(type(processor))
        esper.clear_database()
        restore_world(state)
        restored = [p for p, _ in state.processors]
        self.time_processors(*(p for p in restored if type(p) in timed_types))
        if overlay is not None:
            overlay.spatial = next(p for p in restored if isinstance(p, SpatialProcessor))
            overlay.visible = shown
        return tuple(extra)

    def _untime(self) -> list[esper.Processor]:
        """Take the timing wrappers off (see :meth:`time_processors`); return whose."""
        timed, self._timed = self._timed, []
        for processor in timed:
            processor.__dict__.pop("process", None)
        return timed

    def count_events(self, *names: str) -> None:
        """Count each of these esper events for the summary line (in ``self.events``)."""
        for name in names:
            counter = _EventCounter(name, self.events)
            self._counters.append(counter)
            esper.set_handler(name, counter.handle)

    def timing(self) -> Timing:
        """The frame rate and the spatial milliseconds of the run so far: the one definition
        behind both the HUD (:meth:`timing_text`) and the summary line. Over the whole run,
        because a worst frame that the HUD forgot after a second would be a worst frame the
        summary contradicts; the HUD adds a recent mean ("now") for what is happening now."""
        ms = self._drawn_ms
        return Timing(
            fps=1000.0 * self._drawn_intervals / ms if ms > 0 else 0.0,
            spatial_ms_mean=self.spatial_ms.mean,
            spatial_ms_worst=self.spatial_ms.worst,
            events_ms_mean=self.events_ms.mean,
        )

    def timing_text(self) -> str:
        """The HUD line every scene shows: the figures of :meth:`timing`, as the summary line
        prints them, and the spatial milliseconds of the last second."""
        f = self.timing().fields()
        fps = f["fps"] if self._drawn_intervals else "--"  # no interval between frames yet
        return (
            f"{fps} fps   spatial ms/frame {self.spatial_ms.recent():.2f} now,"
            f" {f['spatial_ms_mean']} mean, {f['spatial_ms_worst']} worst"
            f" ({f['spatial_events_ms_mean']} in events)"
        )

    @property
    def hud_text(self) -> str:
        """The text the HUD shows now (laid out again every ``HUD_REFRESH_FRAMES`` frames, and
        at :meth:`finish`)."""
        return str(self._hud_label.text)

    # -- the loop -----------------------------------------------------------------------
    def run(self, scene: Scene) -> int:
        """Run ``scene``: in a window until it is closed (or ``--frames`` have been shown),
        or headless for ``--frames`` frames. Saves the screenshot if asked for, prints the
        summary line, and returns the process exit status (0)."""
        self.start(scene)
        if self.headless:
            assert self.frames_wanted is not None
            self.step(self.frames_wanted - self.frame)
        else:
            self._update(FIXED_DT)  # the first frame drawn shows the world and its figures
            pyglet.clock.schedule_interval(self._update, FIXED_DT)
            pyglet.app.run(FIXED_DT)
            pyglet.clock.unschedule(self._update)
        self.finish()
        return 0

    def start(self, scene: Scene) -> None:
        """Attach the scene (:meth:`run` does this; tests call it to step frames by hand)."""
        self.scene = scene
        self._refresh_hud()

    def step(self, frames: int = 1) -> None:
        """Headless: run ``frames`` frames, each one update of ``FIXED_DT`` and one draw."""
        if not self.headless:
            raise RuntimeError("App.step() drives headless scenes; windows run on pyglet.app")
        window = self.window
        for _ in range(frames):
            start = time.perf_counter()
            start_cpu = time.thread_time()
            # A window outside pyglet.app queues its events until dispatch_events(): first
            # the input that arrived since the last frame, then this frame's on_draw.
            window.dispatch_events()
            self._virtual_time += FIXED_DT
            self._clock.tick(poll=True)
            self._update(FIXED_DT)
            window.switch_to()
            window.dispatch_event("on_draw")
            window.dispatch_events()
            window.flip()
            self.frame_ms.add((time.perf_counter() - start) * 1000.0)
            self.frame_cpu_ms.add((time.thread_time() - start_cpu) * 1000.0)

    def press(self, symbol: int, modifiers: int = 0) -> None:
        """Press and release a key through pyglet's own event dispatch, as a keyboard would,
        and deliver the events at once (a headless window queues them until
        ``dispatch_events()``; :meth:`step` delivers them at the start of the next frame)."""
        self.window.dispatch_event("on_key_press", symbol, modifiers)
        self.window.dispatch_event("on_key_release", symbol, modifiers)
        self.window.dispatch_events()

    def finish(self) -> str:
        """Save the screenshot (if asked for), print the summary line and return it."""
        if self._finished:
            return self.summary()
        self._finished = True
        self._refresh_hud()  # the last frame's HUD shows the figures the summary prints
        if self.args.screenshot:
            self.save_screenshot(self.args.screenshot)
        line = self.summary()
        print(line, flush=True)
        return line

    def summary(self) -> str:
        """One line of ``key=value`` pairs: frames, spatial ms per frame (mean and worst, the
        first frame apart, the mean in CPU time, and the mean of it spent dispatching events,
        handlers included), the frame time (headless: the mean and the worst, and the worst
        in CPU time, each first frame apart), the frame rate (all of these that the
        HUD shows as the HUD shows them: :meth:`timing`), every counted event and the scene's
        stats."""
        timing = self.timing().fields()
        fields: dict[str, object] = {
            "frames": self.frame,
            "spatial_ms_mean": timing["spatial_ms_mean"],
            "spatial_ms_worst": timing["spatial_ms_worst"],
            "spatial_ms_first": f"{self.spatial_ms.first or 0.0:.1f}",
            "spatial_cpu_ms_mean": f"{self.spatial_cpu_ms.mean:.2f}",
            "spatial_events_ms_mean": timing["spatial_events_ms_mean"],
        }
        if self.headless:
            fields["frame_ms_mean"] = f"{self.frame_ms.mean:.2f}"
            fields["frame_ms_worst"] = f"{self.frame_ms.worst:.2f}"
            fields["frame_cpu_ms_worst"] = f"{self.frame_cpu_ms.worst:.2f}"
        fields["fps"] = timing["fps"]
        fields.update((name, self.events[name]) for name in sorted(self.events))
        fields.update(self.stats)
        return f"{self.name}: " + " ".join(f"{k}={v}" for k, v in fields.items())

    def save_screenshot(self, path: str) -> None:
        """Draw the current frame again and save it as a PNG: reading back the frame just
        drawn (before any flip) is what works the same headless and in a window."""
        self.window.switch_to()
        self._draw_frame()
        buffer = pyglet.image.get_buffer_manager().get_color_buffer()
        image = buffer.get_image_data()  # type: ignore[no-untyped-call]
        # Opaque RGB: a quarter smaller than the framebuffer's RGBA, and no alpha to show
        # a web page's background through.
        rgb = image.get_data("RGB", image.width * 3)
        pyglet.image.ImageData(image.width, image.height, "RGB", rgb).save(path)

    def close(self) -> None:
        """Close the window, go back to the esper world that was current before this App and
        delete this App's world (tests call this; ``run`` ends when the window closes)."""
        self.window.close()
        if esper.current_world == self.world:
            previous = self._previous_world
            esper.switch_world(previous if previous in esper.list_worlds() else "default")
        if self.world in esper.list_worlds():
            esper.delete_world(self.world)

    # -- internals ----------------------------------------------------------------------
    def _now(self) -> float:
        return self._virtual_time

    def _update(self, dt: float) -> None:
        assert self.scene is not None
        self._timed_ms = self._timed_cpu_ms = self._timed_events_ms = 0.0
        self.scene.update(min(dt, MAX_DT))
        if self.overlay is not None:
            self.overlay.update()  # nothing while hidden
        self.spatial_ms.add(self._timed_ms)
        self.spatial_cpu_ms.add(self._timed_cpu_ms)
        self.events_ms.add(self._timed_events_ms)
        self.frame += 1
        if self.frame < HUD_REFRESH_FRAMES or self.frame % HUD_REFRESH_FRAMES == 0:
            self._refresh_hud()
        if not self.headless and self.frames_wanted and self.frame >= self.frames_wanted:
            self._on_close()

    def _on_draw(self) -> None:
        now = time.perf_counter()
        if self._last_draw is not None:
            self._drawn_intervals += 1
            self._drawn_ms += (now - self._last_draw) * 1000.0
        self._last_draw = now
        self._draw_frame()

    def _draw_frame(self) -> None:
        self.window.clear()
        if self.scene is not None:
            self.scene.draw()
        self.hud_batch.draw()

    def _on_close(self) -> bool:
        if not self.headless and self.args.screenshot and not self._finished:
            self.save_screenshot(self.args.screenshot)
            self.args.screenshot = None
        self.window.close()
        pyglet.app.exit()
        return True

    def _refresh_hud(self) -> None:
        if self.scene is None:
            return
        text = self.scene.hud()
        if text != self._hud_label.text:
            self._hud_label.text = text
        self._refresh_background()

    def _refresh_background(self) -> None:
        """Fit the HUD's background to its text."""
        w = min(self._hud_label.content_width + 16, self.window.width)
        h = self._hud_label.content_height + 10
        top = self.window.height
        bg = self._hud_background
        bg.position = (0, top - h)
        bg.width, bg.height = w, h


def _create_window(width: int, height: int, caption: str, headless: bool) -> Any:
    """A pyglet window, real or headless, or an error that says what to do about it."""
    if headless:
        if "pyglet.window" in sys.modules and not pyglet.options["headless"]:
            raise RuntimeError(
                "--headless was asked for after pyglet.window had been imported with a screen"
                " backend; import only `pyglet` (or `from pyglet import shapes`) at module level"
            )
        pyglet.options["headless"] = True
    elif pyglet.options["headless"]:
        raise RuntimeError("pyglet is in headless mode already: add --headless")
    try:
        return pyglet.window.Window(
            width, height, caption=caption, resizable=False, vsync=not headless
        )
    except Exception as exc:
        if headless:
            raise RuntimeError(
                f"cannot open a headless pyglet window ({type(exc).__name__}: {exc}); "
                f"{SETUP_HINT}"
            ) from exc
        raise RuntimeError(
            f"cannot open a window ({type(exc).__name__}: {exc}); on a machine without a"
            " screen, add --headless, or run under xvfb-run"
        ) from exc


def lerp_color(
    stops: Iterable[tuple[int, int, int]], t: float
) -> tuple[int, int, int]:
    """The colour at ``t`` in [0, 1] along a gradient through ``stops`` (for colour scales)."""
    colors = list(stops)
    t = min(max(t, 0.0), 1.0) * (len(colors) - 1)
    i = min(math.floor(t), len(colors) - 2)
    f = t - i
    a, b = colors[i], colors[i + 1]
    return (
        round(a[0] + (b[0] - a[0]) * f),
        round(a[1] + (b[1] - a[1]) * f),
        round(a[2] + (b[2] - a[2]) * f),
    )
