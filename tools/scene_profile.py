"""Where the headline scene's spatial time goes, without a window.

``examples/collisions.py`` with its walls and its movers, in an esper world of its own, but
no pyglet and no drawing: the handlers only count contacts and bounce boxes off the walls
(the scene's own ``bounce``), so that the world stays as the scene's. That is the
SpatialProcessor's share of the scene's "spatial ms" (the scene's handlers also recolour
boxes, inside ``process()``). Prints the mean CPU ms per frame of the movement and the
spatial processor, then a cProfile of the same frames.

    python -m tools.scene_profile --boxes 2000 --frames 60
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time

import esper

from ecs_spatial import COLLISION_ENTER, COLLISION_EXIT
from tools import example

#: The example scene: its own world-building functions, nothing drawn.
collisions = example("collisions")


class Handlers:
    """Count the events and bounce boxes off walls (esper keeps handlers weakly: these are
    bound methods of an object the script keeps)."""

    def __init__(self, walls: set[int]) -> None:
        self.walls = walls
        self.events = 0

    def on_enter(self, a: int, b: int) -> None:
        self.events += 1
        if b in self.walls and a not in self.walls:
            collisions.bounce(a, b)
        elif a in self.walls and b not in self.walls:
            collisions.bounce(b, a)

    def on_exit(self, _a: int, _b: int) -> None:
        self.events += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.scene_profile", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--boxes", type=int, default=2000)
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--width", type=int, default=960)
    parser.add_argument("--height", type=int, default=600)
    parser.add_argument("--search", default="auto", help="pair_search: auto, full, incremental")
    args = parser.parse_args(argv)

    esper.switch_world("scene-profile")
    spatial = collisions.make_spatial(args.width, args.height)
    spatial.pair_search = args.search
    handlers = Handlers(set(collisions.build_walls(args.width, args.height)))
    esper.set_handler(COLLISION_ENTER, handlers.on_enter)
    esper.set_handler(COLLISION_EXIT, handlers.on_exit)
    rng = random.Random(1)
    for _ in range(args.boxes):
        collisions.create_mover(
            rng, rng.uniform(20, args.width - 50), rng.uniform(20, args.height - 50)
        )
    movement = collisions.MovementProcessor()

    def frames(k: int) -> tuple[float, float]:
        moving = spatial_s = 0.0
        for _ in range(k):
            t0 = time.process_time()
            movement.process(1 / 60)
            t1 = time.process_time()
            spatial.process()
            spatial_s += time.process_time() - t1
            moving += t1 - t0
        return moving / k * 1e3, spatial_s / k * 1e3

    frames(10)  # warm up: the first frame inserts everything
    move_ms, spatial_ms = frames(args.frames)
    print(
        f"{args.boxes} movers: movement {move_ms:.2f} ms, spatial processor {spatial_ms:.2f} ms "
        f"per frame (CPU), {len(spatial.pairs)} pairs, {handlers.events} events, "
        f"index bounds {tuple(spatial.index.bounds or ())}"
    )
    profile = cProfile.Profile()
    profile.runcall(frames, args.frames)
    pstats.Stats(profile).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
