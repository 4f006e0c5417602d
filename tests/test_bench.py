"""The benchmarks' machinery, on tiny worlds.

Benchmarks are not tests (their figures live in ``bench/results/``), but what keeps them
honest must itself work: the harness checks every contender's answers against a reference on
the first frames and stops on any difference, and the baselines that ecs_spatial is measured
against must answer exactly. A broken harness would publish figures nobody could trust. And
the one entry point must list, and run, everything there is to measure.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The ``bench`` package sits beside ``ecs_spatial`` in the repository; ``python -m pytest``
# from the root finds it on its own, but CI also runs the suite from a script elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import baselines
from bench.__main__ import MEASUREMENTS, TOOLS
from bench.__main__ import main as bench_main
from bench.baselines import BruteContender, SeedContender, TutorialContender
from bench.contender import BoxT, Contender, Pair
from bench.harness import Mismatch, rotated, run_scenario
from bench.ours import (
    ProcessorContender,
    QuadTreeContender,
    QuadTreeIncrementalContender,
)
from bench.record import machine_slug, markdown_table
from bench.world import World

ROOT = Path(__file__).resolve().parent.parent


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
    pairs, touching boxes included (``python -m bench.tools.check_baselines``)."""
    assert baselines.check(frames=2, verbose=False) == 0


def test_no_example_shadows_a_standard_module() -> None:
    """An example's folder comes first on ``sys.path`` when it runs as a script, so a file
    named like a standard module (``profile.py``) breaks every import of it there
    (``cProfile`` imports ``profile``). The benchmarks run as a package (``python -m bench``)
    and are not exposed to this."""
    clashes = sorted(
        p.name for p in (ROOT / "examples").glob("*.py") if p.stem in sys.stdlib_module_names
    )
    assert clashes == []


def _modules_with_main(folder: Path) -> set[str]:
    """The modules of ``folder`` that define a top-level ``main``."""
    found = set()
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.add(path.stem)
    return found


def test_help_lists_every_measurement(capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m bench --help`` lists every module of ``bench/`` that measures something
    (each has a ``main``), and lists the tools apart; nothing else in ``bench/`` has a
    ``main``."""
    listed = {module.removeprefix("bench.") for module, _ in MEASUREMENTS.values()}
    assert _modules_with_main(ROOT / "bench") - {"__main__"} == listed
    assert _modules_with_main(ROOT / "bench" / "tools") == set(TOOLS)
    with pytest.raises(SystemExit) as exit_:
        bench_main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for name in [*MEASUREMENTS, *TOOLS]:
        assert re.search(rf"^\s+{name}\b", shown, flags=re.MULTILINE), name


@pytest.mark.parametrize("name", list(MEASUREMENTS))
def test_every_measurement_has_help_and_quick(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each subcommand answers ``--help`` with its own usage, which offers ``--quick``."""
    with pytest.raises(SystemExit) as exit_:
        bench_main([name, "--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: python -m bench {name}")
    assert "--quick" in shown


def _results_files() -> set[Path]:
    return {p for p in (ROOT / "bench" / "results").rglob("*") if p.is_file()}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("name", list(MEASUREMENTS))
def test_every_measurement_runs_quick(name: str) -> None:
    """``python -m bench <name> --quick`` runs from the repository root, prints its figures
    and writes nothing into ``bench/results/``."""
    before = _results_files()
    done = _run("-m", "bench", name, "--quick")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    assert _results_files() == before


def test_save_writes_into_the_results_folder(tmp_path: Path) -> None:
    """``--save`` writes the figures to ``<out>/<name>.md`` under the command that wrote
    them, and ``machine.txt`` records the machine, the Python and the run's revision; the
    suite stores its runs in ``peers.json`` and rewrites ``peers.md`` from them."""
    done = _run("-m", "bench", "dispatch", "--quick", "--save", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    written = (tmp_path / "dispatch.md").read_text()
    assert written.startswith("Written by `python -m bench dispatch --quick --save --out")
    assert "| esper.dispatch_event |" in written
    done = _run(
        "-m", "bench", "peers", "--scenarios", "uniform-10", "--n", "200", "--frames", "1",
        "--reps", "1", "--out", str(tmp_path),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "uniform-10@200" in (tmp_path / "peers.json").read_text()
    assert "## uniform, 10% moving, all pairs" in (tmp_path / "peers.md").read_text()
    notes = (tmp_path / "machine.txt").read_text()
    for field in ("CPU:", "cores:", "OS:", "Python:", "esper:"):
        assert field in notes
    runs = [line for line in notes.splitlines() if line.startswith("- ")]
    assert len(runs) == 2 and "python -m bench peers --scenarios" in runs[1]


def test_a_tool_runs_as_a_module() -> None:
    """The tools run as ``python -m bench.tools.<name>``; the scene profile loads the
    example scene by its path."""
    done = _run("-m", "bench.tools.scene_profile", "--boxes", "200", "--frames", "3")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "movers:" in done.stdout


def test_machine_folder_names() -> None:
    """A results folder is named for the CPU's model, without trademarks or clock speeds."""
    assert machine_slug("Intel(R) Xeon(R) Processor") == "intel-xeon"
    assert machine_slug("AMD EPYC 7763 64-Core Processor") == "amd-epyc-7763-64-core"
    assert machine_slug("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz") == "intel-core-i7-8650u"


def test_shared_pieces() -> None:
    """The order rotates; a markdown table is its header, its rule and its rows."""
    assert rotated([1, 2, 3], 4) == [2, 3, 1]
    assert markdown_table(["a", "b"], [[1, 2]], right=True) == "| a | b |\n|---|---:|\n| 1 | 2 |"


def test_bench_keeps_to_its_package() -> None:
    """No module of ``bench/`` edits ``sys.path`` (it runs as a package), and nothing in it
    names an issue of a tracker outside the repository."""
    for path in (ROOT / "bench").rglob("*"):
        if path.suffix not in (".py", ".md", ".txt") or not path.is_file():
            continue
        text = path.read_text()
        if path.suffix == ".py":
            assert "sys.path.insert" not in text, path
        assert not re.search(r"\bissues?\s+#?\d+|\bissue-\d+", text, re.IGNORECASE), path
