"""The components that put an esper entity into space: ``Position``, ``AABB`` and the optional
``CollisionFilter``.

Each is a small mutable value with ``__slots__``: build it, compare it, copy it, print it. Once
a :class:`~ecs_spatial.spatial_processor.SpatialProcessor` tracks the entity it belongs to, the same
plain assignments (``pos.x += vx * dt``, ``aabb.width = 20``, ``flt.mask = 0b10``) also mark
it changed, so that the processor updates only what changed and a static entity costs nothing
per frame.

How the dirty flag works, and what it costs
    In the classes here, each field is a ``property`` over a slot. The setter stores the
    value and, if the component is *armed* (attached to a tracked entity and not yet
    reported this frame), appends the entity id to its processor's dirty list and disarms
    itself; the processor re-arms it once it has dealt with the change. A component nobody
    tracks is never armed, so it only pays the property call. Properties rather than an
    overridden ``__setattr__``, which was dearer than a property store in Python;
    :meth:`Position.translate` and :meth:`Position.move_to` change both axes in one call,
    close to the cost of a plain method (the figures: ``docs/design.md``, "Decisions").

Two twins: compiled types, and these classes as their reference
    When the C core is built, ``Position``, ``AABB`` and ``CollisionFilter`` are the types
    of ``_ccomponents.c``, which do the same without the Python frames: a field is read as
    a plain slot is, and an assignment is the type's own ``__setattr__`` doing the setter's
    work in C. The classes here stay as ``PyPosition``, ``PyAABB`` and
    ``PyCollisionFilter``, the reference and the fallback (a build without a compiler, or
    ``ECS_SPATIAL_PURE=1``, as for the index: :data:`NATIVE` says which is in use). They
    keep one contract, held by ``tests/test_ccomponents.py``: both are named
    ``ecs_spatial.components.Position`` (and so on), lay out the same slots (``_x``,
    ``_owner``...: the tracking functions below and the processor's read loop work on
    both), and the compiled types run the code here for everything but their common
    case, so every error is worded once. The twins equal each other by value, but neither
    is an instance of the other: the processors ask esper for the class in use, so an
    instance of the other twin is added, like a subclass, with ``type_alias=``. A copy or a
    pickle of either is an instance of the class in use (a subclass stays itself), so a
    pickle loads in a process with or without the core.

Sharing
    One component instance may serve several entities (a shape shared by a thousand
    bullets), several worlds, or move from one entity or world to another: a change to it
    marks every tracked entity that uses it, in every world. (The common case, one component
    on one entity, stays the fast path above.) A copy (``copy.copy``, ``copy.deepcopy``,
    ``pickle``) is a fresh, untracked value. A processor that is dropped (removed from its
    world, or its world deleted) stops tracking its components.

Subclasses
    esper files a component under its exact type, and the processor asks for
    ``Position``, ``AABB`` and ``CollisionFilter``: add an instance of a subclass with
    ``esper.add_component(entity, instance, type_alias=Position)``.

Checked when made, not when assigned
    Construction refuses a bad value at once, naming the class, the field and the value:
    ``Position(nan, 0)`` raises ``ValueError: Position.x is NaN``. A coordinate or size must
    be a real number (``TypeError`` otherwise; ``bool`` is refused) that is finite as a float
    (``ValueError`` for NaN, an infinity or an int too large for a float); a size must not be
    negative; a filter field must be an ``int`` (not a ``bool``), the processor's rule. Real
    numbers are stored as ``float`` (an ``int``, a ``Fraction``, a NumPy scalar), so the
    fields of a new component are plain floats; filter fields are stored as given.
    ``AABB.centered`` checks the same way. The common case, finite floats, pays a type test
    and a comparison per field, and only a failure builds the detailed message; ints are
    converted on a slower path (the costs: ``docs/design.md``, "Decisions"). Assignment is
    not checked (that would cost every assignment in the per-frame loop): the
    processor checks every value it is about to use and refuses a NaN or infinite coordinate
    or a negative size with a ``ValueError`` that names the entity, before it changes
    anything. Nor is the box a Position and an AABB make together (``Position(1e308, 0)``
    with ``AABB(1e308, 1)`` overflows): the processor checks that too.

A reminder about esper's events, which the processors dispatch: esper keeps handlers by weak
reference, so ``esper.set_handler("collision_enter", lambda a, b: ...)`` is forgotten at once.
Pass a module-level function, or a bound method of an object you keep alive.
"""

