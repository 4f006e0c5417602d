"""``python -m ecs_spatial``: which ecs_spatial this is, and which index it runs on.

Prints the version, whether the compiled core is in use (``NATIVE``) and, when it is not,
why (``index.REASON``: not built, built for another Python, or ``ECS_SPATIAL_PURE=1``), with
the interpreter and the esper it found: the lines a bug report needs, without ``pip -v``.
Exits 0 either way: the pure-Python index is a supported install, with the same behaviour.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import ecs_spatial
from ecs_spatial import index


def describe() -> list[str]:
    """The report's lines."""
    try:
        esper_version = metadata.version("esper")
    except metadata.PackageNotFoundError:  # esper imported from a folder, not installed
        esper_version = "(version unknown)"
    if ecs_spatial.NATIVE:
        core = "NATIVE = True: the compiled core (ecs_spatial._cquadtree) is in use"
    else:
        core = f"NATIVE = False: the pure-Python index is in use ({index.REASON})"
    return [
        f"ecs_spatial {ecs_spatial.__version__} from {ecs_spatial.__file__}",
        core,
        f"Python {platform.python_version()} ({platform.python_implementation()}, "
        f"{sys.platform})",
        f"esper {esper_version}",
    ]


def main() -> int:
    print("\n".join(describe()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
