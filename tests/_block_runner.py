"""Run one code block of the README or of the documentation site as a reader runs it: as the
whole program of a fresh interpreter, its globals those of ``__main__``.

``python tests/_block_runner.py FILENAME < block.py`` runs the block statement by statement,
checking each comment's claim right after its statement ran (the rules are in
``tests/test_docs.py``), then prints everything the block printed and exits as a script
ends: the block's objects live on in ``__main__`` until the interpreter tears it down, so a
traceback that a reader's program would print at exit lands on stderr here too. A claim that
fails raises ``AssertionError`` (a traceback, exit status 1). The tests run it with
``subprocess`` and want exit status 0, the Output block on stdout and nothing on stderr.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import subprocess
import sys
import tokenize
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return {t.start[0]: t.string[1:].strip() for t in tokens if t.type == tokenize.COMMENT}


def _literal(comment: str) -> tuple[bool, object]:
    """Whether the comment claims a value (its text before any ':' is a literal), and which."""
    try:
        return True, ast.literal_eval(comment.split(":")[0].strip())
    except (ValueError, SyntaxError):
        return False, None


def run_block(source: str, filename: str, namespace: dict[str, object]) -> str:
    """Run ``source`` in ``namespace`` statement by statement, checking each comment's claim
    right after its statement ran; return everything it printed."""
    comments = _comments(source)
    printed = io.StringIO()
    for statement in ast.parse(source, filename).body:
        claim = comments.get(statement.end_lineno or statement.lineno, "")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                if isinstance(statement, ast.Expr):
                    tree = ast.Expression(statement.value)
                    value = eval(compile(tree, filename, "eval"), namespace)
                else:
                    exec(compile(ast.Module([statement], []), filename, "exec"), namespace)
            except SystemExit as end:
                assert end.code in (0, None), f"{filename}: exit status {end.code}"
                printed.write(out.getvalue())
                break
        printed.write(out.getvalue())
        where = f"{filename}, line {statement.lineno}: {ast.unparse(statement)[:60]}"
        if not claim or not isinstance(statement, ast.Expr):
            continue
        if ast.unparse(statement) == "esper.process()":
            assert claim.split(":")[0].strip() in out.getvalue(), (where, out.getvalue())
            continue
        is_claim, expected = _literal(claim)
        if is_claim:
            assert value == expected, f"{where}: {value!r}, not {expected!r}"
    return printed.getvalue()


def main() -> None:
    """Run the block on stdin as the program ``sys.argv[1]``, in a ``__main__`` of its own."""
    filename = sys.argv[1]
    source = sys.stdin.read()
    program = types.ModuleType("__main__")
    program.__dict__.update(__file__=filename, __builtins__=builtins)
    sys.modules["__main__"] = program  # classes it defines pickle as a script's do
    sys.argv = [filename]
    sys.stdout.write(run_block(source, filename, program.__dict__))


def run_fresh(source: str, filename: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the block ``source`` through this script in a fresh interpreter, in ``cwd``, with
    this checkout's package first on the path; its exit status, stdout and stderr."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, __file__, filename], input=source, capture_output=True, text=True,
        timeout=120, env=env, cwd=cwd, check=False,
    )


if __name__ == "__main__":
    main()
