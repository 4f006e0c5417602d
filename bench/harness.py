"""The contender interface and the one frame loop every measurement runs; the method it
implements is ``docs/benchmarks.md`` ("How they are measured").

A contender (:class:`Contender`) is one way of doing a frame's work. On the first ``verify``
frames of :func:`run` every contender's answers must equal the reference's (a sort-and-sweep
for pairs, brute-force scans for a sample of the queries, else the first exact contender's),
or the run stops (:class:`Mismatch`); one with its own contact rules (``exact = False``) has
the difference counted; one that answers another question (``exact = None``) is not checked.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bench.record import markdown_table
from bench.world import Step, World

BoxT = tuple[float, float, float, float]
Pair = tuple[int, int]
T = TypeVar("T")
#: Queries per verified frame that are also checked against a brute-force scan.
SAMPLE = 20


def _median_ms(seconds: Sequence[float]) -> float:
    return statistics.median(seconds) * 1e3 if seconds else math.nan


def rotated(items: Sequence[T], k: int) -> list[T]:
    """``items`` starting at index ``k`` (modulo their number), then wrapping around."""
    k = k % len(items) if items else 0
    return [*items[k:], *items[:k]]


def distance(box: BoxT, x: float, y: float) -> float:
    """From ``(x, y)`` to the box's nearest point, with the arithmetic of
    ``ecs_spatial.Box.distance_to_point`` (the same last bit)."""
    min_x, min_y, max_x, max_y = box
    dx = min_x - x if x < min_x else (x - max_x if x > max_x else 0.0)
    dy = min_y - y if y < min_y else (y - max_y if y > max_y else 0.0)
    return math.sqrt(dx * dx + dy * dy)


def within(box: BoxT, x: float, y: float, r: float) -> bool:
    return distance(box, x, y) <= r


def in_view(boxes: dict[int, BoxT], view: BoxT) -> list[int]:
    """The ids whose box intersects ``view`` (closed: touching counts), by a scan of all."""
    qx0, qy0, qx1, qy1 = view
    return [e for e, (x0, y0, x1, y1) in boxes.items()
            if x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1]


def in_radius(boxes: dict[int, BoxT], x: float, y: float, r: float) -> list[int]:
    """The ids whose box has a point within ``r`` of ``(x, y)``, by a scan of all."""
    return [e for e, b in boxes.items() if within(b, x, y, r)]


def sweep_pairs(boxes: dict[int, BoxT]) -> list[Pair]:
    """Every intersecting pair (closed boxes: touching counts), sorted, by sorting on
    ``min_x`` and sweeping: O(n log n + c), c the pairs that overlap on x."""
    order = sorted(boxes.items(), key=lambda kv: kv[1][0])
    out: list[Pair] = []
    n = len(order)
    for i in range(n):
        a, (_, ay0, ax1, ay1) = order[i]
        for j in range(i + 1, n):
            b, (bx0, by0, _, by1) = order[j]
            if bx0 > ax1:
                break
            if ay0 <= by1 and by0 <= ay1:
                out.append((a, b) if a < b else (b, a))
    out.sort()
    return out


def _no_questions(world: World) -> list[Any]:
    return []


@dataclass(frozen=True)
class Ask:
    """What every frame asks once the contenders are up to date, ``questions`` drawn after
    the world's step. ``kind``: ``"pairs"``, ``"update"`` (the update alone: the pairs read
    untimed on the verified frames), ``"view"`` (the ids in each box), ``"radius"`` (the ids
    within ``radius`` of each point), ``"near"`` (each watcher's neighbours within
    ``radius``), ``"nearest"``, or another with no reference (contenders held to each other).
    """

    kind: str = "pairs"
    questions: Callable[[World], list[Any]] = _no_questions
    radius: float = 50.0

    @classmethod
    def fixed(cls, kind: str, questions: list[Any]) -> Ask:
        """An ``Ask`` of the same questions every frame."""
        return cls(kind, lambda world: questions)

    def reference(self, world: World, questions: list[Any]) -> list[Any] | None:
        """The right answers: all pairs, or the first ``SAMPLE`` queries'; None if none."""
        boxes, kind, r, sample = world.boxes(), self.kind, self.radius, questions[:SAMPLE]
        if kind in ("pairs", "update"):
            return [sweep_pairs(boxes)]
        if kind == "view":
            return [sorted(in_view(boxes, view)) for view in sample]
        if kind == "radius":
            return [sorted(in_radius(boxes, x, y, r)) for x, y in sample]
        if kind == "near":
            return [sorted(set(in_radius(boxes, (x0 + x1) * 0.5, (y0 + y1) * 0.5, r)) - {w})
                    for w in sample for x0, y0, x1, y1 in [boxes[w]]]
        if kind == "nearest":
            return [[min(boxes, key=lambda e: (distance(boxes[e], x, y), e))] for x, y in sample]
        return None


