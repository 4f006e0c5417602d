"""The benchmarks' machinery, on tiny worlds.

Benchmarks are not tests (their figures live in ``bench/results/``), but what keeps them
honest must itself work: the frame loop checks every contender's answers against a reference
on the first frames and stops on any difference, and the baselines that ecs_spatial is
measured against must answer exactly. A broken loop would publish figures nobody could
trust. And the one entry point must list, and run, everything there is to measure.
"""

from __future__ import annotations

import ast
import re
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ecs_spatial import components

# The ``bench`` package sits beside ``ecs_spatial`` in the repository; ``python -m pytest``
# from the root finds it on its own, but CI also runs the suite from a script elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.__main__ import MEASUREMENTS
from bench.__main__ import main as bench_main
from bench.baselines import (
    BruteContender,
    SeedContender,
    SweepContender,
    TutorialContender,
    brute_pairs,
)
from bench.game import QUICK, overhead_part
from bench.harness import Ask, Contender, IndexContender, Mismatch, Pair, rotated, run, sweep_pairs
from bench.ours import EsperGame, IncrementalContender, QuadTreeContender, SlotAABB, SlotPosition
from bench.peers import SCENARIOS
from bench.record import machine_slug, markdown_table
from bench.world import VARIANTS, World

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
TOOLS = ROOT / "tools"
#: Whether the compiled components are in use (what tools.component_tax measures).
NATIVE_COMPONENTS = components.NATIVE


def ours_and_baselines(kind: str) -> list[Contender]:
    contenders: list[Contender] = [QuadTreeContender(), EsperGame()]
    if kind == "pairs":
        contenders.append(IncrementalContender())
    return [*contenders, TutorialContender(), SeedContender("rebuild"), BruteContender()]


@pytest.mark.parametrize(("scenario", "variant"), [
    ("uniform", "uniform"), ("uniform-10", "clustered"), ("uniform-1", "mixed"),
    ("churn", "uniform"), ("cull", "uniform"), ("radius", "clustered"),
])
def test_every_scenario_kind_runs_with_its_answers_checked(scenario: str, variant: str) -> None:
    """ecs_spatial's contenders and the baselines run each kind of scenario through the
    frame loop, every answer of the verified frames equal to the reference's."""
    s = SCENARIOS[scenario]
    contenders = ours_and_baselines(s.kind)
    world = World(300, seed=3, variant=variant, moving=s.moving, churn=s.churn)
    result = run(scenario, world, contenders, s.ask(), frames=2, warmup=3, verify=3)
    assert [r.name for r in result.contenders] == [c.name for c in contenders]
    assert all(r.ms() > 0.0 and r.missing == r.extra == 0 for r in result.contenders)
    assert result.answers > 0  # pairs or query hits were there to be checked


class DropsOnePair(QuadTreeContender):
    """A contender that loses one pair a frame."""

    def pairs(self) -> list[Pair]:
        return list(super().pairs()[1:])


class DropsOneHit(QuadTreeContender):
    """A contender whose culling queries each lose one hit."""

    def query(self, box: tuple[float, float, float, float]) -> list[int]:
        return super().query(box)[1:]


@pytest.mark.parametrize(("ask", "wrong"), [
    (Ask("pairs"), DropsOnePair), (SCENARIOS["cull"].ask(), DropsOneHit),
    (Ask("update"), DropsOnePair),
])
def test_a_contender_that_answers_wrong_stops_the_run(
    ask: Ask, wrong: type[QuadTreeContender]
) -> None:
    """Nobody wins by being wrong: one missing answer and the run stops, naming it; the
    same contender marked inexact has the difference counted, and one that answers another
    question is not checked."""
    with pytest.raises(Mismatch, match="drops"):
        run("wrong", World(300, seed=3), [QuadTreeContender(), wrong("drops")], ask,
            frames=1, verify=2)
    inexact = wrong("inexact")
    inexact.exact = False
    unchecked = wrong("unchecked")
    unchecked.exact = None
    result = run("counted", World(300, seed=3), [QuadTreeContender(), inexact, unchecked], ask,
                 frames=1, verify=2)
    assert result["inexact"].missing >= 1 and result["inexact"].extra == 0
    assert result["unchecked"].missing == result["unchecked"].extra == 0


class Silent(QuadTreeContender):
    """A contender that answers nothing."""

    def answer(self, questions: list[object]) -> None:
        return None


def test_a_contender_that_answers_nothing_stops_the_run() -> None:
    """An answer missing is a wrong answer, not one that cannot be checked."""
    with pytest.raises(Mismatch, match="silent answered 0 of the 1 questions"):
        run("silent", World(100), [QuadTreeContender(), Silent("silent")], frames=1)


class Slow(IndexContender):
    """A contender timed on a tenth of the work, two frames at most."""

    name = "slow"
    scale = 10.0
    limit = 2

    def fill(self, world: World) -> None:
        self.world = world

    def update(self, world: World, step: object) -> None:
        pass

    def pairs(self) -> list[Pair]:
        return sweep_pairs(self.world.boxes())


