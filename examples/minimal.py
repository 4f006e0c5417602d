"""The smallest game loop with collisions, each printed as it begins and ends; --window draws it."""

import sys
import time
from collections import namedtuple
from typing import Any

import esper

from ecs_spatial import AABB, COLLISION_ENTER, COLLISION_EXIT, Position, SpatialProcessor

FRAMES, STEP = 90, 1 / 30  # a fixed step, in seconds: every run prints the same lines
Velocity = namedtuple("Velocity", "x y")  # a component of the game's own, per second


class Movement(esper.Processor):
    frame = 0  # counted for the handlers below: bound methods of an object the world keeps

    def process(self, *args: Any, **kwargs: Any) -> None:
        self.frame += 1
        for _, (pos, vel) in esper.get_components(Position, Velocity):
            pos.translate(vel.x * STEP, vel.y * STEP)  # assigning marks the Position dirty

    def on_enter(self, a: int, b: int) -> None:
        print(f"frame {self.frame:2}: {a} and {b} touch")

    def on_exit(self, a: int, b: int) -> None:
        print(f"frame {self.frame:2}: {a} and {b} part")


def main(argv: list[str] | None = None) -> int:
    movement = Movement()  # esper keeps handlers by weak reference: keep their object alive
    esper.set_handler(COLLISION_ENTER, movement.on_enter)
    esper.set_handler(COLLISION_EXIT, movement.on_exit)
    esper.create_entity(Position(0, 0), AABB(10, 10), Velocity(60, 0))
    esper.create_entity(Position(50, 0), AABB(10, 10))
    esper.create_entity(Position(100, 5), AABB(10, 10), Velocity(-30, 0))
    esper.add_processor(movement)  # the movers first, then the index: esper runs them in order
    esper.add_processor(SpatialProcessor())
    window = "--window" in (sys.argv[1:] if argv is None else argv)
    if window:  # pyglet is needed only here: the game loop itself needs no window
        import pyglet
        screen, batch = pyglet.window.Window(160, 40, "minimal"), pyglet.graphics.Batch()
        shapes = [pyglet.shapes.Rectangle(0, 0, 10, 10, batch=batch) for _ in range(3)]
    for _ in range(FRAMES):
        esper.process()
        if window:
            for shape, (_, pos) in zip(shapes, esper.get_component(Position), strict=True):
                shape.position = (pos.x, pos.y)
            screen.dispatch_events()
            screen.clear()
            batch.draw()
            screen.flip()
            time.sleep(STEP)
    return 0


if __name__ == "__main__":
    sys.exit(main())