class Contender:
    """One way of doing a frame's work; the loop calls ``build`` once, then each frame
    ``advance`` and ``before`` (untimed), ``update`` and ``answer`` (each timed), and
    ``close`` at the end."""

    #: Its name in the tables, and how it is driven; ``exact``: see the module docstring;
    #: ``scale``: its figures' factor (timed on a sample of the work); ``limit``: its most
    #: timed frames; set by the loop: its clock, and the phases it timed itself last frame.
    name: str = "?"
    note: str = ""
    exact: bool | None = True
    scale: float = 1.0
    limit: int | None = None
    clock: Callable[[], float] = time.perf_counter
    phases: dict[str, float]

    def build(self, world: World, ask: Ask) -> None:
        """Set up on ``world`` as it is, for frames that will ask ``ask``."""
        raise NotImplementedError

    def advance(self) -> None:
        """Its own motion, for every contender ahead of the world's step (outside the
        frame's timing; a game's movement processor, timed as a phase of its own)."""

    def before(self, world: World, step: Step) -> None:
        """After the world's step, for every contender before any is timed: what the caller
        would already have (its own buffers of the boxes), or changes that are not the
        figure (components churned)."""

    def update(self, world: World, step: Step) -> None:
        """Catch up with the world after ``world.step()`` returned ``step``."""
        raise NotImplementedError

    def answer(self, questions: list[Any]) -> Any:
        """A list, one answer per question (for all pairs, one: the pairs)."""
        return None

    def normal(self, raw: Any) -> list[Any]:
        """``raw`` as the loop compares it, untimed: each list or set sorted."""
        return [sorted(x) if isinstance(x, (list, AbstractSet)) else x for x in raw or ()]

    def close(self) -> None:
        """Release what it holds (a library handle, an esper world)."""


class IndexContender(Contender):
    """A spatial index kept current, asked ``pairs()``, ``query(box)`` (the ids whose box
    intersects it) or ``query_radius(x, y, r)`` (the ids whose box has a point within ``r``),
    each id once, in any order. It implements ``fill`` instead of ``build``."""

    def build(self, world: World, ask: Ask) -> None:
        self.kind, self.radius = ask.kind, ask.radius
        self.fill(world)

    def fill(self, world: World) -> None:
        """Index every alive box of ``world`` (``self.kind`` says what frames will ask)."""
        raise NotImplementedError

    def answer(self, questions: list[Any]) -> Any:
        if self.kind == "view":
            query = self.query
            return [query(box) for box in questions]
        if self.kind == "radius":
            query_radius, r = self.query_radius, self.radius
            return [query_radius(x, y, r) for x, y in questions]
        return [self.pairs()]

    def pairs(self) -> Any:
        raise NotImplementedError

    def query(self, box: BoxT) -> list[int]:
        raise NotImplementedError

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        """By default, ``query`` of the circle's bounding box, each hit's box then checked."""
        boxes = self.boxes_now()
        return [e for e in self.query((x - r, y - r, x + r, y + r)) if within(boxes[e], x, y, r)]

    def boxes_now(self) -> dict[int, BoxT]:
        """Every indexed id with its current box, as the index's caller keeps them."""
        raise NotImplementedError


class ByOldBox(IndexContender):
    """An index whose removal needs an entry's old box, so that it keeps every box as its
    caller would: kept current one box at a time (``_remove(e, old box)``, then
    ``_insert(e, box)``), or rebuilt by ``fill`` in a frame that changed more than
    ``rebuild_above`` of its entries. It implements ``load`` (``self._boxes`` is filled)."""

    rebuild_above = math.inf
    _remove: Callable[[int, BoxT], object]
    _insert: Callable[[int, BoxT], object]

    def fill(self, world: World) -> None:
        self._boxes = world.boxes()
        self.load(world)

    def load(self, world: World) -> None:
        raise NotImplementedError

    def update(self, world: World, step: Step) -> None:
        changed = len(step.moved) + len(step.created) + len(step.deleted)
        if changed > self.rebuild_above * len(self._boxes):
            self.fill(world)
            return
        remove, insert, boxes = self._remove, self._insert, self._boxes
        for e in step.deleted:
            remove(e, boxes[e])
            del boxes[e]
        for e in step.moved:
            remove(e, boxes[e])
            boxes[e] = box = world.box(e)
            insert(e, box)
        for e in step.created:
            boxes[e] = box = world.box(e)
            insert(e, box)

    def boxes_now(self) -> dict[int, BoxT]:
        return self._boxes


