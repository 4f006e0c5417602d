"""ecs_spatial.index: which QuadTree the package uses, and how a user can tell (issue 18)."""

from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ecs_spatial import index
from ecs_spatial.geometry import Box
from ecs_spatial.quadtree import QuadTree as Reference

try:
    from ecs_spatial import _cquadtree
except ImportError:
    _cquadtree = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
built = pytest.mark.skipif(_cquadtree is None, reason="the C core is not built")


def _in_fresh_interpreter(code: str, **env: str) -> str:
    """stdout of ``code`` run by a new interpreter with these environment variables."""
    result = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, cwd=ROOT,
        capture_output=True, text=True, check=True,
    )
    return result.stdout.strip()


def test_py_quadtree_is_always_the_reference() -> None:
    """PyQuadTree is the pure-Python reference, whatever was built."""
    assert index.PyQuadTree is Reference


@built
def test_the_compiled_core_is_the_default_when_built() -> None:
    """Built and not disabled: QuadTree is the compiled class and NATIVE says so."""
    if os.environ.get("ECS_SPATIAL_PURE") == "1":
        pytest.skip("this run forces the reference")
    assert index.NATIVE and index.REASON == ""
    assert issubclass(index.QuadTree, _cquadtree.QuadTree)


@built
def test_ecs_spatial_pure_forces_the_reference() -> None:
    """ECS_SPATIAL_PURE=1 at import time: the reference, and REASON says why (where the
    core is not built, REASON names the failed import instead: the test below)."""
    out = _in_fresh_interpreter(
        "from ecs_spatial import index; "
        "print(index.NATIVE, index.QuadTree is index.PyQuadTree, index.REASON)",
        ECS_SPATIAL_PURE="1",
    )
    assert out == "False True ECS_SPATIAL_PURE=1"


@pytest.mark.skipif(_cquadtree is not None, reason="the C core is built")
def test_without_the_core_reason_names_the_failed_import() -> None:
    assert not index.NATIVE and index.QuadTree is index.PyQuadTree
    assert index.REASON.startswith("the extension does not import (")


@built
def test_the_compiled_class_can_be_patched_and_subclassed() -> None:
    """Like the reference, the class the package hands out takes patched methods (tests
    count calls that way) and subclasses."""
    tree_class = index.QuadTree
    original = tree_class.query
    calls: list[object] = []

    def counting(self: index.QuadTree, box: Box) -> list[int]:
        calls.append(box)
        return original(self, box)

    tree_class.query = counting  # type: ignore[method-assign,assignment]
    try:
        tree = tree_class(Box(0, 0, 10, 10))
        tree.insert(1, (1.0, 1.0, 2.0, 2.0))
        assert tree.query((0.0, 0.0, 5.0, 5.0)) == [1] and len(calls) == 1
    finally:
        tree_class.query = original  # type: ignore[method-assign]

    class Tagged(tree_class):  # type: ignore[valid-type,misc]
        __slots__ = ()

    tagged = Tagged(Box(0, 0, 10, 10), threshold=2)
    tagged.insert(1, (1.0, 1.0, 2.0, 2.0))
    assert type(copy.copy(tagged)) is Tagged is type(copy.deepcopy(tagged))
    assert copy.copy(tagged)[1] == (1.0, 1.0, 2.0, 2.0)


@built
@pytest.mark.skipif(
    not index.NATIVE, reason="ECS_SPATIAL_PURE=1: index.QuadTree is the reference itself"
)
def test_a_pickle_of_the_compiled_tree_loads_where_the_reference_is_used() -> None:
    """A tree pickled by the compiled class loads in a process that uses the reference
    (ECS_SPATIAL_PURE=1, or no compiler), as the same tree: node for node, with the same
    answers and its bounds hint (``clear()`` returns to it)."""
    tree = index.QuadTree(Box(0, 0, 100, 100), threshold=2, max_depth=5)
    for e in range(1, 40):
        tree.insert(e, (e * 2.0, e * 1.5, e * 2.0 + 3.0, e * 1.5 + 3.0))
    tree.insert(40, (-500.0, 0.0, -499.0, 1.0))  # the root grows toward it
    tree.remove(3)
    data = pickle.dumps(tree).hex()
    out = _in_fresh_interpreter(
        f"import pickle\n{_SHOW}\nt = pickle.loads(bytes.fromhex({data!r}))\nt.check()\n"
        "print(type(t).__module__, repr(show(t)))",
        ECS_SPATIAL_PURE="1",
    )
    namespace: dict[str, Any] = {}
    exec(_SHOW, namespace)
    assert out == f"ecs_spatial.quadtree {namespace['show'](tree)!r}"


#: What the fresh interpreter reports of a tree (run there and here: one text).
_SHOW = """
def show(t):
    return (len(t), t.bounds, t.find_all_intersections(), [tuple(n) for n in t.nodes()],
            t.depth(), sorted(t.query((0, 0, 30, 30))), t.nearest(20.0, 20.0, 5), t.clear(),
            t.bounds)
"""
