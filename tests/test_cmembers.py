"""The SpatialProcessor's read loop, compiled (``_cmembers.read_boxes``) against its
reference (``_members.read_boxes_reference``): driven side by side on the same members, they must
leave the same records, the same list of changed records, the same dirty flags and raise the
same error, whatever the components hold (floats of every range, -0.0, NaN, ints too large
for a float, bools, Fractions, Decimals, strings, subclasses, shared components, empty slots).

The processor-level tests (test_spatial_processor*.py, test_fault_model.py) run through
whichever loop is in use; this file proves the two loops agree operation by operation.
"""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import NATIVE, _members
from ecs_spatial._members import box_error
from ecs_spatial.components import AABB, Position, _Shared, rearm, track

_cmembers = pytest.importorskip("ecs_spatial._cmembers") if NATIVE else None
pytestmark = pytest.mark.skipif(
    _cmembers is None, reason="the compiled core is not in use (a pure-Python build, or "
    "ECS_SPATIAL_PURE=1)"
)

ReadBoxes = Callable[..., bool]
REFERENCE: ReadBoxes = _members.read_boxes_reference


def compiled() -> ReadBoxes:
    assert _cmembers is not None
    fn: ReadBoxes = _cmembers.read_boxes
    return fn


_POSITION_X: Any = Position.__dict__["_x"]


class ShadowedPosition(Position):
    """A subclass whose ``_x`` is a property: only the generic path reads it right."""

    __slots__ = ()

    @property
    def _x(self) -> float:
        return 7.25

    @_x.setter
    def _x(self, value: float) -> None:
        _POSITION_X.__set__(self, value)  # the slot holds the value; reading it is wrong


class PlainSubAABB(AABB):
    """A subclass with nothing of its own: the generic path, same slots."""

    __slots__ = ()


values = st.one_of(
    st.floats(-1e3, 1e3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan]),
    st.integers(-(10**6), 10**6),
    st.sampled_from([10**400, -(10**400), 2**1023, True, False]),
    st.builds(Fraction, st.integers(-100, 100), st.integers(1, 7)),
    st.sampled_from([Decimal("1.5"), "1.0", None]),
)
sizes = st.one_of(st.floats(0.0, 100.0), values)
valid_size = st.one_of(st.floats(0.0, 100.0), st.floats(0.0, 100.0), st.sampled_from([-0.0, -1.0]))
finite = st.one_of(st.floats(-1e3, 1e3), st.integers(-100, 100), st.sampled_from([-0.0, 1e300]))


@st.composite
def scenes(draw: st.DrawFn) -> dict[str, Any]:
    """A spec of members (rebuilt twice, identically, for the two loops)."""
    n = draw(st.integers(0, 8))
    members = []
    for entity in range(1, n + 1):
        # Most members valid (so the loop runs on to the re-arm and the next member), the
        # rest with any value in any field.
        valid = draw(st.integers(0, 3)) > 0
        value = finite if valid else values
        size = valid_size if valid else sizes
        members.append({
            "entity": entity,
            "pos": [draw(value), draw(value)],
            "aabb": [draw(size), draw(size), draw(value), draw(value)],
            "pos_type": draw(st.sampled_from(["exact", "exact", "shadowed"])),
            "aabb_type": draw(st.sampled_from(["exact", "exact", "sub"])),
            "share_aabb_with": draw(st.one_of(st.none(), st.integers(1, max(entity - 1, 1)))),
            "tracked": draw(st.booleans()),
            "old": draw(st.sampled_from(["same", "other", "stale"])),
            "empty_slot": draw(st.sampled_from([None] * 12 + ["_x", "_w", "_owner"])),
        })
    todo = draw(st.lists(st.integers(0, n + 2), max_size=12))
    return {"members": members, "todo": todo}