class Mismatch(AssertionError):
    """An exact contender answered differently from the reference."""


@dataclass
class Figures:
    """What one contender measured in one run: seconds per timed frame by phase (``frame``,
    its ``update`` and ``answer``, and its own), its builds, and for an inexact one the
    answers it missed and added per verified frame."""

    name: str
    note: str = ""
    scale: float = 1.0
    builds: list[float] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=dict)
    missing: float = 0.0
    extra: float = 0.0
    #: Why it was dropped after its first frame, or "".
    skipped: str = ""

    def ms(self, phase: str = "frame") -> float:
        """Median ms per frame of ``phase`` (scaled), nan if it has none."""
        return _median_ms(self.times.get(phase, ())) * self.scale

    @property
    def build_ms(self) -> float:
        return _median_ms(self.builds)

    def ratio(self, other: Figures, phase: str = "frame", of: str = "",
              plus: Sequence[float] = ()) -> float:
        """The median over frames of this one's ``phase`` / ``other``'s ``of`` (default the
        same) in the same frame; ``plus`` (the world's step, frame by frame) added to both."""
        a, b = self.times.get(phase, []), other.times.get(of or phase, [])
        ratios = [(x * self.scale + s) / (y * other.scale + s)
                  for x, y, s in zip(a, b, list(plus) or [0.0] * len(a), strict=False) if y or s]
        return statistics.median(ratios) if ratios else math.nan


@dataclass
class Result:
    """A run: the world's step frame by frame, each contender's figures, and the mean
    reference answers (pairs, or query hits) per verified frame."""

    label: str
    n: int
    frames: int
    step: list[float]
    contenders: list[Figures]
    answers: float

    @property
    def step_ms(self) -> float:
        return _median_ms(self.step)

    def get(self, name: str) -> Figures | None:
        return next((c for c in self.contenders if c.name == name), None)

    def __getitem__(self, name: str) -> Figures:
        if (c := self.get(name)) is None:
            raise KeyError(name)
        return c


def run(
    label: str,
    world: World,
    contenders: Sequence[Contender],
    ask: Ask = Ask(),
    *,
    frames: int = 10,
    warmup: int = 2,
    verify: int = 2,
    builds: int = 1,
    clock: Callable[[], float] = time.perf_counter,
    collect: bool = False,
    quiet: bool = False,
    keep: bool = False,
    strict: bool = True,
    max_frame_s: float | None = None,
    log: Callable[[str], None] | None = None,
) -> Result:
    """Build every contender on ``world`` (``builds`` times in rotating order), then run
    ``warmup + frames`` frames, the first ``verify`` checked, the last ``frames`` timed.
    ``clock``: ``time.process_time`` where other load must not count; ``collect``: a full
    collection before each contender's frame, untimed, so that none pays for another's
    garbage; ``quiet``: the collector off (as ``timeit`` runs), where a collection would dwarf
    the figure; ``keep``: answers freed at the end of the frame, untimed, rather than in their
    contender's timing (answers of many objects, where the query is the figure);
    ``strict=False``: an exact contender's differences counted, not refused; a contender
    other than the first whose first frame takes over ``max_frame_s`` is dropped."""
    figs = [Figures(c.name, c.note) for c in contenders]
    for b in range(builds):
        for i in rotated(range(len(contenders)), b):
            c = contenders[i]
            if b:
                c.close()
            c.clock, c.phases = clock, {}
            gc.collect()
            t0 = clock()
            c.build(world, ask)
            figs[i].builds.append(clock() - t0)
            figs[i].scale = c.scale
    answers, steps, active = 0, list[float](), list(range(len(contenders)))
    timed = ask.kind != "update"
    gc.collect()
    if quiet:
        gc.disable()
    try:
        for f in range(warmup + frames):
            running = [i for i in rotated(active, f) if f < warmup or contenders[i].limit is None
                       or len(figs[i].times.get("frame", ())) < (contenders[i].limit or 0)]
            for i in running:
                contenders[i].phases.clear()
                contenders[i].advance()
            t0 = clock()
            step = world.step()
            steps.append(clock() - t0)
            questions = ask.questions(world)
            got: dict[int, list[Any]] = {}
            kept: list[Any] = []
            for i in running:
                contenders[i].before(world, step)
            for i in running:
                c, fig = contenders[i], figs[i]
                if collect:
                    gc.collect()
                t0 = clock()
                c.update(world, step)
                t1 = clock()
                raw = c.answer(questions) if timed else None
                if keep:
                    kept.append(raw)
                if f >= verify:
                    raw = None
                t2 = clock()
                if f < verify:
                    got[i] = c.normal(raw if timed else c.answer(questions))
                    raw = None
                if f >= warmup:
                    for phase, s in (("frame", t2 - t0), ("update", t1 - t0), ("answer", t2 - t1),
                                     *c.phases.items()):
                        fig.times.setdefault(phase, []).append(s)
                if f == 0 and max_frame_s is not None and t2 - t0 > max_frame_s and i:
                    fig.skipped = f"> {t2 - t0:.1f} s per frame"
            if f < verify:
                answers += _check(label, f, ask, world, questions, contenders, got, figs, strict)
            for i in [i for i in active if figs[i].skipped]:
                if log:
                    log(f"  {label}: {contenders[i].name} skipped ({figs[i].skipped})")
                contenders[i].close()
                active.remove(i)
    finally:
        gc.enable()
    for i in active:
        contenders[i].close()
    checked = min(verify, warmup + frames)
    for fig in figs:  # the differences per verified frame
        if checked:
            fig.missing /= checked
            fig.extra /= checked
    if log and checked:
        log(f"  {label}: verified {checked} frames, timed {frames}")
    return Result(label, world.n, frames, steps[warmup:], figs,
                  answers / checked if checked else math.nan)


