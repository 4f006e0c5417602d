"""The timing harness: every measurement in ``bench/`` times its contenders with it.

Two layers. The primitives at the top are what every measurement shares: ``rotated`` (an
order that changes frame by frame, so that no contender always runs first, on caches another
one warmed), ``time_in_turn`` (one frame of every contender in that order, each timed, the
garbage collector optionally run before each one outside the timing), ``wall_ms`` /
``cpu_ms`` (one call timed by the wall clock, or by this process's CPU time where other load
on a shared machine must not count), ``median_ms`` and ``median_ratio`` (the median over
frames of the per-frame ratio: two contenders timed within milliseconds of each other see
the same machine, so its drift cancels).

``run_scenario`` below them is the frame loop of the scenarios against the peers and the
baselines (``python -m bench peers``, ``frame``, ``thresholds``): one world, every contender
in the same process and run, interleaved frame by frame: the world steps once per frame
(timed on its own: a fixed cost identical for everyone), then each contender, in an order
that rotates every frame, brings its index up to date and answers the frame's question (all
pairs, or the culling or proximity queries). On a shared, noisy 2-core machine this makes
ratios honest: a slow patch of the machine hits every contender alike.

The first ``verify`` frames are warm-up frames whose answers are checked: every exact
contender's answers must equal the reference (a fresh sort-and-sweep over the world's boxes
for pairs; brute-force scans for a sample of queries), or the run stops with the difference.
Contenders whose library's semantics differ (``exact = False``) have the difference measured
and reported instead. Timed frames follow in ``reps`` repetitions of ``frames`` frames; a
contender's figure is the median over repetitions of its mean ms per frame.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bench.baselines import sweep_pairs, within
from bench.contender import BoxT, Contender, Pair
from bench.world import World

__all__ = [
    "KINDS",
    "ContenderResult",
    "Mismatch",
    "ScenarioResult",
    "cpu_ms",
    "format_table",
    "median_ms",
    "median_ratio",
    "rotated",
    "run_scenario",
    "time_in_turn",
    "wall_ms",
]

T = TypeVar("T")


# -- the primitives ----------------------------------------------------------------------------


def rotated(items: Sequence[T], k: int) -> list[T]:
    """``items`` starting at index ``k`` (modulo their number), then wrapping around."""
    if not items:
        return []
    k %= len(items)
    return [*items[k:], *items[:k]]


def wall_ms(fn: Callable[[], object]) -> float:
    """Wall-clock milliseconds spent in ``fn()``."""
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def cpu_ms(fn: Callable[[], object]) -> float:
    """CPU milliseconds of this process spent in ``fn()``: on a shared machine the wall
    clock also counts the time other processes held the CPU."""
    t0 = time.process_time()
    fn()
    return (time.process_time() - t0) * 1e3


def time_in_turn(
    frame: int,
    runners: Mapping[str, Callable[[], T]],
    *,
    clock: Callable[[], float] = time.perf_counter,
    collect: bool = False,
) -> dict[str, tuple[float, T]]:
    """Run every runner once, in their order rotated by ``frame``; return each one's seconds
    by ``clock`` and its result. ``collect``: a full garbage collection before each runner,
    outside its timing, so that no runner pays for another's garbage."""
    out: dict[str, tuple[float, T]] = {}
    for name in rotated(list(runners), frame):
        run = runners[name]
        if collect:
            gc.collect()
        t0 = clock()
        result = run()
        out[name] = (clock() - t0, result)
    return out


def median_ms(seconds: Sequence[float]) -> float:
    """The median of ``seconds``, in milliseconds."""
    return statistics.median(seconds) * 1e3


def median_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """The median over frames of ``a``'s time / ``b``'s time in the same frame."""
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


# -- the scenarios against the peers -------------------------------------------------------------

#: What a frame asks: all pairs, 100 culling boxes of 1/16 of the world, or radius-50
#: proximity around 10% of the entities.
KINDS = ("pairs", "cull", "radius")
CULL_COUNT = 100
RADIUS = 50.0
RADIUS_FRACTION = 0.1
#: Queries per verified frame that are also checked against a brute-force scan.
QUERY_SAMPLE = 20