def build(spec: dict[str, Any]) -> tuple[list[int], dict[int, list[Any]], list[int]]:
    """The loop's inputs from a spec: todo, the members' records, the dirty list."""
    dirty: list[int] = []
    records: dict[int, list[Any]] = {}
    aabbs: dict[int, AABB] = {}
    for m in spec["members"]:
        entity = m["entity"]
        pos = (ShadowedPosition if m["pos_type"] == "shadowed" else Position)(0.0, 0.0)
        pos._x, pos._y = m["pos"]
        shared = m["share_aabb_with"]
        if shared is not None and shared in aabbs:
            aabb = aabbs[shared]
        else:
            aabb = (PlainSubAABB if m["aabb_type"] == "sub" else AABB)(1.0, 1.0)
            aabb._w, aabb._h, aabb._ox, aabb._oy = m["aabb"]
        aabbs[entity] = aabb
        if m["tracked"]:
            track(pos, dirty, entity)
            track(aabb, dirty, entity)
        old: Any = ()
        if m["old"] == "same":
            try:
                old = _members.checked_box(entity, pos, aabb)
            except Exception:
                old = ()
        elif m["old"] == "other":
            old = (0.0, 0.0, 1.0, 1.0, entity)
        records[entity] = [pos, aabb, old, entity]
    for m in spec["members"]:
        if m["empty_slot"] is not None:
            rec = records[m["entity"]]
            component = rec[1] if m["empty_slot"] == "_w" else rec[0]
            empty_slot(component, m["empty_slot"])
    return list(spec["todo"]), records, dirty


def empty_slot(component: Any, name: str) -> None:
    """Delete the slot ``name`` itself (under a subclass's property of the same name)."""
    for cls in type(component).__mro__:
        descriptor = cls.__dict__.get(name)
        if isinstance(descriptor, types.MemberDescriptorType):
            with contextlib.suppress(AttributeError):  # empty already (shared, or shadowed)
                descriptor.__delete__(component)
            return
    raise AssertionError(f"no slot {name}")


def observed(item: Any) -> Any:
    """A value as the comparison sees it: its type and repr, so -0.0 differs from 0.0."""
    if isinstance(item, tuple):
        return tuple(observed(v) for v in item)
    return (type(item).__name__, repr(item))


def sink_state(component: Any, dirty: list[int]) -> Any:
    sink = getattr(component, "_sink", "<empty>")
    if sink is dirty:
        return "armed"
    if isinstance(sink, _Shared):
        return ("shared", sorted((k[1], v[2]) for k, v in sink.places.items()))
    return repr(sink)


def run(read: ReadBoxes, spec: dict[str, Any], buffers: bool = True) -> dict[str, Any]:
    todo, records, dirty = build(spec)
    changed: list[list[Any]] = []
    error: Any = None
    ids, boxes = (bytearray(b"stale"), bytearray()) if buffers else (None, None)
    complete: Any = None
    try:
        complete = read(todo, records, dirty, changed, ids, boxes)
    except Exception as exc:
        error = (type(exc).__name__, str(exc), exc.__cause__ is None, exc.__suppress_context__)
    moves: Any = None
    if error is None and ids is not None and boxes is not None:
        moves = (list(memoryview(ids).cast("q")), list(memoryview(boxes).cast("d")))
        if complete:  # the buffers hold every changed record's move, in order
            assert moves == ([rec[3] for rec in changed],
                             [c for rec in changed for c in rec[2][:4]])
    return {
        "error": error,
        "complete": complete,
        "moves": moves,
        "changed": [rec[3] for rec in changed],
        "records": {e: observed(rec[2]) for e, rec in records.items()},
        "sinks": {e: (sink_state(rec[0], dirty), sink_state(rec[1], dirty))
                  for e, rec in records.items()},
        "dirty": list(dirty),
    }


@settings(max_examples=300, deadline=None)
@given(scenes())
def test_the_compiled_loop_does_what_the_reference_does(spec: dict[str, Any]) -> None:
    assert run(compiled(), spec) == run(REFERENCE, spec)
    assert run(compiled(), spec, buffers=False) == run(REFERENCE, spec, buffers=False)


def test_the_moves_go_into_the_buffers_only_when_exact() -> None:
    """An id of more than 64 bits, or a box whose corners are not exact floats, cannot be
    carried by the buffers: the answer says so, and the caller moves the records."""
    for read in (compiled(), REFERENCE):
        big = 2**70
        for entity, position, expected in [(5, Position(1.0, 2.0), True),
                                           (big, Position(1.0, 2.0), False),
                                           (5, Position(1, 2), True)]:
            records = {entity: [position, AABB(2.0, 3.0), (), entity]}
            ids, boxes = bytearray(), bytearray()
            changed: list[list[Any]] = []
            assert read([entity], records, [], changed, ids, boxes) is expected
            assert len(changed) == 1
            if expected:
                assert list(memoryview(ids).cast("q")) == [entity]
                assert list(memoryview(boxes).cast("d")) == [1.0, 2.0, 3.0, 5.0]
        assert read([5], records, [], [], None, None) is False
        with pytest.raises(TypeError, match="ids and boxes are bytearrays"):
            read([5], records, [], [], b"", bytearray())
        with pytest.raises(TypeError, match="got bytearray and NoneType"):
            read([5], records, [], [], bytearray(), None)