def _check(label: str, frame: int, ask: Ask, world: World, questions: list[Any],
           contenders: Sequence[Contender], got: dict[int, list[Any]], figs: list[Figures],
           strict: bool) -> int:
    """Check one frame's answers (see the module docstring), adding each inexact contender's
    differences to its figures; return the reference's count of answers (pairs, or hits)."""
    checked = [i for i in got if contenders[i].exact is not None]
    first = next((got[i] for i in checked if contenders[i].exact), None) or []
    ref = ask.reference(world, questions) or []
    want = [*ref, *first[len(ref):]]
    for i in checked:
        c = contenders[i]
        if c.exact and c.scale == 1 and len(got[i]) != len(want):  # (scaled: on a sample)
            raise Mismatch(f"{label}: {c.name} answered {len(got[i])} of the {len(want)} "
                           f"questions of frame {frame}")
        for k, (have, right) in enumerate(zip(got[i], want, strict=False)):
            if have == right:
                continue
            missing, extra = (set(right) - set(have), set(have) - set(right)) if isinstance(
                right, list) else ({right}, {have})
            if c.exact and strict:
                raise Mismatch(
                    f"{label}: {c.name} disagrees with the reference on frame {frame}, "
                    f"question {k}: missing {sorted(missing, key=repr)[:8]}, extra "
                    f"{sorted(extra, key=repr)[:8]}"
                    + ("" if missing or extra else " (the same set, unsorted or with dupes)"))
            figs[i].missing += len(missing)
            figs[i].extra += len(extra)
    return sum(len(x) if isinstance(x, list) else 1 for x in want)


def table(result: Result) -> str:
    """A markdown table of one run: each contender's median ms a frame, the median per-frame
    ratio to the first contender, the same with the world's step added to both (the whole
    frame), its build ms, and the answers an inexact one missed and added a frame, if any."""
    b, diff = result.contenders[0], any(c.missing or c.extra for c in result.contenders)
    rows = [[c.name, f"skipped: {c.skipped}", "", "", ""] if c.skipped else [
        c.name, f"{c.ms():.3f}", f"{c.ratio(b):.2f}", f"{c.ratio(b, plus=result.step):.2f}",
        f"{c.build_ms:.1f}", *([f"{c.missing:.1f}/{c.extra:.1f}"] if diff else []),
    ] for c in result.contenders]
    rows.append(["(the world's step, shared)", f"{result.step_ms:.3f}", "", "", ""])
    return markdown_table(["contender", "frame ms", f"/ {b.name}", "the same, step included",
                           "build ms", *(["missed/added a frame"] if diff else [])], rows,
                          right=True)


def target(what: str, value: float | None, limit: float, at_most: bool = True,
           why_not: str = "") -> list[str]:
    """A row of a targets table: the figure against its limit, and the verdict."""
    sign = "<=" if at_most else ">="
    if value is None or math.isnan(value):
        return [what, "-", f"{sign} {limit:g}", f"skipped ({why_not or 'not measured'})"]
    ok = value <= limit if at_most else value >= limit
    return [what, f"{value:.3f}", f"{sign} {limit:g}", "ok" if ok else "MISSED"]