class Mismatch(AssertionError):
    """An exact contender answered differently from the reference."""


@dataclass
class ContenderResult:
    """What one contender measured in one scenario."""

    name: str
    rep_means_ms: list[float] = field(default_factory=list)
    #: The part of each repetition's mean spent in ``update`` (the rest answers the frame's
    #: question: the pair search, or the queries).
    update_rep_means_ms: list[float] = field(default_factory=list)
    frame_ms: list[float] = field(default_factory=list)
    build_ms: float = 0.0
    note: str = ""
    #: For inexact contenders: mean pairs (or query hits) per verified frame that the
    #: contender missed and added, against the reference.
    missing: float = 0.0
    extra: float = 0.0
    #: Why it was not timed (too slow), or "" if it was.
    skipped: str = ""
    first_frame_ms: float = 0.0

    @property
    def median_ms(self) -> float:
        """Median over repetitions of the mean index ms per frame (world step excluded)."""
        return statistics.median(self.rep_means_ms) if self.rep_means_ms else float("nan")

    @property
    def update_ms(self) -> float:
        """Median over repetitions of the mean ms per frame spent in ``update``."""
        if not self.update_rep_means_ms:
            return float("nan")
        return statistics.median(self.update_rep_means_ms)

    @property
    def answer_ms(self) -> float:
        """Median over repetitions of the mean ms per frame spent answering (the frame's
        pairs or queries), the index update excluded."""
        if not self.rep_means_ms:
            return float("nan")
        return statistics.median(
            a - u for a, u in zip(self.rep_means_ms, self.update_rep_means_ms, strict=True)
        )

    @property
    def mean_ms(self) -> float:
        """Mean index ms over every timed frame (world step excluded)."""
        return statistics.fmean(self.frame_ms) if self.frame_ms else float("nan")


@dataclass
class ScenarioResult:
    """A scenario's figures: the shared world step and each contender's index time."""

    label: str
    n: int
    kind: str
    frames: int
    reps: int
    step_rep_means_ms: list[float]
    contenders: list[ContenderResult]
    answers: float  # mean pairs (or query hits) per verified frame, from the reference

    @property
    def step_ms(self) -> float:
        return statistics.median(self.step_rep_means_ms)

    def get(self, name: str) -> ContenderResult | None:
        for c in self.contenders:
            if c.name == name:
                return c
        return None


# -- one frame's question ---------------------------------------------------------------------


def _ask(c: Contender, kind: str, cull: list[BoxT], centres: list[tuple[float, float]]) -> object:
    """Ask ``c`` the frame's question; return its raw answer (for verification)."""
    if kind == "pairs":
        return c.pairs()
    if kind == "cull":
        q = c.query
        return [q(box) for box in cull]
    qr = c.query_radius
    return [qr(x, y, RADIUS) for x, y in centres]


def _questions(world: World, kind: str) -> tuple[list[BoxT], list[tuple[float, float]]]:
    if kind == "cull":
        return world.culling_boxes(CULL_COUNT), []
    if kind == "radius":
        return [], world.proximity_centres(RADIUS_FRACTION)
    return [], []


def _reference(
    world: World, kind: str, cull: list[BoxT], centres: list[tuple[float, float]]
) -> tuple[list[Pair] | None, dict[int, list[int]]]:
    """The reference answers: all pairs by sort-and-sweep, or brute-force scans for the
    first ``QUERY_SAMPLE`` queries (index -> sorted ids)."""
    boxes = world.boxes()
    if kind == "pairs":
        return sweep_pairs(boxes), {}
    sample: dict[int, list[int]] = {}
    if kind == "cull":
        for i, (qx0, qy0, qx1, qy1) in enumerate(cull[:QUERY_SAMPLE]):
            sample[i] = sorted(
                e
                for e, (x0, y0, x1, y1) in boxes.items()
                if x0 <= qx1 and qx0 <= x1 and y0 <= qy1 and qy0 <= y1
            )
    else:
        for i, (x, y) in enumerate(centres[:QUERY_SAMPLE]):
            sample[i] = sorted(e for e, b in boxes.items() if within(b, x, y, RADIUS))
    return None, sample


