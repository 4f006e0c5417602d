"""Shared test configuration.

The ``world`` fixture gives each test a fresh esper world (``_worlds.fresh_world``); the
``membership`` fixture runs a test once per way the processors read esper's membership; the
``tree_class`` fixture runs a test once per QuadTree class, the pure-Python reference and the
compiled core (heapq's pattern: the same cases against both).

Hypothesis profiles: ``default`` keeps the whole suite near a minute and never fails on
timing (this kind of machine is shared and noisy, so per-example deadlines are off);
``long`` digs much deeper for a local soak: ``HYPOTHESIS_PROFILE=long pytest`` (2,000
examples where a test names no budget, 20 times the budget and 4 times the story length
where it does, through ``_budget.budget``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _worlds import fresh_world
from hypothesis import settings

from ecs_spatial import _esper_tables, index

settings.register_profile("default", deadline=None)
settings.register_profile("long", deadline=None, max_examples=2000, stateful_step_count=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture
def world(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh esper world for the test, deleted afterwards (see ``_worlds.fresh_world``)."""
    with fresh_world(request.node.name) as name:
        yield name


@pytest.fixture(params=["esper-tables", "public-api"])
def membership(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test with the processors reading who holds what from esper's own tables
    (the fast path), and again through esper's public API (the fallback for an esper
    release without those tables): both must give the same answers."""
    monkeypatch.setattr(_esper_tables, "use_esper_tables", request.param == "esper-tables")
    return str(request.param)


#: The QuadTree classes every index test runs against: the reference, and the compiled core
#: when it is in use (skipped, saying why, when it is not built or ECS_SPATIAL_PURE=1).
TREE_CLASSES = [
    pytest.param(index.PyQuadTree, id="reference"),
    pytest.param(
        index.QuadTree, id="compiled",
        marks=pytest.mark.skipif(not index.NATIVE, reason=f"no compiled core: {index.REASON}"),
    ),
]


@pytest.fixture(params=TREE_CLASSES, scope="session")
def tree_class(request: pytest.FixtureRequest) -> type[index.PyQuadTree]:
    """A QuadTree class: ``ecs_spatial.PyQuadTree``, the reference, and the class
    ``ecs_spatial.QuadTree`` is when the compiled core is in use. The answers, the errors
    and their messages must be the same. Session-scoped, as it holds no state, so that
    hypothesis tests may take it."""
    cls: type[index.PyQuadTree] = request.param
    return cls
