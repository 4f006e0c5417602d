"""Position, AABB and CollisionFilter, compiled (see ``_ccomponents.c``): the same contract
as the reference classes of ``components.py``, which is what type checkers see."""

from typing import Any, overload

from .components import PyAABB as AABB
from .components import PyCollisionFilter as CollisionFilter
from .components import PyPosition as Position

__all__ = ["AABB", "CollisionFilter", "Position", "from_columns"]

@overload
def from_columns(cls: type, columns: tuple[Any, ...], /) -> list[Any]: ...
@overload
def from_columns(
    cls: type, columns: tuple[Any, ...], sink: list[int], ids: list[int],
    pending: set[int] | frozenset[int], /,
) -> list[Any]:
    """New instances of ``cls`` (the compiled Position or AABB), one a row of ``columns``
    (one ``array('d')`` a field), as ``cls.__new__`` then ``__setstate__`` make them:
    untracked, or with ``sink``, ``ids`` and ``pending`` each born tracked at ``sink`` for
    its id (``_owner`` and ``_eid``), armed unless its id is in ``pending``."""
