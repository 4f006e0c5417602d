"""Where figures go, and what they are stamped with: the machine, the Python, the revision.

Results live in ``bench/results/<machine>-<YYYY-MM-DD>/``, one folder per machine and UTC
date (``default_out()``), so that figures from different machines and days never sit side by
side. Every run that writes into a folder also notes itself in the folder's ``machine.txt``:
the machine (CPU, cores, OS, Python, esper) is written once, and each run adds a line with its
time, the git revision and the command.

Also here: the markdown table every measurement prints, and ``--out`` / ``--save``, the two
options by which a measurement's output lands in its folder.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

__all__ = [
    "RESULTS",
    "ROOT",
    "add_output_options",
    "cpu_model",
    "default_out",
    "machine",
    "machine_slug",
    "markdown_row",
    "markdown_table",
    "note_run",
    "now",
    "revision",
    "saved",
]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


# -- the machine -------------------------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def machine() -> str:
    """One line naming the machine and the Python the figures come from."""
    return (
        f"{platform.python_implementation()} {platform.python_version()} on "
        f"{platform.system()} {platform.machine()}, {cpu_model()}, {os.cpu_count()} cores"
    )


def machine_slug(cpu: str | None = None) -> str:
    """The CPU's model as a folder name: ``"Intel(R) Xeon(R) Processor"`` becomes
    ``"intel-xeon"``, ``"AMD EPYC 7763 64-Core Processor"`` ``"amd-epyc-7763-64-core"``."""
    text = (cpu or cpu_model()).lower()
    text = re.sub(r"\((r|tm)\)|\bprocessor\b|\bcpu\b|@.*$", " ", text)
    return "-".join(re.findall(r"[a-z0-9]+", text)[:5]) or "unknown"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def default_out() -> Path:
    """This machine's folder for today: ``bench/results/<machine>-<YYYY-MM-DD>``."""
    return RESULTS / f"{machine_slug()}-{today()}"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()


def revision() -> str:
    """The last commit that touched ``ecs_spatial/`` (and ``+dirty`` if it has local edits):
    the figures belong to that code."""
    try:
        rev = _git("log", "-1", "--format=%h", "--", "ecs_spatial")
        dirty = _git("status", "--porcelain", "--", "ecs_spatial")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def _head() -> str:
    try:
        return _git("rev-parse", "--short", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def describe_machine() -> str:
    """The lines that head a folder's ``machine.txt``."""
    try:
        import esper

        esper_version = getattr(esper, "__version__", "unknown")
    except ImportError:  # pragma: no cover - esper is the one dependency
        esper_version = "not installed"
    try:
        from ecs_spatial import NATIVE

        core = "compiled" if NATIVE else "pure Python (the compiled core is not built)"
    except ImportError:  # pragma: no cover
        core = "unknown"
    return "\n".join(
        [
            f"CPU: {cpu_model()}",
            f"cores: {os.cpu_count()}",
            f"OS: {platform.system()} {platform.release()} {platform.machine()}",
            f"Python: {platform.python_implementation()} {platform.python_version()} "
            f"({platform.python_compiler()})",
            f"esper: {esper_version}",
            f"ecs_spatial index: {core}",
            "",
            "Runs (UTC time, ecs_spatial's last commit, HEAD, command):",
        ]
    )


def note_run(out: Path, command: str) -> None:
    """Make ``out`` if needed, write its ``machine.txt`` if it has none, and add this run."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "machine.txt"
    if not path.exists():
        path.write_text(describe_machine() + "\n")
    with path.open("a") as f:
        f.write(f"- {now()}  {revision()}  HEAD {_head()}  {command}\n")


# -- writing -----------------------------------------------------------------------------------


def markdown_row(cells: Sequence[object]) -> str:
    """One row of a markdown table (print rows one by one while a long run measures them)."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[object]] = (), *, right: bool = False
) -> str:
    """A markdown table (its header alone if there are no ``rows``); ``right`` aligns every
    column but the first to the right."""
    lines = [markdown_row(header)]
    lines.append("|---|" + ("---:|" if right else "---|") * (len(header) - 1))
    lines += [markdown_row(row) for row in rows]
    return "\n".join(lines)


def add_output_options(parser: argparse.ArgumentParser, *, save: bool = True) -> None:
    """``--out DIR`` (default: this machine's folder for today) and, for a measurement that
    prints its figures, ``--save`` (also write them to ``<out>/<name>.md``)."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results folder (default: bench/results/<machine>-<YYYY-MM-DD>)",
    )
    if save:
        parser.add_argument(
            "--save",
            action="store_true",
            help="also write what is printed to <out>/<name>.md, and note the run in "
            "<out>/machine.txt",
        )


class _Tee:
    """A text stream that writes to two."""

    def __init__(self, a: TextIO, b: TextIO) -> None:
        self.a = a
        self.b = b

    def write(self, text: str) -> int:
        self.a.write(text)
        return self.b.write(text)

    def flush(self) -> None:
        self.a.flush()
        self.b.flush()


@contextlib.contextmanager
def saved(args: argparse.Namespace, name: str, argv: Sequence[str] | None) -> Iterator[None]:
    """With ``--save``: everything printed inside the block is also written to
    ``<out>/<name>.md``, under a line that says which command wrote it, when, at which
    revision and on what; the run is noted in ``<out>/machine.txt``."""
    if not getattr(args, "save", False):
        yield
        return
    given = list(sys.argv[1:] if argv is None else argv)
    command = " ".join(["python -m bench", name, *given])
    out: Path = args.out or default_out()
    note_run(out, command)
    path = out / f"{name}.md"
    with path.open("w") as f:
        f.write(f"Written by `{command}` at {now()}, ecs_spatial at {revision()}; {machine()}.\n\n")
        stdout = sys.stdout
        sys.stdout = _Tee(stdout, f)
        try:
            yield
        finally:
            sys.stdout = stdout
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