def test_scaled_and_limited_contenders() -> None:
    """A contender's ``limit`` caps its timed frames and its ``scale`` multiplies its
    figures; the others run every frame, and ratios compare the frames both ran."""
    result = run("slow", World(200), [QuadTreeContender(), Slow()], frames=5)
    fast, slow = result.contenders
    assert len(fast.times["frame"]) == 5 and len(slow.times["frame"]) == 2
    assert slow.scale == 10.0
    assert slow.ms() == pytest.approx(10 * 1e3 * statistics.median(slow.times["frame"]))
    assert slow.ratio(fast) > 0


def test_a_bare_esper_game_runs_beside_ecs_spatials() -> None:
    """A new benchmark plugs into the one interface: the user's game on plain slotted
    components, without a SpatialProcessor, beside the same game on ecs_spatial's
    components with one (whose pairs are checked), each phase timed."""
    bare = EsperGame("bare", movement="velocity", position=SlotPosition, aabb=SlotAABB,
                     spatial=False)
    ours = EsperGame("ours", movement="velocity")
    result = run("overhead", World(400, moving=0.5), [bare, ours], frames=3, verify=3)
    assert result["bare"].ms("movement") > 0 and result["ours"].ms("SpatialProcessor") > 0
    assert "SpatialProcessor" not in result["bare"].times
    assert result.answers > 0


def test_the_overhead_part_rates_the_three_games(capsys: pytest.CaptureFixture[str]) -> None:
    """``--parts overhead``: a row per world of the bare game, ecs_spatial's components and
    the SpatialProcessor added, and at 10,000 all moving the issue's targets (the overhead,
    the tax, the buffer path's ratio) and the processor's phases; the 1% world not run, its
    target says so."""
    rows = overhead_part(replace(QUICK, overhead=((300, 0.5, 2), (10_000, 1.0, 1))))
    shown = capsys.readouterr().out
    assert "| 300 | 50% |" in shown and "| 10,000 | 100% |" in shown
    assert "| read | update | pairs | events |" in shown
    assert [r[0] for r in rows] == [
        "10,000 all moving: overhead (3 - 1) / 1", "10,000 all moving: tax on the user's loop",
        "10,000 all moving: processor / buffer path", "10,000: processor at 1% moving / all moving"]
    assert all(float(r[1]) > 0 for r in rows[:3])  # the processor's frame costs something
    assert rows[3][1:] == ["-", "<= 0.05", "skipped (not measured)"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["uniform", "cull", "radius"])
