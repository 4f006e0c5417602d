"""Where figures go and what they are stamped with; the command line every subcommand shares.

Results live in ``bench/results/<machine>/`` (:func:`default_out`), the latest figures of
each measurement only (earlier ones are in git's history). A folder's ``machine.txt``
describes the machine once (CPU, cores, OS, Python, esper), then every run that wrote into it:
its time, the revision and the command.
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
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent


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
    return ROOT / "bench" / "results" / machine_slug()


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


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """The module's docstring as written, and each option's default unless its help says it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, "", 0, argparse.SUPPRESS) and "default" not in text:
            text += " (default: %(default)s)"
        return text


def command(name: str, doc: str | None, *, parts: Sequence[str] = (),
            quick: str = "a smoke run: tiny worlds, seconds") -> argparse.ArgumentParser:
    """The parser of ``python -m bench <name>``, its module's docstring as its help:
    ``--parts`` (comma-separated, of ``parts``) if it has parts, ``--quick``, ``--out DIR``
    (default: this machine's folder) and ``--save``. Add its own options, then :func:`parse`."""
    parser = argparse.ArgumentParser(prog=f"python -m bench {name}", description=doc,
                                     formatter_class=_Formatter)
    if parts:
        parser.add_argument("--parts", default=",".join(parts),
                            help=f"comma-separated, of: {', '.join(parts)}")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--out", type=Path, default=None,
                        help="results folder (default: bench/results/<machine>)")
    parser.add_argument("--save", action="store_true", help="also write what is printed to "
                        "<out>/<name>.md, and note the run in <out>/machine.txt")
    return parser


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None, *,
          quick: dict[str, Any] | None = None) -> argparse.Namespace:
    """The arguments: ``--parts`` as a list checked against the parts (its default: all of
    them); with ``--quick`` the ``quick`` settings of the options left at their default;
    ``command``, the command line that :func:`saved` and :func:`note_run` record."""
    args = parser.parse_args(argv)
    if every := parser.get_default("parts"):
        parts = every.split(",")
        args.parts = args.parts.split(",")
        if unknown := set(args.parts) - set(parts):
            parser.error(f"unknown parts {sorted(unknown)}: choose among {', '.join(parts)}")
    if args.quick:
        for key, value in (quick or {}).items():
            if getattr(args, key) == parser.get_default(key):
                setattr(args, key, value)
    args.command = " ".join([parser.prog, *(sys.argv[1:] if argv is None else argv)])
    return args


def print_parts(args: argparse.Namespace, parts: dict[str, Callable[[Any], list[list[str]]]],
                settings: Any) -> None:
    """Run each part of ``args.parts`` under its heading, then the targets they returned."""
    rows: list[list[str]] = []
    for part in args.parts:
        print(f"\n## {part}\n", flush=True)
        rows += parts[part](settings)
    print_targets(rows, args.quick)


def print_targets(rows: list[list[str]], quick: bool, title: str = "targets") -> None:
    """The targets table (``bench.harness.target`` rows), if any, under ``## title``."""
    if not rows:
        return
    print(f"\n## {title}\n")
    if quick:
        print("(--quick: sizes far below the targets'; the verdicts mean nothing)\n")
    print(markdown_table(["target", "measured", "limit", ""], rows))


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
def saved(args: argparse.Namespace, name: str = "") -> Iterator[None]:
    """With ``--save``: everything printed inside the block is also written to
    ``<out>/<name>.md`` (default: the subcommand's name), under a line that says which
    command wrote it, when, at which revision and on what; the run is noted in
    ``<out>/machine.txt``."""
    if not args.save:
        yield
        return
    out: Path = args.out or default_out()
    note_run(out, args.command)
    path = out / f"{name or args.command.split()[3]}.md"
    with path.open("w") as f:
        f.write(f"Written by `{args.command}` at {now()}, ecs_spatial at {revision()}; "
                f"{machine()}.\n\n")
        stdout = sys.stdout
        sys.stdout = _Tee(stdout, f)
        try:
            yield
        finally:
            sys.stdout = stdout
    print(f"wrote {shown(path)}")
