"""Make the screenshots of the example scenes that the README and the documentation show,
from the scenes themselves: each scene of this checkout runs headless (pyglet over Mesa's
EGL) with its fixed seed, and saves its last frame with its own ``--screenshot``.

    .venv/bin/python scripts/screenshots.py            # docs/collisions.png, camera, boids, flock
    .venv/bin/python scripts/screenshots.py --only camera --out /tmp/shots --size 480x300

Run it whenever a scene or its HUD changes (the tests run it at a small size with
``--quick``, so that it keeps working). The HUD shows the run's timings: on a busy machine
they are inflated, so make the pictures on a quiet one. ``docs/bench.png`` is not a scene's:
the benchmark suite draws it (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Each scene, and the options of its picture: what the scene shows at its best (the
#: collisions scene just after a volley of bullets, the camera on its tour at about zoom 0.9,
#: the flock once it has gathered).
SHOTS: dict[str, list[str]] = {
    "collisions": ["--frames", "300", "--fire-every", "100"],
    "camera": ["--frames", "300"],
    "boids": ["--frames", "600"],
    "flock": ["--frames", "300"],
}
#: What ``--quick`` (the tests' run) adds to a scene's options: the flock at a tenth of its
#: boids, which the pure-Python build would otherwise take seconds a frame over.
QUICK: dict[str, list[str]] = {"flock": ["--boids", "1000"]}
SIZE = "960x600"


def shoot(scene: str, out: Path, size: str, frames: int | None, quick: bool = False) -> str:
    """Run ``scene`` headless and save its last frame to ``out``; return its summary line
    (``SystemExit`` with the scene's error output if it fails)."""
    argv = [*SHOTS[scene], *(QUICK.get(scene, []) if quick else [])]
    if frames is not None:
        argv[argv.index("--frames") + 1] = str(frames)
    env = dict(os.environ)  # this checkout's package, not another one installed
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{scene}.py"), "--headless", "--size", size,
         "--screenshot", str(out), *argv],
        capture_output=True, text=True, env=env, check=False,
    )
    if result.returncode != 0 or not out.is_file():
        raise SystemExit(f"{scene} failed (exit status {result.returncode}):\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/screenshots.py", description=(__doc__ or "").split("\n\n", 1)[0]
    )
    parser.add_argument("--out", type=Path, default=ROOT / "docs",
                        help="folder of the PNG files, one per scene (default: docs)")
    parser.add_argument("--size", default=SIZE, help=f"window size WxH (default: {SIZE})")
    parser.add_argument("--frames", type=int, default=None,
                        help="frames to run each scene (default: each its own, as in SHOTS)")
    parser.add_argument("--quick", action="store_true",
                        help="the lighter scenes of a check (QUICK), not the pictures' own")
    parser.add_argument("--only", choices=sorted(SHOTS), action="append",
                        help="this scene only (repeat for more)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for scene in args.only or list(SHOTS):
        out = args.out / f"{scene}.png"
        summary = shoot(scene, out, args.size, args.frames, args.quick)
        print(f"{out}: {summary}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