def test_baselines_answer_exactly(variant: str, kind: str) -> None:
    """The tutorial quadtree, both modes of the seed port, sort-and-sweep and brute force
    answer exactly as the reference does, touching boxes included: sort-and-sweep (the
    frame loop's reference for pairs) equals brute force, and the loop holds every baseline
    to it and to brute-force scans for the queries."""
    ask = SCENARIOS[kind].ask()
    touching = 0
    for n, seed, churn, snap in ((1, 1, 0.0, False), (2, 2, 0.0, True), (17, 1, 0.02, True),
                                 (150, 2, 0.0, False), (600, 1, 0.02, True)):
        world = World(n, seed=seed, variant=variant, moving=0.5, churn=churn, snap=snap)
        boxes = world.boxes()
        reference = brute_pairs(boxes)
        assert sweep_pairs(boxes) == reference
        for a, b in reference:  # pairs that only touch: an edge or a corner shared
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = boxes[a], boxes[b]
            touching += ax1 == bx0 or bx1 == ax0 or ay1 == by0 or by1 == ay0
        run(f"{variant} {n}", world, [
            BruteContender(), SweepContender(), TutorialContender(), SeedContender("rebuild"),
            SeedContender("remove-add"),
        ], ask, frames=0, warmup=3, verify=3)
    assert touching > 0  # the snapped worlds hold boxes that only touch


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
    (each has a ``main``; nothing else in ``bench/`` has one) and points to the tools,
    whose README lists every one of them."""
    listed = {module.removeprefix("bench.") for module in MEASUREMENTS.values()}
    assert _modules_with_main(BENCH) - {"__main__"} == listed
    readme = (TOOLS / "README.md").read_text()
    assert {m[1] for m in re.finditer(r"^- `(\w+)`:", readme, re.MULTILINE)} == (
        _modules_with_main(TOOLS))
    with pytest.raises(SystemExit) as exit_:
        bench_main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for name in MEASUREMENTS:
        assert re.search(rf"^\s+{name}\b", shown, flags=re.MULTILINE), name
    assert "tools/README.md" in shown


def test_the_suite_does_not_import_the_tools() -> None:
    """The investigation tools sit outside the suite and may use it; the suite never uses
    them, so that a tool can change or go without touching a measurement."""
    for path in BENCH.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.split(".")[0] == "tools"], path


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
    return {p for p in (BENCH / "results").rglob("*") if p.is_file()}


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("argv", [
    *([name] for name in MEASUREMENTS),
    *(["peers", "--set", s] for s in ("baselines", "thresholds", "build")),
], ids=" ".join)
def test_every_measurement_runs_quick(argv: list[str]) -> None:
    """``python -m bench <name> --quick`` runs from the repository root, prints its figures
    and writes nothing into ``bench/results/``."""
    before = _results_files()
    done = _run("-m", "bench", *argv, "--quick")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
    assert _results_files() == before


def test_save_writes_into_the_results_folder(tmp_path: Path) -> None:
    """``--save`` writes the figures to ``<out>/<name>.md`` under the command that wrote
    them, and ``machine.txt`` records the machine, the Python and the run's revision; the
    suite stores its runs in ``peers.json`` and rewrites ``peers.md`` from them."""
    done = _run("-m", "bench", "esper", "--parts", "dispatch", "--quick", "--save", "--out",
                str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    written = (tmp_path / "esper.md").read_text()
    assert written.startswith("Written by `python -m bench esper --parts dispatch --quick")
    assert "| esper.dispatch_event |" in written
    done = _run("-m", "bench", "peers", "--scenarios", "uniform-10", "--n", "200", "--frames",
                "1", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "uniform-10@200" in (tmp_path / "peers.json").read_text()
    assert "## uniform, 10% moving, all pairs" in (tmp_path / "peers.md").read_text()
    notes = (tmp_path / "machine.txt").read_text()
    for field in ("CPU:", "cores:", "OS:", "Python:", "esper:"):
        assert field in notes
    runs = [line for line in notes.splitlines() if line.startswith("- ")]
    assert len(runs) == 2 and "python -m bench peers --scenarios" in runs[1]


def test_the_tools_run_as_modules() -> None:
    """The tools run as ``python -m tools.<name>``: the scene profile loads the
    example scene by its path; the callgrind driver runs a measurement's contender."""
    done = _run("-m", "tools.scene_profile", "--boxes", "200", "--frames", "3")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "movers:" in done.stdout
    done = _run("-m", "tools.frames", "handlers", "typed (Ti, None) x10", "--n", "300")
    assert done.returncode == 0, done.stderr[-2000:]
    done = _run("-m", "tools.frames", "overhead", "+ SpatialProcessor", "--n", "300")
    assert done.returncode == 0, done.stderr[-2000:]
    done = _run("-m", "tools.pair_diff_cost", "--n", "300", "--repeats", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reference" in done.stdout and "update" in done.stdout
    if NATIVE_COMPONENTS:
        done = _run("-m", "tools.component_tax", "--n", "300", "--frames", "2", "--repeats", "1")
        assert done.returncode == 0, done.stderr[-2000:]
        assert "x plain" in done.stdout


def test_machine_folder_names() -> None:
    """A results folder is named for the CPU's model, without trademarks or clock speeds."""
    assert machine_slug("Intel(R) Xeon(R) Processor") == "intel-xeon"
    assert machine_slug("AMD EPYC 7763 64-Core Processor") == "amd-epyc-7763-64-core"
    assert machine_slug("Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz") == "intel-core-i7-8650u"


def test_shared_pieces() -> None:
    """The order rotates; a markdown table is its header, its rule and its rows."""
    assert rotated([1, 2, 3], 4) == [2, 3, 1]
    assert markdown_table(["a", "b"], [[1, 2]], right=True) == "| a | b |\n|---|---:|\n| 1 | 2 |"


def test_results_are_one_folder_per_machine() -> None:
    """``bench/results/`` holds one folder per machine, the latest figures only (earlier
    ones are in git's history): no folder is dated, and no code of ``bench/`` names a dated
    results folder (a figure lives in the results and the docs, not in a comment)."""
    folders = [p.name for p in (BENCH / "results").iterdir() if p.is_dir()]
    assert folders and all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", f) for f in folders)
    assert not [f for f in folders if re.search(r"\d{4}-\d\d-\d\d", f)]
    for path in [*BENCH.rglob("*.py"), *TOOLS.rglob("*.py")]:
        assert not re.search(r"results/[\w-]*\d{4}-\d\d-\d\d", path.read_text()), path


def test_bench_keeps_to_its_package() -> None:
    """No module of ``bench/`` edits ``sys.path`` (it runs as a package), and nothing in it
    names an issue of a tracker outside the repository."""
    for path in BENCH.rglob("*"):
        if path.suffix not in (".py", ".md", ".txt") or not path.is_file():
            continue
        text = path.read_text()
        if path.suffix == ".py":
            assert "sys.path.insert" not in text, path
        assert not re.search(r"\bissues?\s+#?\d+|\bissue-\d+", text, re.IGNORECASE), path
