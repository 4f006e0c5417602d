"""Position, AABB and CollisionFilter, compiled (see ``_ccomponents.c``): the same contract
as the reference classes of ``components.py``, which is what type checkers see."""

from .components import PyAABB as AABB
from .components import PyCollisionFilter as CollisionFilter
from .components import PyPosition as Position

__all__ = ["AABB", "CollisionFilter", "Position"]
