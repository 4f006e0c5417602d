"""The small interface every benchmark contender implements, and the types it speaks.

A contender keeps its own index of the world's boxes. ``build(world)`` indexes the world as
it is; ``update(world, step)`` brings the index up to date after ``world.step()`` returned
``step``; ``pairs()`` answers every intersecting pair once, as a sorted list of ``(a, b)``
with ``a < b`` (the contract of ``QuadTree.find_all_intersections``). The query scenarios
also call ``query(box)`` (ids whose box intersects ``box``) and ``query_radius(x, y, r)``
(ids whose box has its nearest point within ``r``), each returning ids in any order.

Boxes are closed everywhere (touching counts). A contender whose library cannot say exactly
that (pymunk's collision margins, shapely's predicates) sets ``exact = False`` and explains
in ``note``; the harness then measures and reports the difference instead of failing.
"""

from __future__ import annotations

from bench.world import Step, World

__all__ = ["BoxT", "Contender", "Pair"]

BoxT = tuple[float, float, float, float]
Pair = tuple[int, int]


class Contender:
    """Base class of the contenders; see the module docstring for the contract."""

    #: Short name shown in tables.
    name: str = "?"
    #: How the contender's answers may differ from the closed-box reference, if they do.
    note: str = ""
    #: Whether its answers must equal the reference exactly (the harness fails loudly if not).
    exact: bool = True
    #: Whether ``query`` and ``query_radius`` are implemented.
    supports_queries: bool = True

    def prepare(self, kind: str) -> None:
        """Told before ``build`` what each frame will ask (``pairs``, ``cull`` or ``radius``),
        for contenders that would otherwise do work the scenario never reads; optional."""

    def build(self, world: World) -> None:
        """Index every alive box of ``world``."""
        raise NotImplementedError

    def update(self, world: World, step: Step) -> None:
        """Bring the index up to date after ``world.step()`` returned ``step``."""
        raise NotImplementedError

    def pairs(self) -> list[Pair]:
        """Every intersecting pair once, ``(a, b)`` with ``a < b``, sorted."""
        raise NotImplementedError

    def query(self, box: BoxT) -> list[int]:
        """Every id whose box intersects ``box`` (closed), each once, in any order."""
        raise NotImplementedError

    def query_radius(self, x: float, y: float, r: float) -> list[int]:
        """Every id whose box has a point within distance ``r`` of ``(x, y)``, each once."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the contender holds (a library handle, a world); optional."""
