"""The compiled components (``_ccomponents``) against their references (``PyPosition``,
``PyAABB``, ``PyCollisionFilter``): driven side by side through the same operations, they
must give the same values, the same errors (type and text), the same repr, the same copies
and pickles, and the same dirty reports through ``track``, ``untrack``, ``rearm`` and
``_Shared``; subclasses of both behave alike; a pickle made by one loads as the other; and
a long loop of tracked assignments leaves reference counts and memory flat.

The tests of the components themselves (test_components.py) run on both twins; the
processor-level tests run on the class in use.
"""

from __future__ import annotations

import copy
import gc
import math
import os
import pickle
import struct
import subprocess
import sys
import tracemalloc
from array import array
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import esper
import pytest
from _budget import budget
from _worlds import fresh_world
from hypothesis import given
from hypothesis import strategies as st

from ecs_spatial import components
from ecs_spatial.components import (
    PyAABB,
    PyCollisionFilter,
    PyPosition,
    _Shared,
    rearm,
    track,
    untrack,
)
from ecs_spatial.spatial_processor import SpatialProcessor

_twins = components._twins
pytestmark = pytest.mark.skipif(_twins is None, reason="_ccomponents is not built")

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("Position", "AABB", "CollisionFilter")
REFERENCE: dict[str, type] = {"Position": PyPosition, "AABB": PyAABB,
                              "CollisionFilter": PyCollisionFilter}
COMPILED: dict[str, type] = (
    {} if _twins is None else {kind: getattr(_twins, kind) for kind in KINDS}
)
FIELDS = {
    "Position": ("x", "y"),
    "AABB": ("width", "height", "offset_x", "offset_y"),
    "CollisionFilter": ("category", "mask", "group"),
}
SLOTS = {
    "Position": ("_x", "_y"),
    "AABB": ("_w", "_h", "_ox", "_oy"),
    "CollisionFilter": ("_category", "_mask", "_group"),
}


