"""Build script for the optional C core, ``ecs_spatial._cquadtree``.

Everything else about the package lives in ``pyproject.toml``; this file exists only because
an optional C extension needs code: a failed compile must leave a working pure-Python
package (simplejson's and msgpack's pattern), so the build command catches the compiler's
error, prints one line and carries on.

Environment:

- ``ECS_SPATIAL_NO_EXTENSION=1`` skips the extension altogether (the CI leg "a build with
  the extension disabled", and machines where a half-working compiler should not be tried);
- ``CFLAGS`` is honoured as usual (``CFLAGS='-g -fsanitize=address'`` is how the AddressSanitizer
  soak builds the core), though our flags come last and so always hold.

The flags: ``-ffp-contract=off -fno-fast-math`` keep every float operation the one CPython
performs (no fused multiply-add where the source has a multiply and an add), so that the
compiled index gives the reference's answers bit for bit; ``-Wall -Wextra`` with no warning
is part of the contract (CONVENTIONS.md, "C that reviewers trust").
"""

from __future__ import annotations

import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

UNIX_FLAGS = ["-O2", "-std=c11", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra"]
MSVC_FLAGS = ["/O2", "/fp:precise", "/W3"]


class OptionalBuildExt(build_ext):
    """``build_ext`` that never fails the install: a compiler error (or no compiler at all)
    prints a one-line notice and leaves the package pure Python, which works the same."""

    def build_extensions(self) -> None:
        flags = MSVC_FLAGS if self.compiler.compiler_type == "msvc" else UNIX_FLAGS
        for ext in self.extensions:
            # After the interpreter's flags and the user's CFLAGS on the command line, so
            # these always hold; CFLAGS still adds what it wants (-fsanitize=address, -g).
            ext.extra_compile_args = flags + list(ext.extra_compile_args or [])
        super().build_extensions()

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler, no headers: distutils' errors vary
            self._notice(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._notice(error)

    def copy_extensions_to_source(self) -> None:
        # An in-place or editable build copies what it built next to the sources: only what
        # was built, and as a new file renamed into place, never by rewriting the old one,
        # which a running process (another engineer's test run) may have mapped.
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace_file, regular_file = self._get_inplace_equivalent(build_py, ext)
            if not os.path.exists(regular_file):
                continue
            temporary = f"{inplace_file}.{os.getpid()}.new"
            shutil.copyfile(regular_file, temporary)
            shutil.copymode(regular_file, temporary)
            os.replace(temporary, inplace_file)

    def get_outputs(self) -> list[str]:
        # An editable install asks for the outputs to link into place; a failed compile has
        # none, so report only the files that exist.
        return [path for path in super().get_outputs() if os.path.exists(path)]

    _noticed = False

    @classmethod
    def _notice(cls, error: BaseException) -> None:
        if cls._noticed:
            return
        cls._noticed = True
        lines = str(error).strip().splitlines() or [type(error).__name__]
        reason = lines[-1] if len(lines[-1]) <= 160 else lines[-1][:157] + "..."
        print(
            f"ecs_spatial: the C core was not built ({reason}); "
            "the pure-Python index is used, with the same behaviour.",
            file=sys.stderr,
        )


def extensions() -> list[Extension]:
    if os.environ.get("ECS_SPATIAL_NO_EXTENSION") == "1":
        return []
    return [
        Extension(
            "ecs_spatial._cquadtree",
            sources=["ecs_spatial/_cquadtree.c"],
            libraries=[] if sys.platform == "win32" else ["m"],
        )
    ]


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
