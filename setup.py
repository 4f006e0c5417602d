"""Build script for the optional C core: ``ecs_spatial._cquadtree`` and its kin (``CORES``).

Everything else about the package lives in ``pyproject.toml``; this file exists only because
an optional C extension needs code: a failed compile must leave a working pure-Python
package (simplejson's and msgpack's pattern), so the build command catches the compiler's
error, prints one line and carries on.

Environment:

- ``ECS_SPATIAL_NO_EXTENSION=1`` skips the extension altogether (the CI leg "a build with
  the extension disabled", and machines where a half-working compiler should not be tried);
  an editable install leaves a core built earlier in place (``ECS_SPATIAL_PURE=1`` at run
  time is the switch for that: see ``ecs_spatial/index.py``);
- ``ECS_SPATIAL_STRICT_BUILD=1`` builds the core with warnings as errors, GCC 14's new error
  defaults spelled out for older compilers (``STRICT_FLAGS``), and fails the build loudly when
  any of it does not compile, instead of the quiet fallback to pure Python: ``.ci/run`` builds
  so on every CPython the package claims, where a warning (a private API a new Python no
  longer declares) must stop CI rather than leave a slower package. A user's install keeps
  the fallback;
- ``CFLAGS`` is honoured as usual (``CFLAGS='-g -fsanitize=address'`` is how the AddressSanitizer
  soak builds the core), though our flags come last and so always hold.

The flags: ``-ffp-contract=off -fno-fast-math`` keep every float operation the one CPython
performs (no fused multiply-add where the source has a multiply and an add), so that the
compiled index gives the reference's answers bit for bit; ``-Wall -Wextra`` with no warning
is part of the contract (CONVENTIONS.md, "C that reviewers trust").
"""

from __future__ import annotations

import os
import re
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

UNIX_FLAGS = ["-O2", "-std=c11", "-ffp-contract=off", "-fno-fast-math", "-Wall", "-Wextra"]
MSVC_FLAGS = ["/O2", "/fp:precise", "/W3"]
# ECS_SPATIAL_STRICT_BUILD=1: -Werror, and by name the warnings GCC 14 made errors, so that
# each is on even where an earlier flag (the interpreter's CFLAGS, the user's) turned it off.
STRICT_FLAGS = ["-Werror", "-Werror=implicit-function-declaration", "-Werror=int-conversion",
                "-Werror=incompatible-pointer-types"]
MSVC_STRICT_FLAGS = ["/WX"]


# The compiled twins, each beside the pure-Python code that is its reference. A source not
# (yet) in the tree is left out, so a checkout builds what it has.
CORES = {
    "_cquadtree": "the index, quadtree.py's twin",
    "_cmembers": "the SpatialProcessor's read of its members' components, _members.py's twin",
}


def _strict() -> bool:
    """Whether ``ECS_SPATIAL_STRICT_BUILD=1``: warnings are errors, and errors fail the build."""
    return os.environ.get("ECS_SPATIAL_STRICT_BUILD") == "1"