def outcome(action: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``action`` did, comparable across the twins: its result's repr and type name,
    or its exception's type and text."""
    try:
        result = action()
    except Exception as error:  # every error is part of the contract
        return ("raised", type(error), str(error))
    return ("returned", type(result).__name__, repr(result))


def state(component: Any, kind: str) -> tuple[Any, ...]:
    """The component's fields (by the slot names both twins share) and tracking state."""
    fields = tuple(outcome(partial(getattr, component, name)) for name in SLOTS[kind])
    owner = getattr(component, "_owner", None)
    sink = getattr(component, "_sink", None)
    shape = (
        "none" if owner is None
        else "shared" if type(owner) is _Shared
        else "list"
    )
    return (fields, shape, sink is None, getattr(component, "_eid", None))


def clone_summary(clone: Any, kind: str) -> tuple[Any, ...]:
    """A copy as both twins must make it: an instance of the class in use, with the
    original's values, untracked."""
    return (type(clone) is getattr(components, kind), repr(clone), state(clone, kind))


# Values a field may be given: good and bad, exact and not.
values = st.one_of(
    st.floats(),
    st.integers(min_value=-(2**70), max_value=2**1030),
    st.booleans(),
    st.none(),
    st.fractions(),
    st.sampled_from([Decimal(1), 1j, "2", -0.0, 10**400, math.inf, -math.inf, math.nan]),
)
kinds = st.sampled_from(KINDS)


class Move:
    """One step of a story, played on one twin's component."""

    def __init__(self, step: str, field: str, slot: str, value: Any, pair: list[Any],
                 sink: list[int], entity: int, protocol: int, other: Any) -> None:
        self.step, self.field, self.slot, self.value = step, field, slot, value
        self.pair, self.sink, self.entity = pair, sink, entity
        self.protocol, self.other = protocol, other

    def play(self, comp: Any, kind: str) -> Any:
        step, pair, other = self.step, self.pair, self.other
        if step == "assign":
            setattr(comp, self.field, self.value)
        elif step == "assign_slot":
            setattr(comp, self.slot, self.value)
        elif step == "delete":
            delattr(comp, self.field)
        elif step == "track":
            track(comp, self.sink, self.entity)
        elif step == "untrack":
            untrack(comp, self.sink, self.entity)
        elif step == "rearm":
            rearm(comp, self.sink, self.entity)
        elif step == "repr":
            return repr(comp)
        elif step == "eq":
            return (comp == other, comp != other, other == comp, comp != 1, comp == None)  # noqa: E711
        elif step == "copy":
            return (clone_summary(copy.copy(comp), kind), clone_summary(copy.deepcopy(comp), kind))
        elif step == "pickle":
            return clone_summary(pickle.loads(pickle.dumps(comp, self.protocol)), kind)
        elif step == "init":
            comp.__init__(*pair)
        elif step == "translate" and kind == "Position":
            comp.translate(*pair)
        elif step == "move_to" and kind == "Position":
            comp.move_to(*pair)
        elif step == "box_at" and kind == "AABB":
            return comp.box_at(*pair)
        elif step == "centered" and kind == "AABB":
            return type(comp).centered(*pair)
        elif step == "accepts" and kind == "CollisionFilter":
            return (comp.accepts(other), comp.accepts(None))
        return None


@budget(300)
@given(st.data())
def test_the_twins_do_the_same_thing(data: st.DataObject) -> None:
    """A random story of constructions, assignments, deletions, moves, comparisons, copies
    and tracking, played on a reference and a compiled component side by side: every step
    gives the same outcome and leaves the same state and the same dirty lists."""
    kind = data.draw(kinds, label="kind")
    args = data.draw(st.lists(values, max_size=5), label="args")
    use_keywords = data.draw(st.booleans(), label="keywords")
    ref_cls, cmp_cls = REFERENCE[kind], COMPILED[kind]

    def build(cls: type) -> Callable[[], Any]:
        if use_keywords:
            names = FIELDS[kind][: len(args)]
            return lambda: cls(**dict(zip(names, args, strict=False)))
        return lambda: cls(*args)

    made = outcome(build(ref_cls))
    assert outcome(build(cmp_cls)) == made
    if made[0] == "raised":
        return
    # A valid start, from the drawn values where they were valid.
    ref, cmp = build(ref_cls)(), build(cmp_cls)()
    sinks: dict[str, list[list[int]]] = {"ref": [[], []], "cmp": [[], []]}
    others = {"ref": build(ref_cls)(), "cmp": build(cmp_cls)()}
    # Tracked from the start, at up to two places (shared), armed: the common case.
    places = data.draw(st.lists(st.tuples(st.integers(0, 1), st.integers(1, 2)), max_size=2),
                       label="places")
    for side, comp in (("ref", ref), ("cmp", cmp)):
        for where, entity in places:
            track(comp, sinks[side][where], entity)
            rearm(comp, sinks[side][where], entity)
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        step = data.draw(st.sampled_from([
            "assign", "assign", "assign", "rearm", "rearm", "assign_slot", "delete",
            "translate", "move_to", "track", "untrack", "rearm", "repr", "eq", "copy",
            "pickle", "box_at", "centered", "accepts", "init",
        ]), label="step")
        field = data.draw(st.sampled_from(FIELDS[kind]), label="field")
        slot = SLOTS[kind][FIELDS[kind].index(field)]
        value = data.draw(values, label="value")
        pair = data.draw(st.lists(values, min_size=2, max_size=2), label="pair")
        where = data.draw(st.integers(0, 1), label="sink")
        entity = data.draw(st.integers(1, 2), label="entity")
        protocol = data.draw(st.integers(0, pickle.HIGHEST_PROTOCOL), label="protocol")
        results = []
        for side, comp in (("ref", ref), ("cmp", cmp)):
            sink = sinks[side][where]
            move = Move(step, field, slot, value, pair, sink, entity, protocol, others[side])
            results.append((outcome(partial(move.play, comp, kind)), state(comp, kind),
                            sinks[side]))
        assert results[0] == results[1], step


def test_empty_slots_and_deletions_raise_alike() -> None:
    """A component made by ``__new__`` alone (what ``copyreg.__newobj__`` makes before
    ``__setstate__``) has empty slots: assigning a public field stores the value and then
    fails reading ``_sink``, as the reference's setter does; ``del`` of a public field is
    refused with the property's own message."""
    for kind in KINDS:
        found = []
        for cls in (REFERENCE[kind], COMPILED[kind]):
            maker: Any = cls
            blank = maker.__new__(maker)
            field, slot = FIELDS[kind][0], SLOTS[kind][0]
            found.append((outcome(partial(setattr, blank, field, 1)),
                          outcome(partial(getattr, blank, slot)),
                          outcome(partial(delattr, blank, field))))
        assert found[0] == found[1], kind
        assert found[0][0][:2] == ("raised", AttributeError)


def test_misuse_is_refused_in_the_same_words() -> None:
    """Wrong arguments, unknown attributes, a method assigned to, a field deleted: the
    same error, type and text, from both twins (on every CPython: some texts vary)."""
    misuses: list[Callable[[Any], Any]] = [
        lambda cls: cls(1, 2, 3, 4, 5),
        lambda cls: cls(1, 2).z,
        lambda cls: setattr(cls(1, 2), "z", 1),
        lambda cls: delattr(cls(1, 2), "z"),
        lambda cls: setattr(cls(1, 2), "__init__", 1),
        lambda cls: cls(1, 2).__setstate__((1,)),
        lambda cls: cls(1, 2).__setstate__(5),
        lambda cls: cls(1, 2) < cls(1, 2),
        lambda cls: cls(1, 2, nope=3),
    ]
    for kind in KINDS:
        for misuse in misuses:
            found = [outcome(partial(misuse, classes[kind])) for classes in (REFERENCE, COMPILED)]
            assert found[0] == found[1], (kind, found)
            assert found[0][0] == "raised"
    position_misuses: list[Callable[[Any], Any]] = [
        lambda cls: cls(1, 2).translate(1),
        lambda cls: cls(1, 2).translate(dx=1, dy=2, dz=3),
        lambda cls: cls(1, 2).move_to(1, 2, 3),
        lambda cls: cls(1, 2).translate("a", 1),
    ]
    for misuse in position_misuses:
        found = [outcome(partial(misuse, classes["Position"]))
                 for classes in (REFERENCE, COMPILED)]
        assert found[0] == found[1], found


def test_the_twins_are_distinct_classes_with_one_name() -> None:
    """Both are ``ecs_spatial.components.<Kind>`` by name, unhashable, equal to each other
    by value, and neither is an instance of the other (esper files by exact type)."""
    for kind in KINDS:
        ref, cmp = REFERENCE[kind], COMPILED[kind]
        assert (ref.__name__, ref.__module__) == (cmp.__name__, cmp.__module__)
        assert ref.__qualname__ == cmp.__qualname__ == kind
        assert ref.__hash__ is None and cmp.__hash__ is None
        a, b = (ref(1, 2), cmp(1, 2))
        assert a == b and b == a
        assert (a != b) is False
        assert not isinstance(a, cmp) and not isinstance(b, ref)
    assert components.Position is (COMPILED if components.NATIVE else REFERENCE)["Position"]


def test_reads_are_slot_reads() -> None:
    """Each public field and its slot name are member descriptors at one offset: a read is
    CPython's slot read, and a write through either name is seen through the other."""
    for kind in KINDS:
        cls = COMPILED[kind]
        for field, slot in zip(FIELDS[kind], SLOTS[kind], strict=True):
            public, private = cls.__dict__[field], cls.__dict__[slot]
            assert type(public).__name__ == type(private).__name__ == "member_descriptor"
        comp = cls(1, 2)
        setattr(comp, SLOTS[kind][0], 7)
        assert getattr(comp, FIELDS[kind][0]) == 7


# -- subclasses ------------------------------------------------------------------------------


class SlottedSpot(PyPosition):
    __slots__ = ("tag",)


class Spot(PyPosition):
    pass


if _twins is not None:

    class CSlottedSpot(_twins.Position):  # type: ignore[name-defined,misc]
        __slots__ = ("tag",)

    class CSpot(_twins.Position):  # type: ignore[name-defined,misc]
        pass

    SUBCLASSES = [pytest.param((SlottedSpot, CSlottedSpot), id="slotted"),
                  pytest.param((Spot, CSpot), id="dict")]
else:
    SUBCLASSES = []


@pytest.mark.parametrize("pair", SUBCLASSES)
def test_subclasses_track_copy_and_pickle_as_themselves(pair: tuple[type, type]) -> None:
    """A subclass, with or without ``__slots__``, marks on assignment, is named by its own
    name, and copies and pickles as itself, on both twins alike."""
    found = []
    for cls in pair:
        sink: list[int] = []
        comp = cls(1.5, 2)
        comp.tag = "t"
        track(comp, sink, 4)
        rearm(comp, sink, 4)
        comp.x = 3.0
        comp.y = 4.0
        clones = [copy.copy(comp), copy.deepcopy(comp), pickle.loads(pickle.dumps(comp))]
        assert all(type(clone) is cls for clone in clones)
        name = cls.__name__
        found.append((sink, repr(comp).removeprefix(name),
                      [repr(clone).removeprefix(name) for clone in clones],
                      [state(clone, "Position") for clone in clones]))
    assert found[0] == found[1]
    assert found[0][0] == [4]


def test_a_subclass_property_is_honoured() -> None:
    """A subclass that defines a field as its own property gets its own setter called,
    on both twins (the compiled store is only the base class's field)."""
    calls: list[Any] = []
    for base in (PyPosition, COMPILED["Position"]):

        class Clamped(base):  # type: ignore[valid-type,misc]
            __slots__ = ()

            @property
            def x(self) -> float:
                return float(self._x)

            @x.setter
            def x(self, value: float) -> None:
                calls.append(value)
                self._x = min(value, 10.0)  # type: ignore[misc]

        comp = Clamped(0, 0)
        comp.x = 50.0
        assert comp.x == 10.0
    assert calls == [50.0, 50.0]


def test_an_aliased_subclass_is_tracked_by_the_processor() -> None:
    """esper files a component by exact type: an instance of a subclass of the class in use,
    added with ``type_alias=Position``, is tracked and moves its entity."""
    with fresh_world("aliased-subclass"):
        spatial = SpatialProcessor()
        esper.add_processor(spatial)
        base = components.Position

        class Marker(base):  # type: ignore[valid-type,misc]
            __slots__ = ()

        pos = Marker(0.0, 0.0)
        entity = esper.create_entity(components.AABB(1.0, 1.0))
        esper.add_component(entity, pos, type_alias=components.Position)
        esper.process()
        assert spatial.query((-1, -1, 2, 2)) == [entity]
        pos.x = 50.0
        esper.process()
        assert spatial.query((49, -1, 52, 2)) == [entity]
        assert spatial.query((-1, -1, 2, 2)) == []


# -- pickles crossing ------------------------------------------------------------------------


def _pickles() -> list[bytes]:
    """Pickles of each class of each twin, with a value the processor would refuse."""
    made = []
    for classes in (REFERENCE, COMPILED):
        pos = classes["Position"](1.5, -2)
        pos.x = math.nan
        made += [pickle.dumps(pos), pickle.dumps(classes["AABB"](4, 2.5, -2, -1.25)),
                 pickle.dumps(classes["CollisionFilter"](2, 3, 4))]
    return made


LOADER = (
    "import pickle, sys\n"
    "import ecs_spatial.components as c\n"
    "for data in pickle.load(sys.stdin.buffer):\n"
    "    comp = pickle.loads(data)\n"
    "    assert type(comp) is getattr(c, type(comp).__name__), type(comp)\n"
    "    assert comp._owner is None and comp._sink is None and comp._eid == 0\n"
    "    print(c.NATIVE, repr(comp))\n"
)


@pytest.mark.parametrize("pure", ["0", "1"])
def test_pickles_cross_between_the_twins(pure: str) -> None:
    """A pickle of either twin's instance loads, in a process using the compiled types or
    the references, as the class that process uses, with the same values."""
    env = dict(os.environ, ECS_SPATIAL_PURE=pure, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", LOADER], input=pickle.dumps(_pickles()),
                         capture_output=True, cwd=ROOT, env=env, check=True)
    lines = run.stdout.decode().splitlines()
    native = "False" if pure == "1" else "True"
    expected = ["Position(x=nan, y=-2.0)", "AABB(width=4.0, height=2.5, offset_x=-2.0, "
                "offset_y=-1.25)", "CollisionFilter(category=0x2, mask=0x3, group=4)"] * 2
    assert lines == [f"{native} {text}" for text in expected]


# -- reference counts ------------------------------------------------------------------------


def _churn(rounds: int, comps: list[Any], sinks: list[list[int]]) -> None:
    """Assignments, moves and re-arms of tracked components, as frames do."""
    for i in range(rounds):
        value = float(i)
        for comp in comps:
            if type(comp).__name__ == "Position":
                comp.x = value
                comp.y = comp.y + 1.0
                comp.translate(0.5, 0.5)
                comp.move_to(value, value)
            elif type(comp).__name__ == "AABB":
                comp.width = value
                comp.offset_x = -value
            else:
                comp.mask = i
        for sink in sinks:
            for comp in comps:
                rearm(comp, sink, 10**30)  # a big entity id: a fresh int per copy, counted
            sink.clear()


def test_reference_counts_and_memory_stay_flat() -> None:
    """100,000 tracked assignments (single and shared components) leave the reference
    counts of the sink, the entity id and the values where they were, and no memory."""
    entity = 10**30
    sinks: list[list[int]] = [[], []]
    comps = [COMPILED[kind](1, 2) for kind in KINDS] + [COMPILED["AABB"](3, 4)]
    for comp in comps[:3]:
        track(comp, sinks[0], entity)
    track(comps[3], sinks[0], entity)
    track(comps[3], sinks[1], entity)  # shared: two places
    _churn(100, comps, sinks)
    gc.collect()
    counts = [sys.getrefcount(obj) for obj in (*sinks, entity, *comps)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _churn(25_000, comps, sinks)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(obj) for obj in (*sinks, entity, *comps)] == counts
    assert grown < 4096, grown


def test_a_dropped_component_frees_its_references() -> None:
    """A tracked component that is dropped lets go of its sink, entity and values (the
    collector finds a cycle through it too)."""
    sink: list[int] = []
    value = object()
    base = sys.getrefcount(sink), sys.getrefcount(value)
    for kind in KINDS:
        comp = COMPILED[kind](1, 2)
        track(comp, sink, 1)
        rearm(comp, sink, 1)
        setattr(comp, SLOTS[kind][1], value)
        del comp
    assert (sys.getrefcount(sink), sys.getrefcount(value)) == base
    marker = object()
    held = sys.getrefcount(marker)
    cyclic = COMPILED["Position"](1, 2)
    cyclic._x = [cyclic, marker]
    del cyclic
    gc.collect()
    assert sys.getrefcount(marker) == held


def test_sink_objects_that_are_not_lists_get_append_called() -> None:
    """A sink that is not an exact list (a ``_Shared``, a list subclass) is reported to
    through its ``append``, as the reference does."""

    class Log(list[int]):
        def append(self, entity: int, /) -> None:
            super().append(entity * 10)

    for cls in (PyPosition, COMPILED["Position"]):
        log = Log()
        comp = cls(0, 0)
        track(comp, log, 2)
        rearm(comp, log, 2)
        comp.x = 1.0
        assert log == [20]



def test_a_field_named_by_a_string_built_at_run_time_marks() -> None:
    """``__setattr__`` called with a name that is not interned (built at run time) still
    finds the field, stores it and marks, as the reference's property does."""
    for cls in (PyAABB, COMPILED["AABB"]):
        sink: list[int] = []
        comp = cls(1, 1)
        track(comp, sink, 6)
        rearm(comp, sink, 6)
        name = "".join(["wid", "th"])
        comp.__setattr__(name, 4.0)
        comp.__setattr__("".join(["_", "h"]), 5.0)  # a slot: stored, not reported
        assert (comp.width, comp.height, sink) == (4.0, 5.0, [6])


@pytest.mark.parametrize("kind", KINDS)
def test_copies_and_pickles_take_the_references_shape(kind: str) -> None:
    """The compiled ``__reduce__`` and ``__setstate__`` build in C what the reference's give
    (``components._reduced``) for an exact instance of the class in use, tracked or not, and
    hand every other case to the reference: a state of another shape gets its errors, a
    state that is not a tuple its unpacking."""
    cls, ref = COMPILED[kind], REFERENCE[kind]
    values = (3, 4) if kind != "AABB" else (3.0, 4.0, 5.0, 6.0)
    comp = cls(*values)
    sink: list[int] = []
    track(comp, sink, 7)
    rearm(comp, sink, 7)
    expected = components._reduced(comp, tuple(getattr(comp, f) for f in FIELDS[kind]))
    assert comp.__reduce__() == expected
    if components.Position is COMPILED["Position"]:
        assert comp.__reduce__()[1] == (cls,)
    for state in (values, list(values), values[:-1], (*values, 1), 5):
        fresh, model = copy.copy(comp), ref(*values)
        answers = []
        for target in (fresh, model):
            try:
                target.__setstate__(state)
                answers.append(tuple(getattr(target, f) for f in FIELDS[kind]))
            except Exception as error:  # compared: the type and the text
                answers.append((type(error), str(error)))
        assert answers[0] == answers[1], state
    clone = pickle.loads(pickle.dumps(comp))
    assert (clone._owner, clone._sink, clone._eid) == (None, None, 0) and clone == comp


def test_pickling_leaves_the_reference_counts_flat() -> None:
    """The C paths of ``__reduce__`` and ``__setstate__`` own what they take: 20,000 copies
    of each kind leave the values' and the types' reference counts where they were."""
    value = 12345.5
    comps = [COMPILED[kind](*((value,) * (2 if kind != "CollisionFilter" else 0)))
             for kind in KINDS]
    for comp in comps:
        copy.copy(comp)
    counts = [sys.getrefcount(obj) for obj in (value, *comps, *(type(c) for c in comps))]
    for _ in range(20_000):
        for comp in comps:
            copy.copy(comp).__setstate__(comp.__reduce__()[2])
    gc.collect()
    assert [sys.getrefcount(obj) for obj in (value, *comps, *(type(c) for c in comps))] == counts


# Floats a saved column may hold, each edge of the format: signed zeros, subnormals, the
# largest and smallest, infinities, NaN (the column keeps whatever the field held).
EDGE_FLOATS = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
               -1.7976931348623157e308, 1e300, math.inf, -math.inf, math.nan, 1.5, -2.25, 1e-7]


