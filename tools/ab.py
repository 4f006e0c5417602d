"""A/B wall-clock of QuadTree variants, interleaved frame by frame by the frame loop.

For changes whose effect is memory rather than instructions (allocation order, objects kept
alive, lists built before they are read), callgrind's instruction counts mislead: a
``move_many`` fed a list measured fewer instructions and ran *slower* than a loop of
``move`` calls. This runs each variant on the same benchmark world, in the same frames, the
order rotating, so that the machine's load falls on all of them alike; only the ratios mean
anything on a shared machine.

A variant is ``PATH[:FEED[:THRESHOLD]]``. PATH is a copy of the ``ecs_spatial`` package
directory (``git worktree add /tmp/before HEAD~1`` or ``git archive``: loaded as a package of
its own name, so that the reference's units, ``quadtree.py`` and its ``_tree_*.py``, are the
copy's; its ``quadtree.QuadTree`` is measured), or a copy of one module of the package that
defines ``QuadTree`` (loaded as a module of ``ecs_spatial``, so that its relative imports find
the installed package's other modules). FEED is how the frame's moves reach it, one of
``bench.ours.FEEDS`` (default ``many``: ``move_many`` of a generator) or ``atomic`` (the same,
atomic).

    python -m tools.ab /tmp/before/ecs_spatial:loop ecs_spatial:loop --n 10000
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, cast

from bench.harness import Ask, run
from bench.ours import FEEDS, QuadTreeContender
from bench.world import World


def load(path: str, name: str) -> type[Any]:
    """The ``QuadTree`` of the copy at ``path``: a package directory imported as ``name``,
    or one module imported as ``ecs_spatial.<name>``."""
    where = Path(path).resolve()
    if where.is_dir():
        spec = importlib.util.spec_from_file_location(
            name, where / "__init__.py", submodule_search_locations=[str(where)])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[name] = package
        spec.loader.exec_module(package)  # the caller's own copy
        return cast("type[Any]", importlib.import_module(f"{name}.quadtree").QuadTree)
    importlib.import_module("ecs_spatial")
    qualified = f"ecs_spatial.{name}"
    spec = importlib.util.spec_from_file_location(qualified, where)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)  # the caller's own file
    return cast("type[Any]", module.QuadTree)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.ab", description=(__doc__ or "").split("\n", 1)[0]
    )
    parser.add_argument("variants", nargs="+", help="PATH[:FEED[:THRESHOLD]]")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--moving", type=float, default=1.0)
    args = parser.parse_args(argv)
    contenders = []
    for k, spec in enumerate(args.variants):
        path, feed, threshold = [*spec.split(":"), "", ""][:3]
        if feed and feed not in (*FEEDS, "atomic"):
            parser.error(f"feed must be one of {[*FEEDS, 'atomic']}, got {feed!r}")
        contenders.append(QuadTreeContender(
            spec, cls=load(path, f"ab_variant_{k}"), threshold=int(threshold or 16),
            feed="many" if feed in ("", "atomic") else feed, atomic=feed == "atomic",
        ))
    result = run("ab", World(args.n, moving=args.moving), contenders, Ask("pairs"),
                 frames=args.frames)
    base = result.contenders[0]
    for c in result.contenders:
        print(f"{c.name:48s} update {c.ms('update'):6.2f}  pairs {c.ms('answer'):6.2f}  ms  "
              f"x{c.ratio(base):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
