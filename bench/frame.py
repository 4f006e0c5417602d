"""The foundation's frame benchmark: ecs_spatial's QuadTree against the baselines, in one run.

One frame = the world's step (every moving box moves and bounces), the index brought up to
date (``tree.move`` for every moved box), ``find_all_intersections()``. Contenders:

- ecs_spatial ``QuadTree``, built once, updated incrementally with ``move``: with the default
  leaf capacity (``threshold=16``) and with ``threshold=64``, which measured 15 to 25% faster
  wherever most of the world moves (``python -m bench thresholds``);
- the Tuts+ tutorial quadtree, rebuilt every frame (target: at least 10x ecs_spatial's time);
- the seed design's ``Quadtree.h``, ported, rebuilt every frame and kept by remove-then-add
  (target: the faster of the two at least 8x ecs_spatial's time);
- sort-and-sweep on x (the reference the answers are checked against), for scale;
- brute force all-pairs where N <= ``--brute-max``; above that its time is extrapolated from
  a measurement at ``--brute-max`` as O(N^2), and the table says so.

Every contender's pairs are checked against the reference on the first frames (the run stops
loudly on any difference). Figures: median over repetitions of the mean ms per frame;
"index ms" excludes the world's own step, "frame ms" includes it; ratios are
contender / ecs_spatial, so a ratio of 10 means ecs_spatial is 10 times faster.

    python -m bench frame --n 10000 --frames 30 --reps 3
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from bench.baselines import BruteContender, SeedContender, SweepContender, TutorialContender
from bench.contender import Contender
from bench.harness import ScenarioResult, format_table, run_scenario
from bench.ours import LARGE_LEAVES, QuadTreeContender, tuned_name
from bench.record import add_output_options, machine, saved
from bench.world import VARIANTS, World


def brute_extrapolated(n: int, n_measured: int, seed: int, variant: str, frames: int = 2) -> float:
    """Brute force ms per frame at ``n``, measured at ``n_measured`` and scaled as n^2."""
    world = World(n_measured, seed=seed, variant=variant)
    brute = BruteContender()
    brute.build(world)
    times = []
    for _ in range(frames):
        step = world.step()
        t0 = time.perf_counter()
        brute.update(world, step)
        brute.pairs()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3 * (n / n_measured) ** 2


def summary(result: ScenarioResult, thresholds: list[int]) -> list[str]:
    """The lines that say whether the foundation's targets are met (frame-time ratios), for
    each of ecs_spatial's rows."""
    step = result.step_ms
    lines = []
    tut = result.get(TutorialContender.name)
    seeds = [
        r for r in (result.get("seed port (rebuild)"), result.get("seed port (remove-add)")) if r
    ]
    for threshold in thresholds:
        mine = result.get(tuned_name(QuadTreeContender.name, threshold))
        if mine is None:
            continue
        ours = mine.median_ms + step
        who = f"ecs_spatial, threshold={threshold}"
        if tut is not None:
            ratio = (tut.median_ms + step) / ours
            lines.append(
                f"tutorial quadtree / {who}: {ratio:.1f}x per frame "
                f"(target >= 10x: {'met' if ratio >= 10 else 'MISSED'})"
            )
        if seeds:
            best = min(seeds, key=lambda r: r.median_ms)
            ratio = (best.median_ms + step) / ours
            lines.append(
                f"seed port, faster mode ({best.name}) / {who}: {ratio:.1f}x per frame "
                f"(target >= 8x: {'met' if ratio >= 8 else 'MISSED'})"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench frame", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--n", type=int, default=10_000, help="number of boxes")
    parser.add_argument("--frames", type=int, default=30, help="timed frames per repetition")
    parser.add_argument("--reps", type=int, default=3, help="repetitions")
    parser.add_argument("--warmup", type=int, default=5, help="warm-up frames (verified)")
    parser.add_argument("--verify", type=int, default=3, help="verified frames (<= warm-up)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--variant", choices=VARIANTS, default="uniform")
    parser.add_argument("--moving", type=float, default=1.0, help="moving fraction")
    parser.add_argument("--churn", type=float, default=0.0, help="churn fraction per frame")
    parser.add_argument(
        "--brute-max", type=int, default=2000, help="largest N brute force runs at (else n^2)"
    )
    parser.add_argument("--no-seed-port", action="store_true", help="skip the slow seed ports")
    parser.add_argument(
        "--thresholds",
        default=f"16,{LARGE_LEAVES}",
        help="ecs_spatial's leaf capacities, one QuadTree row each; the first is the ratio base",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: N=200, 2 frames, one repetition"
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.frames, args.reps, args.warmup, args.verify = 200, 2, 1, 2, 2
    with saved(args, "frame", argv):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    thresholds = list(dict.fromkeys(int(t) for t in args.thresholds.split(",")))

    contenders: list[Contender] = []
    contenders += [QuadTreeContender(threshold=threshold) for threshold in thresholds]
    contenders.append(TutorialContender())
    if not args.no_seed_port:
        contenders += [SeedContender("rebuild"), SeedContender("remove-add")]
    contenders.append(SweepContender())
    if args.n <= args.brute_max:
        contenders.append(BruteContender())

    label = f"N={args.n} {args.variant}, moving {args.moving:.0%}" + (
        f", churn {args.churn:.0%}" if args.churn else ""
    )
    print(f"ecs_spatial frame benchmark: {label}")
    print(
        f"{args.frames} frames x {args.reps} reps after {args.warmup} warm-up frames "
        f"({args.verify} verified); {machine()}"
    )

    def make_world() -> World:
        return World(
            args.n, seed=args.seed, variant=args.variant, moving=args.moving, churn=args.churn
        )

    result = run_scenario(
        label,
        make_world,
        contenders,
        frames=args.frames,
        reps=args.reps,
        warmup=args.warmup,
        verify=args.verify,
        log=print,
    )
    extra = []
    if args.n > args.brute_max:
        brute = brute_extrapolated(args.n, args.brute_max, args.seed, args.variant)
        extra.append(("brute force", brute, f"(extrapolated from N={args.brute_max} as N^2)"))
    print(f"  {result.answers:.0f} pairs per frame; all contenders agree with the reference")
    print(format_table(result, extra))
    for line in summary(result, thresholds):
        print(line)
    return 0