class OptionalBuildExt(build_ext):
    """``build_ext`` that never fails the install: a compiler error (or no compiler at all)
    prints a one-line notice and leaves the package pure Python, which works the same.
    Under ``ECS_SPATIAL_STRICT_BUILD=1`` it fails instead, naming the extension."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self._failed: dict[str, str] = {}  # extension name -> why it was not built

    def build_extensions(self) -> None:
        msvc = self.compiler.compiler_type == "msvc"
        flags = MSVC_FLAGS if msvc else UNIX_FLAGS
        if _strict():
            flags = flags + (MSVC_STRICT_FLAGS if msvc else STRICT_FLAGS)
        for ext in self.extensions:
            # After the interpreter's flags and the user's CFLAGS on the command line, so
            # these always hold; CFLAGS still adds what it wants (-fsanitize=address, -g).
            ext.extra_compile_args = flags + list(ext.extra_compile_args or [])
        super().build_extensions()

    def run(self) -> None:
        inplace = self.inplace  # setuptools clears it while it builds
        try:
            super().run()
        except Exception as error:  # no compiler, no headers: distutils' errors vary
            for ext in self.extensions:
                if not os.path.exists(self.get_ext_fullpath(ext.name)):
                    self._failed.setdefault(ext.name, _reason(error))
                if ext.name in self._failed and inplace:
                    self._remove_stale_inplace(ext)
            if _strict():
                self._notice()
                raise  # the compiler's errors are above; pip prints this build's output
        self._notice()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._failed[ext.name] = _reason(error)
            if _strict():
                raise

    def copy_extensions_to_source(self) -> None:
        # An in-place or editable build copies what it built next to the sources: only what
        # was built, and as a new file renamed into place, never by rewriting the old one,
        # which a running process (another engineer's test run) may have mapped.
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace_file, regular_file = self._get_inplace_equivalent(build_py, ext)
            # A failed compile leaves the previous build's file in build/lib: not this source's.
            if ext.name in self._failed or not os.path.exists(regular_file):
                self._remove_stale_inplace(ext)
                continue
            temporary = f"{inplace_file}.{os.getpid()}.new"
            shutil.copyfile(regular_file, temporary)
            shutil.copymode(regular_file, temporary)
            os.replace(temporary, inplace_file)

    def _remove_stale_inplace(self, ext: Extension) -> None:
        # The compile failed: a twin built from an older source must not stay in place and
        # pass for this one (unlinking is safe for a process that has it mapped).
        inplace_file, _ = self._get_inplace_equivalent(self.get_finalized_command("build_py"), ext)
        if os.path.exists(inplace_file):
            os.remove(inplace_file)

    def get_outputs(self) -> list[str]:
        # An editable install asks for the outputs to link into place; a failed compile has
        # none, so report only the files that exist.
        return [path for path in super().get_outputs() if os.path.exists(path)]

    def _notice(self) -> None:
        """One line on stderr when something was not built (pip shows it with -v; the
        README's scripts say it in their own words, from ``ecs_spatial.index.REASON``)."""
        if not self._failed:
            return
        reason = next(iter(self._failed.values()))
        if _strict():  # the build stops at the first failure: name that one
            name = next(iter(self._failed)).rpartition(".")[2]
            print(f"ecs_spatial: {name} was not built ({reason}), and ECS_SPATIAL_STRICT_BUILD=1 "
                  "makes that an error: no fallback to pure Python.", file=sys.stderr)
            return
        if len(self._failed) == len(self.extensions):
            what, instead = "the C core was not built", "the pure-Python index is used"
        else:
            names = ", ".join(name.rpartition(".")[2] for name in self._failed)
            what, instead = f"{names} was not built", "its pure-Python reference is used"
        print(f"ecs_spatial: {what} ({reason}); {instead}, with the same behaviour.",
              file=sys.stderr)


def _reason(error: BaseException) -> str:
    """The gist of a build error, short enough for the notice's one line."""
    lines = str(error).strip().splitlines() or [type(error).__name__]
    reason = lines[-1]
    # A failed compiler run is reported with its whole command line: name the program.
    failed = re.search(r"Command '\[?'([^']+)'.*?(returned non-zero exit status -?\d+)", reason)
    if failed:
        reason = f"{os.path.basename(failed[1])} {failed[2]}; its errors are above"
    return reason if len(reason) <= 160 else reason[:157] + "..."


def extensions() -> list[Extension]:
    if os.environ.get("ECS_SPATIAL_NO_EXTENSION") == "1":
        if _strict():  # a build that must compile the core, told not to: say so, build nothing
            sys.exit("ecs_spatial: ECS_SPATIAL_STRICT_BUILD=1 and ECS_SPATIAL_NO_EXTENSION=1 "
                     "contradict each other: the one demands the C core, the other skips it.")
        return []
    here = os.path.dirname(os.path.abspath(__file__))
    return [
        Extension(
            f"ecs_spatial.{name}",
            sources=[f"ecs_spatial/{name}.c"],
            libraries=[] if sys.platform == "win32" else ["m"],
        )
        for name in CORES
        if os.path.exists(os.path.join(here, "ecs_spatial", f"{name}.c"))
    ]


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