from __future__ import annotations

import copyreg
import math
import numbers
import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from .filtering import DEFAULT_FILTER as DEFAULT_FILTER  # where the changelog named it
from .filtering import check_fields, filters_accept
from .geometry import Box, shown

__all__ = [
    "AABB",
    "NATIVE",
    "CollisionFilter",
    "Continuous",
    "Position",
    "PyAABB",
    "PyCollisionFilter",
    "PyPosition",
]

_INF = math.inf
_NEG_INF = -math.inf  # a constant: `-_INF` in the checks would negate it on every call
_MAX = sys.float_info.max
_ZERO = 0.0  # AABB's default offsets, recognised by identity (see AABB.__init__)


class _Sink(Protocol):
    """Where an armed component reports a change: a processor's dirty list, or a fan-out."""

    def append(self, entity: int, /) -> None: ...


class _Tracked:
    """The tracking slots shared by the components.

    ``_owner`` is None for an untracked component; for a component on one tracked entity it
    is the processor's dirty list and ``_eid`` the entity; for a shared one it is a
    :class:`_Shared` fan-out. ``_sink`` is ``_owner`` while armed and None otherwise.
    """

    __slots__ = ("_eid", "_owner", "_sink")

    _eid: int
    _owner: list[int] | _Shared | None
    _sink: _Sink | None

    def _mark(self) -> None:
        """Report a change (the out-of-line form of what the hot setters inline)."""
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)


class _Shared:
    """The sink of a component tracked at several places, each a (dirty list, entity) pair.

    Each place has its own armed flag, so a change is reported once to every place that has
    dealt with the previous one, and a processor that stops running (a world no longer
    processed) receives at most one report: nothing piles up.
    """

    __slots__ = ("places",)

    def __init__(self) -> None:
        # (id(dirty list), entity) -> [dirty list, entity, armed]
        self.places: dict[tuple[int, int], list[Any]] = {}

    def append(self, _entity: int, /) -> None:
        for place in self.places.values():
            if place[2]:
                place[2] = False
                place[0].append(place[1])

    def rearm(self, sink: list[int], entity: int) -> None:
        place = self.places.get((id(sink), entity))
        if place is not None:
            place[2] = True


def track(component: _Tracked, sink: list[int], entity: int) -> None:
    """Track ``component`` as belonging to ``entity`` for the processor whose dirty list is
    ``sink``. It is left disarmed: the caller re-arms it once it has read its values."""
    owner = component._owner
    if owner is None:
        component._owner = sink
        component._eid = entity
        component._sink = None
        return
    if type(owner) is _Shared:
        shared = owner
    else:
        assert isinstance(owner, list)
        if owner is sink and component._eid == entity:
            return
        shared = _Shared()
        shared.places[(id(owner), component._eid)] = [
            owner, component._eid, component._sink is not None
        ]
        component._owner = shared
    shared.places[(id(sink), entity)] = [sink, entity, False]
    component._sink = shared


def untrack(component: _Tracked, sink: list[int], entity: int) -> None:
    """Stop tracking ``component`` for ``entity`` in the processor whose dirty list is
    ``sink``; a shared component falls back to the fast form when one place is left."""
    owner = component._owner
    if owner is sink:
        if component._eid == entity:
            component._owner = component._sink = None
            component._eid = 0
        return
    if type(owner) is not _Shared:
        return
    places = owner.places
    places.pop((id(sink), entity), None)
    if len(places) == 1:
        ((last_sink, last_entity, armed),) = places.values()
        component._owner = last_sink
        component._eid = last_entity
        component._sink = last_sink if armed else None
    elif not places:
        component._owner = component._sink = None
        component._eid = 0