def test_a_box_held_elsewhere_is_never_written_in_place() -> None:
    """The compiled loop writes a changed box into the record's own tuple when nothing else
    holds it (it is then a new box in all but identity); a tuple someone else holds (the
    sweep keeps last frame's box) keeps its values, and the record gets a new one."""
    for read in (compiled(), REFERENCE):
        pos = Position(1.0, 2.0)
        rec = [pos, AABB(2.0, 3.0), (0.0, 0.0, 1.0, 1.0, 7), 7]
        held = rec[2]
        read([7], {7: rec}, [], [], bytearray(), bytearray())
        assert held == (0.0, 0.0, 1.0, 1.0, 7)
        assert rec[2] == (1.0, 2.0, 3.0, 5.0, 7)
        del held
        pos._x = 4.0
        corners = [rec[2][i] for i in range(4)]
        read([7], {7: rec}, [], [], bytearray(), bytearray())
        assert corners == [1.0, 2.0, 3.0, 5.0]
        assert rec[2] == (4.0, 2.0, 6.0, 5.0, 7)
        del corners
        before = id(rec[2])  # not a reference: that would hold the tuple
        pos._x = 5.0
        read([7], {7: rec}, [], [], bytearray(), bytearray())
        assert rec[2] == (5.0, 2.0, 7.0, 5.0, 7)
        # The saving is in effect in the compiled loop: the same tuple (a new one is made
        # before the old one is freed, so it cannot have the old one's address).
        assert (id(rec[2]) == before) is (read is not REFERENCE)


@pytest.mark.parametrize("x, expected", [(-0.0, "0.0"), (0.0, "0.0"), (-5.0, "-5.0")])
def test_the_sum_with_zero_makes_negative_zero_positive(x: float, expected: str) -> None:
    spec = {"members": [{
        "entity": 1, "pos": [x, 1.0], "aabb": [0.0, 0.0, -0.0, 0.0], "pos_type": "exact",
        "aabb_type": "exact", "share_aabb_with": None, "tracked": True, "old": "stale",
        "empty_slot": None,
    }], "todo": [1]}
    for read in (compiled(), REFERENCE):
        result = run(read, spec)
        assert result["records"][1][0] == ("float", expected)
        assert result["sinks"][1] == ("armed", "armed")
        assert result["changed"] == [1]


def test_a_bad_box_names_the_entity_and_leaves_the_earlier_changes_listed() -> None:
    base = {"pos_type": "exact", "aabb_type": "exact", "share_aabb_with": None,
            "tracked": True, "old": "other", "empty_slot": None}
    spec = {"members": [
        {**base, "entity": 1, "pos": [1.0, 2.0], "aabb": [1.0, 1.0, 0.0, 0.0]},
        {**base, "entity": 2, "pos": [math.nan, 2.0], "aabb": [1.0, 1.0, 0.0, 0.0]},
        {**base, "entity": 3, "pos": [1e308, 0.0], "aabb": [1e308, 1.0, 1e308, 0.0]},
        {**base, "entity": 4, "pos": ["1", 0.0], "aabb": [1.0, 1.0, 0.0, 0.0]},
    ], "todo": [1, 2]}
    for read in (compiled(), REFERENCE):
        result = run(read, spec)
        assert result["changed"] == [1]
        assert result["error"] == ("ValueError", "entity 2: Position.x is NaN", True, False)
        spec["todo"] = [3]
        assert run(read, spec)["error"][1].startswith("entity 3: the box of ")
        spec["todo"] = [4]
        assert run(read, spec)["error"][:2] == (
            "TypeError", "entity 4: Position.x must be a real number, got '1'")
        spec["todo"] = [1, 2]


