"""Frames of one contender of a measurement, for callgrind: on a shared machine wall clock
cannot tell a few percent apart; instruction counts can.

Builds the contender as its measurement does, runs 2 frames of the frame loop, then
``--frames`` more (nothing checked). One frame is the difference between two runs, over the
frames; a part of a frame, the difference between two contenders (``bare``, a game without
processors, gives the movement's share):

    valgrind --tool=callgrind --callgrind-out-file=plain.0 \\
        python -m tools.frames handlers plain --frames 0
    valgrind --tool=callgrind --callgrind-out-file=plain.5 \\
        python -m tools.frames handlers plain --frames 5

Each file's ``summary:`` line is its count. Sets: ``handlers`` (``python -m bench esper
--parts handlers``, and ``bare``), ``game`` (the user's game with its SpatialProcessor,
``processor``; the same without it, ``bare``; the bare tree, ``bare tree``), ``dispatch``
(``--parts dispatch``; N is the events).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from bench.game import dispatch_contenders, handlers_contenders, user_game
from bench.harness import Ask, Contender, run
from bench.ours import EsperGame, QuadTreeContender
from bench.world import World

SETS: dict[str, Callable[[int], tuple[World, Ask, list[Contender]]]] = {
    "handlers": lambda n: (World(n), Ask("update"), [
        *handlers_contenders(), EsperGame("bare", spatial=False)]),
    "game": lambda n: (World(n), Ask("update"), [
        user_game(), EsperGame("bare", movement="velocity", spatial=False),
        QuadTreeContender("bare tree", feed="loop", bulk=True)]),
    "dispatch": lambda n: (World(1), Ask("update"), dispatch_contenders(n)),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.frames", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("set", choices=list(SETS))
    parser.add_argument("contender", help="its name in the measurement's table")
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args(argv)
    world, ask, contenders = SETS[args.set](args.n)
    chosen = [c for c in contenders if c.name == args.contender]
    if not chosen:
        parser.error(f"no contender {args.contender!r} in {args.set}: "
                     + ", ".join(repr(c.name) for c in contenders))
    run(args.set, world, chosen, ask, frames=args.frames, warmup=2, verify=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