def _columns_of(kind: str, rows: list[tuple[float, ...]]) -> tuple[array[float], ...]:
    return tuple(array("d", column) for column in zip(*rows, strict=True)) if rows else tuple(
        array("d") for _ in SLOTS[kind]
    )


def _made(component: Any, kind: str) -> tuple[Any, ...]:
    """Everything a made component holds: its exact class, each field's type and bits (so
    -0.0 and NaN count), the tracking slots (types too), and whether the collector sees it."""
    fields = tuple((type(v), struct.pack("<d", v)) for v in map(component.__getattribute__,
                                                                SLOTS[kind]))
    eid = component._eid
    return (type(component), fields, component._owner, component._sink, type(eid), eid,
            gc.is_tracked(component))


@given(st.sampled_from(("Position", "AABB")),
       st.lists(st.one_of(st.sampled_from(EDGE_FLOATS), st.floats()), max_size=40))
def test_from_columns_makes_what_new_and_setstate_make(kind: str, flat: list[float]) -> None:
    """``from_columns`` (the compiled constructor of a saved world's floats column) makes,
    row by row, the component the reference path makes, ``cls.__new__`` then the class's
    ``__setstate__``, and the one the reference class's own ``__setstate__`` leaves: exact
    floats bit for bit (-0.0, subnormals, the largest, NaN), untracked, eid 0."""
    assert _twins is not None
    cls: Any = COMPILED[kind]
    ref: Any = REFERENCE[kind]
    n = len(SLOTS[kind])
    rows = [tuple(flat[i : i + n]) for i in range(0, len(flat) - n + 1, n)]
    made = _twins.from_columns(cls, _columns_of(kind, rows))
    assert type(made) is list and len(made) == len(rows)
    assert len({id(c) for c in made}) == len(made)
    for component, row in zip(made, rows, strict=True):
        by_setstate = cls.__new__(cls)
        by_setstate.__setstate__(row)
        reference = ref.__new__(ref)
        reference.__setstate__(row)
        assert _made(component, kind) == _made(by_setstate, kind)
        assert _made(component, kind)[1:] == _made(reference, kind)[1:]


