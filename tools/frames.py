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

Each file's ``summary:`` line is its count; ``--callgrind`` makes both runs of every
contender of the set (or of the one named) and prints its instructions a frame. Sets:
``handlers`` (``python -m bench esper --parts handlers``, and ``bare``), ``game`` (the user's
game with its SpatialProcessor, ``processor``; the same without it, ``bare``; the bare tree,
``bare tree``), ``dispatch`` (``--parts dispatch``; N is the events), ``overhead``
(``--parts overhead``'s three games, and ``world step``, a contender that does nothing:
subtract it from each).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from bench.game import dispatch_contenders, handlers_contenders, overhead_contenders, user_game
from bench.harness import Ask, Contender, run
from bench.ours import EsperGame, QuadTreeContender
from bench.world import Step, World


class Idle(Contender):
    """Nothing a frame: what the frame loop and the world's step cost by themselves."""

    name, exact = "world step", None

    def build(self, world: World, ask: Ask) -> None:
        pass

    def update(self, world: World, step: Step) -> None:
        pass


SETS: dict[str, Callable[[int], tuple[World, Ask, list[Contender]]]] = {
    "handlers": lambda n: (World(n), Ask("update"), [
        *handlers_contenders(), EsperGame("bare", spatial=False)]),
    "game": lambda n: (World(n), Ask("update"), [
        user_game(), EsperGame("bare", movement="velocity", spatial=False),
        QuadTreeContender("bare tree", feed="loop", bulk=True)]),
    "dispatch": lambda n: (World(1), Ask("update"), dispatch_contenders(n)),
    "overhead": lambda n: (World(n), Ask("update"), [*overhead_contenders()[:3], Idle()]),
}


def instructions(argv: list[str]) -> int:
    """The instructions callgrind counts in ``python -m tools.frames *argv``, with the
    string hash seed fixed, so that both runs of a difference lay out their dicts and sets
    alike (repeated differences still vary by a few million instructions a frame: compare
    figures from several runs, not one)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-m", "tools.frames", *argv], check=True,
                       capture_output=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        return next(int(line.split()[1]) for line in out.read_text().splitlines()
                    if line.startswith("summary:"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.frames", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("set", choices=list(SETS))
    parser.add_argument("contender", nargs="?", default="",
                        help="its name in the measurement's table (--callgrind: default all)")
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--callgrind", action="store_true",
                        help="count each contender's instructions a frame under valgrind")
    args = parser.parse_args(argv)
    world, ask, contenders = SETS[args.set](args.n)
    if args.callgrind:
        for c in contenders:
            if c.name == args.contender or not args.contender:
                runs = [instructions([args.set, c.name, "--n", str(args.n), "--frames", str(k)])
                        for k in (0, args.frames)]
                per = (runs[1] - runs[0]) / args.frames
                print(f"{c.name}: {per / 1e6:.1f} M instructions a frame, "
                      f"{per / args.n:,.0f} an entity", flush=True)
        return 0
    chosen = [c for c in contenders if c.name == args.contender]
    if not chosen:
        parser.error(f"no contender {args.contender!r} in {args.set}: "
                     + ", ".join(repr(c.name) for c in contenders))
    run(args.set, world, chosen, ask, frames=args.frames, warmup=2, verify=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