def rearm(component: _Tracked, sink: list[int], entity: int) -> None:
    """Arm ``component`` again for ``entity`` after its change was dealt with (the out-of-line
    form of what the processor inlines for the fast case)."""
    owner = component._owner
    if owner is sink:
        component._sink = sink
    elif type(owner) is _Shared:
        owner.rearm(sink, entity)
        component._sink = owner


class PyPosition(_Tracked):
    """Where an entity is: ``Position(x, y)``.

    With an :class:`AABB` it places the entity's box in the world; by default ``(x, y)`` is
    the box's lower-left corner, as for a pyglet sprite. Assigning ``x`` or ``y`` marks it
    changed for the processor that tracks it (see the module docstring for the cost).

    >>> p = Position(1.0, 2.0)
    >>> p.x += 3.0
    >>> p
    Position(x=4.0, y=2.0)
    """

    __slots__ = ("_x", "_y")

    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(self, x: float = 0.0, y: float = 0.0) -> None:
        # Two finite floats pass one type test and two comparisons; anything else (an int
        # included) is converted or refused by _checked_real (speed: see
        # docs/design.md#decisions).
        if not (type(x) is float is type(y) and _NEG_INF < x < _INF and _NEG_INF < y < _INF):
            x = _checked_real(self, "x", x)
            y = _checked_real(self, "y", y)
        self._x = x
        self._y = y
        self._owner = self._sink = None
        self._eid = 0

    @property
    def x(self) -> float:
        """The x coordinate; assigning it marks the entity moved."""
        return self._x

    @x.setter
    def x(self, value: float) -> None:
        self._x = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    @property
    def y(self) -> float:
        """The y coordinate; assigning it marks the entity moved."""
        return self._y

    @y.setter
    def y(self, value: float) -> None:
        self._y = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    def translate(self, dx: float, dy: float) -> None:
        """Add ``(dx, dy)`` to the position: one call instead of two property updates, and
        one report of the change (the cheapest way to move a tracked entity)."""
        self._x += dx
        self._y += dy
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    def move_to(self, x: float, y: float) -> None:
        """Set both coordinates in one call."""
        self._x = x
        self._y = y
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _POSITIONS):
            return self._x == other._x and self._y == other._y
        return NotImplemented

    def __repr__(self) -> str:
        return f"{type(self).__name__}(x={self._x!r}, y={self._y!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self, (self._x, self._y))

    def __setstate__(self, state: tuple[float, float]) -> None:
        self._x, self._y = state
        self._owner = self._sink = None
        self._eid = 0


