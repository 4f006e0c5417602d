"""The benchmark suite's machinery, on tiny worlds.

Benchmarks are not tests (their figures live in ``bench/``), but what keeps them honest must
itself work: the harness checks every contender's answers against a reference on the first
frames and stops on any difference, and the baselines that ecs_spatial is measured against
must answer exactly. A broken harness would publish figures nobody could trust.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the ``bench`` package

from bench import baselines
from bench.baselines import BruteContender, SeedContender, TutorialContender
from bench.common import BoxT, Contender, Pair
from bench.harness import Mismatch, run_scenario
from bench.ours import (
    ProcessorContender,
    QuadTreeContender,
    QuadTreeIncrementalContender,
)
from bench.world import World


def ours_and_baselines(kind: str) -> list[Contender]:
    contenders: list[Contender] = [QuadTreeContender(), ProcessorContender()]
    if kind == "pairs":
        contenders.append(QuadTreeIncrementalContender())
    return [*contenders, TutorialContender(), SeedContender("rebuild"), BruteContender()]


@pytest.mark.parametrize(
    ("kind", "variant", "moving", "churn"),
    [
        ("pairs", "uniform", 1.0, 0.0),
        ("pairs", "clustered", 0.1, 0.0),
        ("pairs", "mixed", 0.01, 0.0),
        ("pairs", "uniform", 1.0, 0.02),
        ("cull", "uniform", 1.0, 0.0),
        ("radius", "clustered", 1.0, 0.0),
    ],
)
def test_every_scenario_kind_runs_with_its_answers_checked(
    kind: str, variant: str, moving: float, churn: float
) -> None:
    """ecs_spatial's contenders and the baselines run each kind of scenario through the
    harness, every answer of the verified frames equal to the reference's."""
    contenders = ours_and_baselines(kind)
    try:
        result = run_scenario(
            f"{kind} {variant}",
            lambda: World(300, seed=3, variant=variant, moving=moving, churn=churn),
            contenders,
            kind=kind,
            frames=2,
            reps=1,
            warmup=3,
            verify=3,
        )
    finally:
        for contender in contenders:
            contender.close()
    assert [r.name for r in result.contenders] == [c.name for c in contenders]
    assert all(r.median_ms > 0.0 for r in result.contenders)
    assert result.answers > 0  # pairs or query hits were there to be checked


class DropsOnePair(QuadTreeContender):
    """A contender that loses one pair a frame."""

    name = "drops a pair"

    def pairs(self) -> list[Pair]:
        return super().pairs()[1:]


class DropsOneHit(QuadTreeContender):
    """A contender whose culling queries each lose one hit."""

    name = "drops a hit"

    def query(self, box: BoxT) -> list[int]:
        return super().query(box)[1:]


@pytest.mark.parametrize(("kind", "wrong"), [("pairs", DropsOnePair), ("cull", DropsOneHit)])
def test_a_contender_that_answers_wrong_stops_the_run(
    kind: str, wrong: type[QuadTreeContender]
) -> None:
    """Nobody wins by being wrong: one missing answer and the run stops, naming it."""
    with pytest.raises(Mismatch, match=wrong.name):
        run_scenario(
            kind,
            lambda: World(300, seed=3),
            [QuadTreeContender(), wrong()],
            kind=kind,
            frames=2,
            reps=1,
            warmup=2,
            verify=2,
        )


def test_baselines_agree_with_brute_force() -> None:
    """The tutorial quadtree, the seed port and sort-and-sweep find exactly brute force's
    pairs, touching boxes included (``python bench/baselines.py --check``)."""
    assert baselines.check(frames=2, verbose=False) == 0


SCRIPT_DIRS = ("bench", "examples")


@pytest.mark.parametrize("folder", SCRIPT_DIRS)
def test_no_script_shadows_a_standard_module(folder: str) -> None:
    """A script's folder comes first on ``sys.path`` when it runs, so a file named like a
    standard module (``profile.py``) breaks every import of it there (``cProfile`` imports
    ``profile``)."""
    root = Path(__file__).resolve().parent.parent / folder
    clashes = sorted(p.name for p in root.glob("*.py") if p.stem in sys.stdlib_module_names)
    assert clashes == []


@pytest.mark.parametrize(
    "argv",
    [
        ["bench/scene_profile.py", "--boxes", "200", "--frames", "3"],
        ["bench/frame.py", "--n", "200", "--frames", "2", "--reps", "1", "--warmup", "2",
         "--verify", "2", "--no-seed-port"],
        ["bench/run.py", "--list"],
        ["bench/build.py", "--n", "300", "--reps", "1"],
        ["bench/thresholds.py", "--scenarios", "uniform-10,cull", "--n", "200",
         "--thresholds", "16,32", "--frames", "2", "--reps", "1"],
        ["bench/queries_bench.py", "--n", "300", "--moving", "0.1", "--frames", "2",
         "--warmup", "1", "--brute-frames", "1", "--brute-watchers", "10"],
        ["bench/native_bench.py", "--quick"],
    ],
)
def test_bench_scripts_run_as_scripts(argv: list[str]) -> None:
    """The scripts run from the command line, as the README tells people to run them."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, *argv], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
