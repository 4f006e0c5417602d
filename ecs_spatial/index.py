"""Which index ``ecs_spatial`` uses: the compiled core when it is there, else the reference.

Python's ``heapq`` pattern: ``quadtree.py`` is the readable pure-Python index and the
reference; ``_cquadtree`` (C, built by ``setup.py`` when a compiler is available) is its twin,
judged by it (``tests/test_native_quadtree.py`` drives both side by side and requires the
same answers and the same errors).

- ``PyQuadTree`` is always the pure-Python reference, ``ecs_spatial.quadtree.QuadTree``;
- ``QuadTree`` is the compiled class when the extension imports and ``ECS_SPATIAL_PURE`` is
  not ``"1"`` in the environment when this module is first imported, else ``PyQuadTree``;
- ``NATIVE`` is ``True`` when ``QuadTree`` is the compiled class, and ``REASON`` says why
  it is not ("" when it is);
- with the compiled class, ``SpatialProcessor`` takes the compiled read loop of
  ``_cmembers``, and ``geometry.Box`` its compiled constructor (``_cgeometry``, installed by
  ``geometry.py`` itself): one switch for every compiled part.

A build without a compiler (or with ``ECS_SPATIAL_NO_EXTENSION=1``) has no ``_cquadtree``:
everything then runs on the reference, with the same behaviour. Type checkers see the
reference's class, which is the contract both classes keep.

The compiled ``QuadTree`` is a Python subclass of the C type, with no state of its own:
like the reference it can be subclassed and its methods patched (tests count calls that
way), and it pickles under this module's name, so a pickle made with the compiled core
loads as whichever ``QuadTree`` the loading process has (the state is plain ids and floats,
the same for both classes).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .quadtree import QuadTree as PyQuadTree

__all__ = ["NATIVE", "PyQuadTree", "QuadTree"]

#: Why the compiled core is not in use ("" when it is): for bug reports and the test legs.
REASON = ""

if TYPE_CHECKING:
    QuadTree = PyQuadTree
else:
    try:
        from ._cquadtree import QuadTree as _CompiledQuadTree
    except ImportError as error:  # not built (no compiler), or built against another Python
        _CompiledQuadTree = None
        REASON = f"the extension does not import ({error})"
    if _CompiledQuadTree is not None and os.environ.get("ECS_SPATIAL_PURE") == "1":
        _CompiledQuadTree = None
        REASON = "ECS_SPATIAL_PURE=1"

    if _CompiledQuadTree is None:
        QuadTree = PyQuadTree
    else:

        class QuadTree(_CompiledQuadTree):
            __slots__ = ()
            __doc__ = _CompiledQuadTree.__doc__

        from .geometry import Box  # noqa: F401  (the compiled QuadTree's doctests name it)

NATIVE: bool = QuadTree is not PyQuadTree