class PyAABB(_Tracked):
    """The size of an entity's box: ``AABB(width, height, offset_x=0.0, offset_y=0.0)``.

    With a :class:`Position` ``(x, y)`` the entity's world box is
    ``Box(x + offset_x, y + offset_y, x + offset_x + width, y + offset_y + height)``.
    Assigning any field marks the entity changed for the processor that tracks it.

    >>> AABB(4, 2).box_at(10, 10)
    Box(min_x=10.0, min_y=10.0, max_x=14.0, max_y=12.0)
    >>> AABB.centered(4, 2).box_at(10, 10)
    Box(min_x=8.0, min_y=9.0, max_x=12.0, max_y=11.0)
    """

    __slots__ = ("_h", "_ox", "_oy", "_w")

    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(
        self, width: float, height: float, offset_x: float = _ZERO, offset_y: float = _ZERO
    ) -> None:
        # As in Position.__init__, a pair at a time. The default offsets are known good: an
        # identity test skips their check (speed: see docs/design.md#decisions).
        if not (type(width) is float is type(height) and 0.0 <= width < _INF > height >= 0.0):
            width = _checked_real(self, "width", width, 0.0)
            height = _checked_real(self, "height", height, 0.0)
        if not (
            (offset_x is _ZERO and offset_y is _ZERO)
            or (
                type(offset_x) is float is type(offset_y)
                and _NEG_INF < offset_x < _INF
                and _NEG_INF < offset_y < _INF
            )
        ):
            offset_x = _checked_real(self, "offset_x", offset_x)
            offset_y = _checked_real(self, "offset_y", offset_y)
        self._w = width
        self._h = height
        self._ox = offset_x
        self._oy = offset_y
        self._owner = self._sink = None
        self._eid = 0

    @classmethod
    def centered(cls, width: float, height: float) -> PyAABB:
        """A box of this size centred on the position (the offsets are ``-width / 2`` and
        ``-height / 2``; they are plain numbers and do not follow later size changes).
        The size is checked as by the constructor, before the offsets are computed from it."""
        if not (type(width) is float is type(height) and 0.0 <= width < _INF > height >= 0.0):
            width = _checked_real(cls, "width", width, 0.0)
            height = _checked_real(cls, "height", height, 0.0)
        return cls(width, height, -width * 0.5, -height * 0.5)

    @property
    def width(self) -> float:
        """The box's width (>= 0)."""
        return self._w

    @width.setter
    def width(self, value: float) -> None:
        self._w = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    @property
    def height(self) -> float:
        """The box's height (>= 0)."""
        return self._h

    @height.setter
    def height(self, value: float) -> None:
        self._h = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    @property
    def offset_x(self) -> float:
        """From the position to the box's min_x."""
        return self._ox

    @offset_x.setter
    def offset_x(self, value: float) -> None:
        self._ox = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    @property
    def offset_y(self) -> float:
        """From the position to the box's min_y."""
        return self._oy

    @offset_y.setter
    def offset_y(self, value: float) -> None:
        self._oy = value
        sink = self._sink
        if sink is not None:
            self._sink = None
            sink.append(self._eid)

    def box_at(self, x: float, y: float) -> Box:
        """The world box of an entity at position ``(x, y)`` (``ValueError`` if it is not a
        valid box, e.g. a NaN coordinate or a negative size)."""
        x0 = x + self._ox
        y0 = y + self._oy
        return Box(x0, y0, x0 + self._w, y0 + self._h)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _AABBS):
            return (
                self._w == other._w
                and self._h == other._h
                and self._ox == other._ox
                and self._oy == other._oy
            )
        return NotImplemented

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(width={self._w!r}, height={self._h!r}, "
            f"offset_x={self._ox!r}, offset_y={self._oy!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self, (self._w, self._h, self._ox, self._oy))

    def __setstate__(self, state: tuple[float, float, float, float]) -> None:
        self._w, self._h, self._ox, self._oy = state
        self._owner = self._sink = None
        self._eid = 0


class PyCollisionFilter(_Tracked):
    """Which pairs may collide: ``CollisionFilter(category=0x1, mask=0xFFFFFFFF, group=0)``.

    Two entities collide only if ``a.category & b.mask`` and ``b.category & a.mask`` are both
    non-zero and they do not share a non-zero ``group`` (the Box2D and pymunk rules, kept in
    :mod:`ecs_spatial.filtering`). An
    entity without a filter behaves in every respect as one with ``CollisionFilter()``
    (category 0x1, mask 0xFFFFFFFF, group 0), Box2D's default filter: for collisions, for
    the ``mask=`` of queries and for ``Proximity`` masks alike. Assigning a field, or adding,
    removing or replacing the component, takes effect at the next ``process()``.

    >>> wall = CollisionFilter(category=0b01, mask=0b10)
    >>> ghost = CollisionFilter(category=0b10, mask=0b00)
    >>> wall.accepts(ghost), wall.accepts(CollisionFilter(category=0b10))
    (False, True)
    """

    __slots__ = ("_category", "_group", "_mask")

    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(self, category: int = 0x1, mask: int = 0xFFFFFFFF, group: int = 0) -> None:
        if not (type(category) is int is type(mask) and type(group) is int):
            check_fields(self, category=category, mask=mask, group=group)
        self._category = category
        self._mask = mask
        self._group = group
        self._owner = self._sink = None
        self._eid = 0

    @property
    def category(self) -> int:
        """The category bits of this entity."""
        return self._category

    @category.setter
    def category(self, value: int) -> None:
        self._category = value
        self._mark()

    @property
    def mask(self) -> int:
        """The category bits it collides with."""
        return self._mask

    @mask.setter
    def mask(self, value: int) -> None:
        self._mask = value
        self._mark()

    @property
    def group(self) -> int:
        """Entities sharing a non-zero group never collide."""
        return self._group

    @group.setter
    def group(self, value: int) -> None:
        self._group = value
        self._mark()

    def accepts(self, other: PyCollisionFilter | None) -> bool:
        """Whether an entity with this filter may collide with one with ``other`` (``None``:
        an entity without a filter)."""
        return filters_accept(
            (self._category, self._mask, self._group),
            None if other is None else (other._category, other._mask, other._group),
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _FILTERS):
            return (
                self._category == other._category
                and self._mask == other._mask
                and self._group == other._group
            )
        return NotImplemented

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(category={_bits(self._category)}, "
            f"mask={_bits(self._mask)}, group={self._group!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self, (self._category, self._mask, self._group))

    def __setstate__(self, state: tuple[int, int, int]) -> None:
        self._category, self._mask, self._group = state
        self._owner = self._sink = None
        self._eid = 0


def _compiled() -> ModuleType | None:
    """``_ccomponents``, the compiled twins, when they are built (whether or not they are
    in use: the tests drive both classes in every run)."""
    try:
        from . import _ccomponents
    except ImportError:  # not built (no compiler), or built against another Python
        return None
    return _ccomponents


_twins = _compiled()

#: Whether ``Position``, ``AABB`` and ``CollisionFilter`` are the compiled types: they are
#: built and ``ECS_SPATIAL_PURE`` is not ``"1"`` (the switch of ``index.NATIVE`` too).
NATIVE: bool = _twins is not None and os.environ.get("ECS_SPATIAL_PURE") != "1"


def _named_as_public(cls: type) -> None:
    """Name the reference ``cls`` (``PyPosition``) and its methods as the public class
    (``Position``), so that both twins read the same in a repr, an error message
    (``Position.__init__() takes ...``) and a pickle."""
    old, new = cls.__name__, cls.__name__[2:]
    cls.__name__ = cls.__qualname__ = new
    for member in vars(cls).values():
        parts = [member]
        if isinstance(member, property):
            parts = [member.fget, member.fset]
        elif isinstance(member, classmethod):
            parts = [member.__func__]
        for function in parts:
            qualname = getattr(function, "__qualname__", "")
            if qualname.startswith(old + "."):
                function.__qualname__ = new + qualname[len(old):]


for _reference in (PyPosition, PyAABB, PyCollisionFilter):
    _named_as_public(_reference)

if TYPE_CHECKING:
    Position = PyPosition
    AABB = PyAABB
    CollisionFilter = PyCollisionFilter
elif NATIVE:
    Position = _twins.Position
    AABB = _twins.AABB
    CollisionFilter = _twins.CollisionFilter
else:
    Position = PyPosition
    AABB = PyAABB
    CollisionFilter = PyCollisionFilter

# Each twin equals the other by value; an exact instance of either copies and pickles as
# the class in use (see _reduced), a subclass as itself.
_POSITIONS: tuple[type[PyPosition], ...] = (PyPosition,)
_AABBS: tuple[type[PyAABB], ...] = (PyAABB,)
_FILTERS: tuple[type[PyCollisionFilter], ...] = (PyCollisionFilter,)
_ACTIVE: dict[type, type] = {PyPosition: Position, PyAABB: AABB,
                             PyCollisionFilter: CollisionFilter}
#: Arguments that make a valid instance of each class in use, to be overwritten.
_BLANK: dict[type, tuple[float, ...]] = {Position: (), AABB: (0.0, 0.0), CollisionFilter: ()}
if _twins is not None:
    _POSITIONS += (_twins.Position,)
    _AABBS += (_twins.AABB,)
    _FILTERS += (_twins.CollisionFilter,)
    _ACTIVE.update({_twins.Position: Position, _twins.AABB: AABB,
                    _twins.CollisionFilter: CollisionFilter})


class Continuous:
    """Marks a fast mover whose motion between two frames the SpatialProcessor sweeps
    (continuous collision, Box2D's bullets): ``Continuous()``.

    Between two ``process()`` calls such an entity's box is cast from where it was to
    where it is (its box at the previous frame, moved by the change of its position, at
    that size); a box it touched on the way but does not overlap at the end gets a
    ``collision_swept`` event (see :data:`~ecs_spatial.events.COLLISION_SWEPT`). An
    entity is not swept in the frame it joins the index, nor in the frame after it gained
    this component, nor after :meth:`teleported`.

    >>> c = Continuous(); c.teleported(); c
    Continuous(teleported=True)
    """

    __slots__ = ("_teleported",)

    def __init__(self) -> None:
        self._teleported = False

    def teleported(self) -> None:
        """Say that the entity's next move is a jump, not a motion: the next ``process()``
        moves it without a sweep (a respawn, a portal, a wrap-around at the screen's edge)."""
        self._teleported = True

    def __repr__(self) -> str:
        return f"Continuous(teleported={self._teleported})" if self._teleported else "Continuous()"


def _reduced(component: _Tracked, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The ``__reduce__`` of a component: a fresh instance of its class, made without
    ``__init__``, whose ``__setstate__`` stores ``values`` and leaves it untracked.

    Copies and pickles are plain values, never the original's tracking state. They hold
    what the component holds, unchecked: a value assigned since it was made is not checked
    (the processor refuses it where it is used), and copying or pickling a world that holds
    one must not fail far from the assignment. A pickle made before components checked
    their values calls the class instead, and loads if its values pass.

    An exact instance of the twin not in use (a ``PyPosition`` while ``Position`` is the
    compiled type, or the reverse) copies and pickles as the class in use, which pickle
    only lets ``__newobj__`` make of an instance of its own class: such a copy is made by
    calling the class in use with valid blank values, then given the values the same way.
    """
    kind = type(component)
    active = _ACTIVE.get(kind, kind)
    if active is not kind:
        return (active, _BLANK[active], values)
    return (
        copyreg.__newobj__,  # type: ignore[attr-defined]  # stdlib, missing from typeshed
        (kind,),
        values,
    )


def _checked_real(owner: object, name: str, value: Any, least: float = -_MAX) -> float:
    """``value`` as a float from ``least`` (the most negative float, or 0 for a size) to the
    largest float, or the error :func:`_refusal` gives. ``owner`` (the component, or its
    class) and ``name`` (the field) are for the message."""
    kind = type(value)
    if kind is int or kind is float or (kind is not bool and isinstance(value, numbers.Real)):
        try:
            number = float(value)
        except OverflowError:
            raise _refusal(owner, name, value) from None
        if least <= number < _INF:
            return number
    raise _refusal(owner, name, value, size=least == 0.0)


def _refusal(owner: object, name: str, value: object, size: bool = False) -> Exception:
    """The error that says what is wrong with ``value`` for the field ``name`` of ``owner``
    (a component, or its class), naming both: ``TypeError`` if it is not a real number
    (a ``bool`` is not), ``ValueError`` if it is NaN, infinite, too large for a float, or,
    for a ``size``, negative."""
    cls = owner if isinstance(owner, type) else type(owner)
    where = f"{cls.__name__}.{name}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return TypeError(f"{where} must be a real number, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        return ValueError(f"{where} is too large for a float ({shown(value)})")
    if number != number:
        return ValueError(f"{where} is NaN")
    if number == _INF or number == -_INF:
        if value == _INF or value == -_INF:
            return ValueError(f"{where} is infinite ({shown(value)})")
        # A finite value of a wider type (a NumPy longdouble) that float() rounds to inf.
        return ValueError(f"{where} is too large for a float ({shown(value)})")
    if size and number < 0.0:
        return ValueError(f"{where} is negative ({shown(value)})")
    return ValueError(f"{where} is not a finite real number ({shown(value)})")


def _bits(value: object) -> str:
    """A bit mask in hex; anything else (a bad value the processor will refuse) as repr."""
    return f"{value:#x}" if isinstance(value, int) and not isinstance(value, bool) else repr(value)