def _diff(reference: list[Pair], got: list[Pair]) -> tuple[set[Pair], set[Pair]]:
    ref = set(reference)
    have = set(got)
    return ref - have, have - ref


def _verify(
    label: str,
    frame: int,
    contenders: list[Contender],
    answers: list[object],
    ref_pairs: list[Pair] | None,
    ref_sample: dict[int, list[int]],
    miss: dict[str, list[int]],
) -> int:
    """Check every contender's answer of one frame; raise :class:`Mismatch` for an exact one
    that differs; record the size of the difference for inexact ones. Returns the number of
    reference answers (pairs, or query hits) of the frame."""
    if ref_pairs is not None:
        for c, got in zip(contenders, answers, strict=True):
            assert isinstance(got, list)
            if got == ref_pairs:
                continue
            missing, extra = _diff(ref_pairs, got)
            if c.exact:
                unsorted = "" if missing or extra else " (same set, but not sorted or dupes)"
                raise Mismatch(
                    f"{label}: {c.name} disagrees with the sort-and-sweep reference on frame "
                    f"{frame}{unsorted}: {len(missing)} pairs missing, e.g. "
                    f"{sorted(missing)[:8]}, {len(extra)} extra, e.g. {sorted(extra)[:8]}"
                )
            miss[c.name][0] += len(missing)
            miss[c.name][1] += len(extra)
        return len(ref_pairs)
    # Queries: every contender against the first contender (ecs_spatial) on every query, and
    # the first QUERY_SAMPLE queries of everyone against brute-force scans.
    first = answers[0]
    assert isinstance(first, list)
    total = sum(len(a) for a in first)
    for c, got in zip(contenders, answers, strict=True):
        assert isinstance(got, list)
        for i, ids in enumerate(got):
            ids_sorted = sorted(ids)
            want = ref_sample.get(i)
            if want is None:
                want = sorted(first[i])
            if ids_sorted == want:
                continue
            if len(set(ids)) != len(ids) and c.exact:
                raise Mismatch(f"{label}: {c.name} reported duplicates in query {i}")
            missing_ids = set(want) - set(ids_sorted)
            extra_ids = set(ids_sorted) - set(want)
            if c.exact:
                raise Mismatch(
                    f"{label}: {c.name} query {i} on frame {frame}: missing "
                    f"{sorted(missing_ids)[:8]}, extra {sorted(extra_ids)[:8]}"
                )
            miss[c.name][0] += len(missing_ids)
            miss[c.name][1] += len(extra_ids)
    return total


