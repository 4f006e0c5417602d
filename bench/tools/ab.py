"""A/B wall-clock of QuadTree variants, interleaved frame by frame in one process.

For changes whose effect is memory rather than instructions (allocation order, objects kept
alive, lists built before they are read), callgrind's instruction counts mislead: a
``move_many`` fed a list measured 24% fewer instructions and ran *slower* than a loop of
``move`` calls. This runs each variant on the same benchmark world, in the same frames, the
order alternating, so that the machine's load falls on all of them alike; only the ratios
mean anything on a shared machine.

A variant is ``PATH[:MODE[:THRESHOLD]]``: a copy of ``ecs_spatial/quadtree.py`` (loaded as a
module of the ``ecs_spatial`` package, so that its relative imports find the package's other
modules) and how the frame's moves reach it: ``loop`` (``move`` per entity),
``batch`` (``move_many`` fed a generator, ``atomic=False``), ``atomic`` (the same, atomic),
``list`` (``move_many`` fed a list, ``atomic=False``).

    python -m bench.tools.ab /tmp/before.py:loop ecs_spatial/quadtree.py:batch --n 10000
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.harness import rotated
from bench.world import World

MODES = ("loop", "batch", "atomic", "list")


def load(path: str, name: str) -> ModuleType:
    """Import a copy of the quadtree module from ``path`` as ``ecs_spatial.<name>``."""
    importlib.import_module("ecs_spatial")
    qualified = f"ecs_spatial.{name}"
    spec = importlib.util.spec_from_file_location(qualified, Path(path).resolve())
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)  # the caller's own file
    return module


def update(tree: Any, mode: str, world: World, moved: list[int]) -> None:
    """Bring ``tree`` up to date with the frame's moves, the way ``mode`` says."""
    xs, ys, ws, hs = world.xs, world.ys, world.ws, world.hs
    if mode == "loop":
        move = tree.move
        for e in moved:
            x = xs[e]
            y = ys[e]
            move(e, (x, y, x + ws[e], y + hs[e]))
        return
    boxes = ((xs[e], ys[e], xs[e] + ws[e], ys[e] + hs[e]) for e in moved)
    if mode == "list":
        tree.move_many(moved, list(boxes), atomic=False)
    else:
        tree.move_many(moved, boxes, atomic=mode == "atomic")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tools.ab", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("variants", nargs="+", help="PATH[:MODE[:THRESHOLD]]")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--moving", type=float, default=1.0)
    args = parser.parse_args(argv)
    world = World(args.n, moving=args.moving)
    runs: list[tuple[str, str, Any, list[float], list[float]]] = []
    for k, spec in enumerate(args.variants):
        path, mode, threshold = ([*spec.split(":"), "", ""])[:3]
        mode = mode or "batch"
        if mode not in MODES:
            parser.error(f"mode must be one of {MODES}, got {mode!r}")
        tree = load(path, f"ab_variant_{k}").QuadTree(
            (0.0, 0.0, world.side, world.side), threshold=int(threshold or 16)
        )
        for e, box in world.boxes().items():
            tree.insert(e, box)
        runs.append((spec, mode, tree, [], []))
    clock = time.perf_counter
    for frame in range(args.frames):
        moved = world.step().moved
        for _, mode, tree, update_s, pairs_s in rotated(runs, frame):
            t0 = clock()
            update(tree, mode, world, moved)
            t1 = clock()
            tree.find_all_intersections()
            update_s.append(t1 - t0)
            pairs_s.append(clock() - t1)
    base = 0.0
    for spec, _, _, update_s, pairs_s in runs:
        up = statistics.median(update_s) * 1e3
        pairs = statistics.median(pairs_s) * 1e3
        base = base or up + pairs
        print(f"{spec:48s} update {up:6.2f}  pairs {pairs:6.2f}  ms  x{(up + pairs) / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