@given(st.sampled_from(("Position", "AABB")), st.integers(0, 30), st.data())
def test_from_columns_with_a_sink_makes_them_tracked_as_the_reference_path(
    kind: str, n: int, data: st.DataObject
) -> None:
    """With a sink, ids and the pending ids, ``from_columns`` makes each component born
    tracked as the reference class is left by ``__setstate__`` then ``track`` and, unless
    its id is pending, ``rearm``: ``_owner`` the sink, ``_eid`` its id (the same object),
    armed (``_sink`` the sink) unless pending; a store then lists its entity once, and one
    on a pending component lists nothing."""
    assert _twins is not None
    ids = data.draw(st.lists(st.integers(-(2**70), 2**70), min_size=n, max_size=n, unique=True))
    pending = set(data.draw(st.lists(st.sampled_from(ids), max_size=n))) if ids else set()
    rows = [tuple(float(i + k) for k in range(len(SLOTS[kind]))) for i in range(n)]
    columns = _columns_of(kind, rows)
    sink: list[int] = [7]
    made = _twins.from_columns(COMPILED[kind], columns, sink, ids, pending)
    ref_sink: list[int] = [7]
    ref: Any = REFERENCE[kind]
    reference = []
    for row, entity in zip(rows, ids, strict=True):
        by_ref = ref.__new__(ref)
        by_ref.__setstate__(row)
        components.track(by_ref, ref_sink, entity)
        if entity not in pending:
            components.rearm(by_ref, ref_sink, entity)
        reference.append(by_ref)
    for component, by_ref, entity in zip(made, reference, ids, strict=True):
        assert component._owner is sink and component._eid is entity
        assert component._sink is (None if entity in pending else sink)
        assert by_ref._owner is ref_sink and by_ref._eid is entity
        assert (by_ref._sink is None) == (component._sink is None)
        assert _made(component, kind)[1] == _made(by_ref, kind)[1]
    for component, by_ref in zip(made, reference, strict=True):
        name = "x" if kind == "Position" else "width"
        setattr(component, name, 99.0)
        setattr(by_ref, name, 99.0)
    assert sink == ref_sink == [7] + [e for e in ids if e not in pending]