def test_configure_refuses_a_class_without_the_slots() -> None:
    assert _cmembers is not None

    class NoSlots:
        _x = 1.0

    with pytest.raises(TypeError, match="_x is not a writable __slots__ entry"):
        _cmembers.configure(NoSlots, AABB, box_error, rearm)
    # The configuration in effect is unchanged: the loop still reads Position's slots.
    test_the_sum_with_zero_makes_negative_zero_positive(-0.0, "0.0")


def test_configure_refuses_a_slot_of_another_class() -> None:
    """A slot descriptor of an unrelated class, set as a class attribute, is no slot of the
    class: its offset lies past the end of the class's instances, and the loop read there
    (SIGSEGV). Refused by name; the configuration in effect is unchanged."""
    assert _cmembers is not None

    class Wide:
        __slots__ = (*(f"pad{i}" for i in range(4000)), "_x", "_y", "_owner", "_sink")

    class Borrowed:
        __slots__ = ()
        _x, _y, _owner, _sink = (Wide.__dict__[n] for n in ("_x", "_y", "_owner", "_sink"))

    with pytest.raises(TypeError) as refused:
        _cmembers.configure(Borrowed, AABB, box_error, rearm)
    assert str(refused.value) == (
        "Borrowed._x is a slot of Wide, which Borrowed does not derive from"
    )
    test_the_sum_with_zero_makes_negative_zero_positive(-0.0, "0.0")

    class Derived(Position):  # slots of a base: read from the base's offsets, as before
        __slots__ = ()

    _cmembers.configure(Derived, AABB, box_error, rearm)
    try:
        changed: list[list[Any]] = []
        _cmembers.read_boxes([1], {1: [Derived(3.0, 4.0), AABB(1.0, 2.0), (), 1]}, [], changed)
        assert changed[0][2] == (3.0, 4.0, 4.0, 6.0, 1)
    finally:
        _cmembers.configure(Position, AABB, box_error, rearm)


def test_the_processor_uses_the_compiled_loop_with_the_compiled_index() -> None:
    assert _members.read_boxes is compiled()


@pytest.mark.parametrize("seed", range(40))
def test_the_row_read_skips_only_blocks_that_are_the_same(seed: int) -> None:
    """``_cmembers.read_rows`` skips blocks of rows whose bytes did not change in one
    comparison: against ``arrays.read_rows``, arrays of hundreds of rows with a few changes
    placed where a block starts, ends, or is cut by the end of either snapshot (a row
    added or dropped), some of them changes of bytes only (``-0.0`` for ``0.0``), must give
    the same moves in the same order."""
    import random
    from array import array

    from ecs_spatial import arrays

    assert _cmembers is not None
    rng = random.Random(seed)
    n = rng.randrange(1, 400)
    values = [float(rng.randrange(0, 50)) for _ in range(4 * n)]
    for row in range(n):  # each a box
        values[4 * row + 2] += values[4 * row]
        values[4 * row + 3] += values[4 * row + 1]
    last = array("d", values)
    now = array("d", values)
    edges = [r for b in range(0, n + 8, 8) for r in (b - 1, b, b + 1) if 0 <= r < n]
    for _ in range(rng.randrange(0, 6)):
        row = rng.choice(edges) if rng.random() < 0.7 else rng.randrange(n)
        at = 4 * row + rng.randrange(2)
        now[at] = -0.0 if now[at] == 0.0 and rng.random() < 0.5 else now[at] - 1.0
    cut = rng.choice([0, 0, 0, -1, 1])  # a row dropped from, or added to, the newer rows
    if cut < 0:
        now = now[:-4]
    elif cut > 0:
        now.extend([1.0, 1.0, 2.0, 2.0])
    state: list[Any] = [last.tobytes(), array("q"), {}, 0]
    for entity in range(1, n + 1):
        arrays.link(state, entity - 1, entity)
    if n > 3:
        arrays.link(state, rng.randrange(n), n + 1)  # a shared row
    answers: list[object] = []
    for read in (arrays.read_rows, _cmembers.read_rows):
        ids, boxes, rows = bytearray(), bytearray(), bytearray()
        try:
            made, refused = read(
                now.tobytes(), state[0], state[1], state[2], set(), ids, boxes, rows, 0,
                arrays.checked_row,
            )
            answers.append((made, refused, ids[:8 * made], boxes[:32 * made], rows[:8 * made]))
        except IndexError as error:
            answers.append(str(error))
    assert answers[0] == answers[1]
