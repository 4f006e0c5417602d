"""Where figures go, and what they are stamped with: the machine, the Python, the revision.

Results live in ``bench/results/<machine>/``, one folder per machine (``default_out()``), the
latest figures of each measurement only: earlier ones are in git's history. A folder's
``machine.txt`` describes the machine (CPU, cores, OS, Python, esper) once, and every run that
writes into the folder adds a line with its time, the git revision and the command.
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

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


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


def default_out() -> Path:
    """This machine's results folder: ``bench/results/<machine>``."""
    return RESULTS / machine_slug()


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def revision() -> str:
    """The last commit that touched ``ecs_spatial/`` (and ``+dirty`` if it has local edits):
    the figures belong to that code."""
    dirty = _git("status", "--porcelain", "--", "ecs_spatial")
    return _git("log", "-1", "--format=%h", "--", "ecs_spatial") + ("+dirty" if dirty else "")


def note_run(out: Path, command: str) -> None:
    """Make ``out`` if needed, describe the machine in its ``machine.txt`` if it has none,
    and add this run."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "machine.txt"
    if not path.exists():
        import esper

        from ecs_spatial import NATIVE

        path.write_text("\n".join([
            f"CPU: {cpu_model()}",
            f"cores: {os.cpu_count()}",
            f"OS: {platform.system()} {platform.release()} {platform.machine()}",
            f"Python: {platform.python_implementation()} {platform.python_version()} "
            f"({platform.python_compiler()})",
            f"esper: {getattr(esper, '__version__', 'unknown')}",
            f"ecs_spatial index: {'compiled' if NATIVE else 'pure Python'}",
            "",
            "Runs (UTC time, ecs_spatial's last commit, HEAD, command):",
            "",
        ]))
    with path.open("a") as f:
        f.write(f"- {now()}  {revision()}  HEAD {_git('rev-parse', '--short', 'HEAD')}  "
                f"{command}\n")


def shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def markdown_row(cells: Sequence[object]) -> str:
    """One row of a markdown table (print rows one by one while a long run measures them)."""
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]] = (), *,
                   right: bool = False) -> str:
    """A markdown table (its header alone without ``rows``); ``right`` aligns every column
    but the first to the right."""
    rule = "|---|" + ("---:|" if right else "---|") * (len(header) - 1)
    return "\n".join([markdown_row(header), rule, *(markdown_row(row) for row in rows)])


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--out DIR`` (default: this machine's folder) and ``--save``."""
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder (default: bench/results/<machine>)")
    parser.add_argument("--save", action="store_true", help="also write what is printed to "
                        "<out>/<name>.md, and note the run in <out>/machine.txt")


class _Tee:
    """A text stream that writes to two."""

    def __init__(self, *streams: TextIO) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        return [s.write(text) for s in self.streams][-1]

    def flush(self) -> None:
        for s in self.streams:
            s.flush()


@contextlib.contextmanager
def saved(
    args: argparse.Namespace, prog: str, name: str, argv: Sequence[str] | None
) -> Iterator[None]:
    """With ``--save``: everything printed inside the block is also written to
    ``<out>/<name>.md``, under a line that says which command (``prog`` and ``argv``) wrote
    it, when, at which revision and on what; the run is noted in ``<out>/machine.txt``."""
    if not getattr(args, "save", False):
        yield
        return
    command = " ".join([prog, *(sys.argv[1:] if argv is None else argv)])
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
    print(f"wrote {shown(path)}")