def run_scenario(
    label: str,
    make_world: Callable[[], World],
    contenders: list[Contender],
    *,
    kind: str = "pairs",
    frames: int = 30,
    reps: int = 3,
    warmup: int = 5,
    verify: int = 3,
    max_frame_s: float | None = None,
    log: Callable[[str], None] | None = None,
) -> ScenarioResult:
    """Run one scenario: build, verify on the first frames, then time; see the module
    docstring. ``contenders[0]`` is the one ratios are taken against (ecs_spatial).

    A contender whose first frame takes longer than ``max_frame_s`` seconds is dropped after
    that frame (its answers are still verified on it) and reported as skipped, with that
    first frame's time as a lower bound."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    say = log or (lambda _msg: None)
    world = make_world()
    results = [ContenderResult(c.name, note=c.note) for c in contenders]
    for c, r in zip(contenders, results, strict=True):
        c.prepare(kind)
        t0 = time.perf_counter()
        c.build(world)
        r.build_ms = (time.perf_counter() - t0) * 1e3
    miss = {c.name: [0, 0] for c in contenders}
    answers_total = 0
    n_verified = 0
    active = list(range(len(contenders)))
    perf = time.perf_counter
    for frame in range(1, max(warmup, verify) + 1):
        step = world.step()
        cull, centres = _questions(world, kind)
        answers = []
        slow = []
        for i in active:
            c = contenders[i]
            t0 = perf()
            c.update(world, step)
            answers.append(_ask(c, kind, cull, centres))
            dt = perf() - t0
            if frame == 1 and max_frame_s is not None and dt > max_frame_s and i != 0:
                slow.append(i)
                results[i].skipped = f"> {dt:.1f} s per frame"
                results[i].first_frame_ms = dt * 1e3
        if frame <= verify:
            ref_pairs, ref_sample = _reference(world, kind, cull, centres)
            answers_total += _verify(
                label,
                frame,
                [contenders[i] for i in active],
                answers,
                ref_pairs,
                ref_sample,
                miss,
            )
            n_verified += 1
        for i in slow:
            say(f"  {label}: {contenders[i].name} skipped ({results[i].skipped})")
            contenders[i].close()
            active.remove(i)
    if n_verified:
        for c, r in zip(contenders, results, strict=True):
            r.missing = miss[c.name][0] / n_verified
            r.extra = miss[c.name][1] / n_verified
    say(f"  {label}: verified {n_verified} frames, timing {reps} x {frames} frames")

    step_means: list[float] = []
    for _rep in range(reps):
        gc.collect()
        step_sum = 0.0
        sums = dict.fromkeys(active, 0.0)
        update_sums = dict.fromkeys(active, 0.0)
        for frame in range(frames):
            t0 = perf()
            step = world.step()
            step_sum += perf() - t0
            cull, centres = _questions(world, kind)
            for i in rotated(active, frame):  # no contender always runs first
                c = contenders[i]
                t0 = perf()
                c.update(world, step)
                t1 = perf()
                _ask(c, kind, cull, centres)
                t2 = perf()
                sums[i] += t2 - t0
                update_sums[i] += t1 - t0
                results[i].frame_ms.append((t2 - t0) * 1e3)
        step_means.append(step_sum / frames * 1e3)
        for i in active:
            results[i].rep_means_ms.append(sums[i] / frames * 1e3)
            results[i].update_rep_means_ms.append(update_sums[i] / frames * 1e3)
    for i in active:
        contenders[i].close()
    return ScenarioResult(
        label=label,
        n=world.n,
        kind=kind,
        frames=frames,
        reps=reps,
        step_rep_means_ms=step_means,
        contenders=results,
        answers=answers_total / n_verified if n_verified else float("nan"),
    )


def format_table(
    result: ScenarioResult, extra_rows: list[tuple[str, float, str]] | None = None
) -> str:
    """A plain-text table of one scenario: index ms (median of reps, and mean), frame ms
    (index + the shared world step) and both ratios to the first contender."""
    step = result.step_ms
    base = result.contenders[0]
    base_idx = base.median_ms
    base_frame = base_idx + step
    lines = [
        f"{'contender':44s} {'index ms':>9s} {'(mean)':>8s} {'frame ms':>9s} "
        f"{'x frame':>8s} {'x index':>8s}",
    ]
    for r in result.contenders:
        if r.skipped:
            lines.append(f"{r.name:44s} skipped: {r.skipped}")
            continue
        idx = r.median_ms
        lines.append(
            f"{r.name:44s} {idx:9.2f} {r.mean_ms:8.2f} {idx + step:9.2f} "
            f"{(idx + step) / base_frame:8.2f} {idx / base_idx:8.2f}"
        )
    for name, idx, note in extra_rows or []:
        lines.append(
            f"{name:44s} {idx:9.1f} {'':8s} {idx + step:9.1f} "
            f"{(idx + step) / base_frame:8.1f} {idx / base_idx:8.1f}  {note}"
        )
    lines.append(f"{'(world step, shared by all)':44s} {step:9.2f}")
    return "\n".join(lines)

