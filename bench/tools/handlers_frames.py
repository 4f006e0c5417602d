"""Frames of ``bench handlers``' contenders, one contender a run, for callgrind: the machine
is too noisy for wall-clock to tell a few percent apart, instructions are not.

Builds the contender's world as ``python -m bench handlers`` does, runs two frames, then
``--frames`` more (``--contender move`` moves the world without ``esper.process()``: the
movement's share). One frame of the processor is then the difference of two runs, over the
frames, less the movement's:

    valgrind --tool=callgrind --callgrind-out-file=plain.0 \
        python -m bench.tools.handlers_frames --contender plain --frames 0
    valgrind --tool=callgrind --callgrind-out-file=plain.5 \
        python -m bench.tools.handlers_frames --contender plain --frames 5

and the same for ``typed`` and ``move``; each file's ``summary:`` line is its count.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

import esper

from bench import handlers
from bench.world import World
from ecs_spatial import SpatialProcessor

SETUPS: dict[str, Callable[[SpatialProcessor], None]] = {
    "move": lambda spatial: None,
    "plain": lambda spatial: None,
    "typed": handlers.by_one_type,
    "typed2": handlers.by_two_types,
    "none": handlers.by_unheld_types,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.tools.handlers_frames", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--contender", choices=sorted(SETUPS), default="plain")
    parser.add_argument("--frames", type=int, default=5)
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args(argv)
    world = World(args.n)
    handlers.build(world, "handlers_frames", SETUPS[args.contender],
                   args.contender not in ("plain", "move"))
    process = args.contender != "move"

    def frames(count: int) -> None:
        for _ in range(count):
            handlers.step(world)
            if process:
                esper.process()

    frames(2)
    frames(args.frames)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