def test_from_columns_refuses_a_sink_ids_or_pending_it_cannot_track_with() -> None:
    """Tracking arguments of the wrong kinds, ids that are not ints or not one a row, are
    refused before anything is made; the sink is left as it was."""
    assert _twins is not None
    pos = COMPILED["Position"]
    two = (array("d", [1.0, 2.0]), array("d", [3.0, 4.0]))
    sink: list[int] = []
    cases: list[tuple[Any, ...]] = [
        (pos, two, (), [1, 2], set()), (pos, two, sink, (1, 2), set()),
        (pos, two, sink, [1, 2], [1]), (pos, two, sink, [1], set()),
        (pos, two, sink, [1, 2, 3], set()), (pos, two, sink, [1, 2.0], set()),
        (pos, two, sink, [1, True], set()), (pos, two, sink, [1, 2], set(), None),
    ]
    live = len(gc.get_objects())
    for args in cases:
        with pytest.raises((TypeError, ValueError)):
            _twins.from_columns(*args)
    gc.collect()
    assert len(gc.get_objects()) <= live + 5 and sink == []
    made = _twins.from_columns(pos, two, sink, [1, 2], frozenset([2]))
    assert [c._sink for c in made] == [sink, None]


def test_from_columns_refuses_what_it_does_not_make() -> None:
    """Anything but the compiled Position or AABB exactly, with a tuple of one buffer of
    doubles a field of one length, is refused and nothing is made."""
    assert _twins is not None
    pos, aabb = COMPILED["Position"], COMPILED["AABB"]
    two = (array("d", [1.0]), array("d", [2.0]))
    sub = type("Sub", (pos,), {"__slots__": ()})
    cases: list[tuple[Any, ...]] = [
        (PyPosition, two), (sub, two), (COMPILED["CollisionFilter"], two), (object, two),
        (pos, [array("d", [1.0]), array("d", [2.0])]), (pos, two[:1]), (aabb, two),
        (pos, (array("d", [1.0]), array("f", [2.0]))),
        (pos, (array("d", [1.0]), array("d", [2.0, 3.0]))),
        (pos, (array("d", [1.0]), [2.0])), (pos, (array("d", [1.0]), b"\0" * 8)),
        (pos, (array("d", [1.0, 2.0]), memoryview(array("d", [1.0, 2.0, 3.0, 4.0]))[::2])),
        (pos,), (pos, two, two),
    ]
    live = len(gc.get_objects())
    for args in cases:
        with pytest.raises((TypeError, ValueError, BufferError)):
            _twins.from_columns(*args)
    gc.collect()
    assert len(gc.get_objects()) <= live + 5
    for array_ in two:
        array_.append(0.0)  # no buffer left exported by a refusal


def test_from_columns_leaves_counts_and_memory_flat() -> None:
    """Making and dropping components from columns, or refusing bad columns, leaves the
    columns' and the classes' reference counts where they were, and no memory."""
    assert _twins is not None
    pos, aabb = COMPILED["Position"], COMPILED["AABB"]
    cols2 = (array("d", range(1000)), array("d", range(1000)))
    cols4 = (*cols2, array("d", [-0.0] * 1000), array("d", [5e-324] * 1000))
    bad = (array("d", [1.0]), array("d", [1.0, 2.0]))

    def churn(rounds: int) -> None:
        for _ in range(rounds):
            del _twins.from_columns(pos, cols2)[:]
            _twins.from_columns(aabb, cols4)
            with pytest.raises(ValueError):
                _twins.from_columns(pos, bad)

    churn(5)
    gc.collect()
    held = [sys.getrefcount(o) for o in (pos, aabb, *cols4, *bad)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        churn(200)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (pos, aabb, *cols4, *bad)] == held
    assert grown < 4096, grown
