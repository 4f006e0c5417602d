"""What the pyglet debug overlay costs a frame, in the scenes that use it (headless).

- ``collisions``: ``DebugOverlay.update()`` over the whole arena (the scene's 2,000 boxes,
  its pairs and nodes), the median of ``--repeat`` updates after a few frames of the scene;
- ``camera``: the nodes layer in the camera scene's world of 100,000 entities, listed the
  old way (every node of ``index.nodes()``, filtered by the view) and by ``nodes(view)``, at
  zoom 1 and 0.4; then a whole ``update()`` with and without the nodes layer.

    python -m tools.overlay_cost
    python -m tools.overlay_cost --scene camera --repeat 15

It opens headless windows (pyglet over Mesa's EGL): run it where the examples' tests run.
``overlay.md`` in the results of the machine it ran on holds its figures, which the overlay's
docs quote.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from tools import example


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def collisions(repeat: int) -> None:
    scene = example("collisions").create(["--headless"])
    scene.app.start(scene)
    scene.app.step(10)
    overlay = scene.overlay
    overlay.visible = True
    overlay.update()
    ms = median_ms(overlay.update, repeat)
    print(f"collisions: update() {ms:.2f} ms (median of {repeat}); lines by layer "
          f"{overlay.counts}; "
          f"{len(scene.spatial.index)} boxes, {len(scene.spatial.pairs)} pairs")
    scene.app.close()


def camera(repeat: int) -> None:
    from ecs_spatial.pyglet_debug import DebugOverlay

    scene = example("camera").create(["--headless"])
    app = scene.app
    app.start(scene)
    app.step(3)
    index = scene.spatial.index
    print(f"camera: {len(index):,} entities, {sum(1 for _ in index.nodes()):,} nodes "
          f"({type(index).__module__})")
    for zoom in (1.0, 0.4):
        scene.camera.zoom = zoom
        view = scene.camera.view()

        def every_node(view: Any = view) -> list[Any]:
            return [info for info in index.nodes() if info.box.intersects(view)]

        def in_view(view: Any = view) -> list[Any]:
            return list(index.nodes(view))

        assert every_node() == in_view()
        print(f"  zoom {zoom}: {len(in_view())} nodes in view: every node filtered "
              f"{median_ms(every_node, repeat):.2f} ms, nodes(view) "
              f"{median_ms(in_view, repeat):.2f} ms")
    scene.camera.zoom = 1.0
    for layers in (("boxes", "pairs"), ("nodes", "boxes", "pairs")):
        overlay = DebugOverlay(scene.spatial, scene.batch, view=scene.camera.view, layers=layers)
        overlay.update()
        print(f"  update() with layers {layers}: {median_ms(overlay.update, repeat):.2f} ms")
        overlay.delete()
    app.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.overlay_cost", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--scene", choices=["collisions", "camera", "both"], default="both")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)
    if args.scene in ("collisions", "both"):
        collisions(args.repeat)
    if args.scene in ("camera", "both"):
        camera(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
