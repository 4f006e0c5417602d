"""The processors on a torus (``SpatialProcessor(wrap=...)``, issue 28) against an exact
brute-force model: collision pairs and their enter/exit events, a culling view across the
seams, proximity by the minimum-image distance, ``Continuous`` sweeps across a seam, the
refusals (a box over half the period, a watcher radius over half), and pickling.

Coordinates are small integers (as floats), the period's too: every float operation the
index does on them (the shift to the period, the widths, the centres) is exact, so the
model, in ``Fraction``s, is exact and a touching box is a test of the closed rule. The
suite's ``ECS_SPATIAL_PURE=1`` leg runs all of it on the reference index.
"""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import esper
import pytest
from _worlds import fresh_world
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_spatial import (
    AABB,
    COLLISION_ENTER,
    COLLISION_EXIT,
    COLLISION_SWEPT,
    PROXIMITY_ENTER,
    PROXIMITY_EXIT,
    VIEW_ENTER,
    VIEW_EXIT,
    Box,
    Continuous,
    CullingProcessor,
    Position,
    Proximity,
    ProximityProcessor,
    SpatialProcessor,
)

#: A box as the model keeps it: (x0, y0, x1, y1), the user's, exact.
MBox = tuple[Fraction, Fraction, Fraction, Fraction]
Period = tuple[int, int, int, int]  # (x0, y0, W, H)


# ---------------------------------------------------------------- the exact model


def axis_overlap(a0: Fraction, a1: Fraction, b0: Fraction, b1: Fraction, p: int) -> bool:
    """Whether [a0, a1] meets [b0, b1] shifted by some whole number of periods ``p``: the
    integers k with ``a0 <= b1 + k p`` and ``b0 + k p <= a1``."""
    return math.ceil((a0 - b1) / p) <= math.floor((a1 - b0) / p)


def torus_overlap(a: MBox, b: MBox, period: Period) -> bool:
    """Whether the closed boxes meet on the torus (some image of ``b`` meets ``a``)."""
    _, _, w, h = period
    return axis_overlap(a[0], a[2], b[0], b[2], w) and axis_overlap(a[1], a[3], b[1], b[3], h)


def axis_distance(v: Fraction, b0: Fraction, b1: Fraction, p: int) -> Fraction:
    """The least distance from ``v`` to an image of [b0, b1] (at most half a period wide)
    along an axis of period ``p``."""
    t = (v - b0) % p  # where v lies past the interval's start, in [0, p)
    width = b1 - b0
    return Fraction(0) if t <= width else min(t - width, p - t)


def min_image_within(cx: Fraction, cy: Fraction, b: MBox, r: int, period: Period) -> bool:
    """Whether the box is within ``r`` of the point by the minimum-image distance."""
    _, _, w, h = period
    dx = axis_distance(cx, b[0], b[2], w)
    dy = axis_distance(cy, b[1], b[3], h)
    return dx * dx + dy * dy <= r * r


def model_box(pos: tuple[int, int], size: tuple[int, int]) -> MBox:
    x, y = Fraction(pos[0]), Fraction(pos[1])
    return (x, y, x + size[0], y + size[1])


def canonical_centre(b: MBox, period: Period) -> tuple[Fraction, Fraction]:
    """The centre of the box the index keeps (min corner moved into the period)."""
    ox, oy, w, h = period
    x0 = ox + (b[0] - ox) % w
    y0 = oy + (b[1] - oy) % h
    return x0 + (b[2] - b[0]) / 2, y0 + (b[3] - b[1]) / 2


class Recorder:
    """Every event of the kinds given, in the order delivered (holds its handlers: esper's
    are weak)."""

    def __init__(self, *kinds: str) -> None:
        self.log: list[tuple[Any, ...]] = []
        self.handlers = {kind: self._handler(kind) for kind in kinds}
        for kind, handler in self.handlers.items():
            esper.set_handler(kind, handler)

    def _handler(self, kind: str) -> Any:
        def handle(*args: Any) -> None:
            self.log.append((kind, *args))

        return handle

    def take(self, kind: str) -> list[tuple[Any, ...]]:
        taken = [e[1:] for e in self.log if e[0] == kind]
        self.log = [e for e in self.log if e[0] != kind]
        return taken


@pytest.fixture
def world() -> Iterator[str]:
    with fresh_world("torus") as name:
        yield name


# ---------------------------------------------------------------- the random worlds

PERIODS = st.sampled_from([(0, 0, 20, 20), (-5, 3, 16, 24), (7, -11, 30, 10)])
COORD = st.integers(-400, 400)
ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(
            ["create", "create", "move", "nudge", "nudge", "seam", "resize", "delete", "defer",
             "view"]
        ),
        st.integers(0, 10**6),
        COORD, COORD, st.integers(0, 40), st.integers(0, 40),
    ),
    min_size=20, max_size=60,
)


def _size(value: int, p: int) -> int:
    return value % (p // 2 + 1)  # from 0 to half the period: every size the torus takes


@settings(max_examples=200)
@given(period=PERIODS, actions=ACTIONS, radius=st.integers(1, 8), band=st.integers(0, 4))
def test_events_match_the_torus_model(
    period: Period, actions: list[tuple[str, int, int, int, int, int]], radius: int, band: int
) -> None:
    """Random worlds on a torus, moved across the seams and far outside the period: each
    frame ``pairs`` equals the brute-force set of pairs that overlap on the torus, the
    enter/exit events are its difference with the last frame's, each once; a culling view
    (across a seam, partly outside the period) sees exactly the boxes that meet it on the
    torus, with exactly-once view events; and every watcher's neighbours are the boxes
    within its radius by the minimum-image distance (or, for one already a neighbour, its
    exit radius: every other watcher has one ``band`` past its radius), with exactly-once
    proximity events."""
    ox, oy, w, h = period
    radius = min(radius, min(w, h) // 2)  # over half the period is refused: tested below
    with fresh_world("torus-model"):
        wrap = Box(ox, oy, ox + w, oy + h)
        spatial = SpatialProcessor(wrap=wrap)
        view_box = [Box(ox + w - 3, oy - 2, ox + w + 4, oy + 5)]  # across both seams
        culling = CullingProcessor(spatial, lambda: view_box[0])
        proximity = ProximityProcessor(spatial)
        for processor in (spatial, culling, proximity):
            esper.add_processor(processor)
        rec = Recorder(
            COLLISION_ENTER, COLLISION_EXIT, VIEW_ENTER, VIEW_EXIT, PROXIMITY_ENTER,
            PROXIMITY_EXIT,
        )
        boxes: dict[int, MBox] = {}
        watchers: dict[int, int] = {}  # watcher -> its exit reach
        pairs: set[tuple[int, int]] = set()
        seen: set[int] = set()
        near: set[tuple[int, int]] = set()
        for kind, pick, x, y, sw, sh in actions:
            ids = sorted(boxes)
            if kind == "create" or not ids:
                size = (_size(sw, w), _size(sh, h))
                keep = radius + band if pick % 4 == 0 else None
                extra: list[Any] = [Proximity(radius, exit_radius=keep)] if pick % 2 == 0 else []
                entity = esper.create_entity(Position(float(x), float(y)), AABB(*size), *extra)
                boxes[entity] = model_box((x, y), size)
                if extra:
                    watchers[entity] = radius if keep is None else keep
            elif kind == "view":
                vw, vh = sw % (2 * w), sh % (2 * h)  # up to two periods wide
                view_box[0] = Box(x, y, x + vw, y + vh)
            else:
                entity = ids[pick % len(ids)]
                pos = esper.component_for_entity(entity, Position)
                aabb = esper.component_for_entity(entity, AABB)
                b = boxes[entity]
                if kind == "move":
                    pos.x, pos.y = float(x), float(y)
                elif kind == "nudge":  # a step of a few units, in and out of reach
                    pos.x += sw % 7 - 3
                    pos.y += sh % 7 - 3
                elif kind == "seam":  # wrapped by hand as a game does, a period the other way
                    pos.x -= w * (1 if pick % 2 else -1)
                    pos.y += h * (pick % 3 - 1)
                elif kind == "resize":
                    aabb.width, aabb.height = _size(sw, w), _size(sh, h)
                elif kind in ("delete", "defer"):
                    esper.delete_entity(entity, immediate=kind == "delete")
                    del boxes[entity]
                    watchers.pop(entity, None)
                    b = ()  # type: ignore[assignment]
                if b:
                    boxes[entity] = model_box(
                        (int(pos.x), int(pos.y)), (int(aabb.width), int(aabb.height))
                    )
            esper.process()

            now = {
                (a, b) for a in boxes for b in boxes
                if a < b and torus_overlap(boxes[a], boxes[b], period)
            }
            assert set(spatial.pairs) == now
            assert sorted(rec.take(COLLISION_ENTER)) == sorted(now - pairs)
            assert sorted(rec.take(COLLISION_EXIT)) == sorted(pairs - now)
            pairs = now

            vb = view_box[0]
            view = (Fraction(vb.min_x), Fraction(vb.min_y), Fraction(vb.max_x), Fraction(vb.max_y))
            visible = {e for e, b in boxes.items() if torus_overlap(view, b, period)}
            assert set(culling.visible) == visible
            assert sorted(rec.take(VIEW_ENTER)) == [(e,) for e in sorted(visible - seen)]
            assert sorted(rec.take(VIEW_EXIT)) == [(e,) for e in sorted(seen - visible)]
            seen = visible

            within = set()
            for watcher in watchers:
                cx, cy = canonical_centre(boxes[watcher], period)
                for other, b in boxes.items():
                    reach = watchers[watcher] if (watcher, other) in near else radius
                    if other != watcher and min_image_within(cx, cy, b, reach, period):
                        within.add((watcher, other))
            for watcher in watchers:
                got = set(esper.component_for_entity(watcher, Proximity).neighbors)
                assert got == {o for wt, o in within if wt == watcher}
            assert sorted(rec.take(PROXIMITY_ENTER)) == sorted(within - near)
            assert sorted(rec.take(PROXIMITY_EXIT)) == sorted(near - within)
            near = within
            assert not rec.log
            spatial.index.check()


# ---------------------------------------------------------------- Continuous across a seam


def _sweep_run(start: float, end: float, obstacles: list[Box]) -> list[tuple[Any, ...]]:
    """The swept contacts of a Continuous 1 by 1 box at y = 5 moved from x = ``start`` to
    x = ``end`` on the torus of period 20 by 20 (origin 0), among ``obstacles``."""
    spatial = SpatialProcessor(wrap=Box(0, 0, 20, 20))
    esper.add_processor(spatial)
    rec = Recorder(COLLISION_SWEPT)
    mover = esper.create_entity(Position(start, 5.0), AABB(1, 1), Continuous())
    for b in obstacles:
        esper.create_entity(Position(b.min_x, b.min_y), AABB(b.max_x - b.min_x, b.max_y - b.min_y))
    esper.process()
    esper.component_for_entity(mover, Position).x = end
    esper.process()
    return rec.take(COLLISION_SWEPT)


def test_a_wrapped_move_sweeps_the_short_way_across_the_seam(world: str) -> None:
    """x from 17 to 2 (wrapped by hand, ``x -= W`` as it crosses the seam at 20) is a move
    of +5 across the seam: it sweeps the box just past the seam (at t = (20.5 - 18) / 5),
    not the one it would pass going 15 the other way."""
    past_seam = Box(0.5, 5, 0.75, 6)
    decoy = Box(10, 5, 11, 6)
    assert _sweep_run(17.0, 2.0, [past_seam, decoy]) == [(1, 2, 0.5)]


def test_a_sweep_far_outside_the_period_is_the_same_short_sweep(world: str) -> None:
    """Positions a million periods away give the same sweep: the motion's minimum image
    from the start's canonical image (x from 17 + 20,000,000 to 2 - 140: +5 again)."""
    past_seam = Box(0.5, 5, 0.75, 6)
    decoy = Box(10, 5, 11, 6)
    assert _sweep_run(17.0 + 20e6, 2.0 - 140, [past_seam, decoy]) == [(1, 2, 0.5)]


@pytest.mark.parametrize(
    ("end", "hit"),
    [
        (10.0, "ahead"),  # +W/2 stays +W/2
        (-10.0, "behind"),  # -W/2 stays -W/2
        (30.0, "behind"),  # 3W/2: the remainder's quotient 1.5 rounds to the even 2: -W/2
        (-30.0, "ahead"),  # -3W/2: the quotient -1.5 rounds to -2: +W/2
        (50.0, "ahead"),  # 5W/2: the quotient 2.5 rounds to 2: +W/2
    ],
)
def test_a_motion_of_half_a_period_goes_by_the_ieee_remainder(
    world: str, end: float, hit: str
) -> None:
    """A motion of exactly half a period is ambiguous on a torus; the sweep takes
    ``math.remainder(dx, W)``: half a period keeps the sign of ``dx`` minus the nearest
    even number of periods."""
    ahead = Box(5, 5, 6, 6)  # between x = 1 and x = 10, going right
    behind = Box(14, 5, 15, 6)  # between x = 0 and x = -10 (10), going left
    swept = _sweep_run(0.0, end, [ahead, behind])
    assert [other for _, other, _ in swept] == [2 if hit == "ahead" else 3]


# ---------------------------------------------------------------- refusals


def _snapshot(spatial: SpatialProcessor) -> tuple[Any, ...]:
    return (
        spatial.state_hash(), sorted(spatial.pairs),
        sorted((e, spatial.index[e]) for e in spatial.index), spatial.frame,
    )


@pytest.mark.parametrize("how", ["create", "resize", "replace", "height"])
def test_a_box_over_half_the_period_is_refused_naming_it(world: str, how: str) -> None:
    """A box wider (or higher) than half the period: ``process()`` raises ``ValueError``
    naming the entity, the AABB field and its value, in the read phase: the index, the
    pairs and the frame are as they were and no event is dispatched; once fixed, the next
    ``process()`` carries on with the right events."""
    spatial = SpatialProcessor(wrap=Box(0, 0, 20, 10))
    esper.add_processor(spatial)
    rec = Recorder(COLLISION_ENTER, COLLISION_EXIT)
    a = esper.create_entity(Position(18.0, 1.0), AABB(4, 2))
    b = esper.create_entity(Position(1.0, 1.0), AABB(2, 2))
    esper.process()
    assert rec.take(COLLISION_ENTER) == [(a, b)]
    mover = esper.create_entity(Position(5.0, 5.0), AABB(1, 1))
    esper.process()
    rec.take(COLLISION_ENTER)
    esper.component_for_entity(b, Position).x = 9.0  # a real move in the same frame
    field, value = ("height", 6) if how == "height" else ("width", 11)
    if how == "create":
        bad = esper.create_entity(Position(15.0, 1.0), AABB(11, 1))
    elif how == "resize" or how == "height":
        bad = mover
        setattr(esper.component_for_entity(mover, AABB), field, value)
    else:
        bad = mover
        esper.add_component(mover, AABB(11, 1))
    before = _snapshot(spatial)
    with pytest.raises(ValueError) as error:
        esper.process()
    message = str(error.value)
    assert f"entity {bad}: AABB {field} {value!r}" in message
    assert "half the period" in message
    assert _snapshot(spatial) == before
    assert rec.log == []
    spatial.index.check()
    if how == "create":
        esper.delete_entity(bad, immediate=True)
    else:
        setattr(esper.component_for_entity(mover, AABB), field, 10 if field == "width" else 5)
    esper.process()
    assert rec.take(COLLISION_EXIT) == [(a, b)]
    spatial.index.check()
    assert sorted(spatial.pairs) == sorted(
        (x, y) for x in esper._entities for y in esper._entities
        if x < y and torus_overlap(_mbox(x), _mbox(y), (0, 0, 20, 10))
    )


def _mbox(entity: int) -> MBox:
    pos = esper.component_for_entity(entity, Position)
    aabb = esper.component_for_entity(entity, AABB)
    x, y = Fraction(pos.x), Fraction(pos.y)
    return (x, y, x + Fraction(aabb.width), y + Fraction(aabb.height))


def test_a_box_with_no_image_in_the_period_is_refused_naming_the_coordinate(
    world: str,
) -> None:
    """A position whose distance from the period is past the float range has no image:
    refused naming the entity and the Position field, nothing changed."""
    spatial = SpatialProcessor(wrap=Box(-1.5e308, 0, -0.5e308, 10))
    esper.add_processor(spatial)
    entity = esper.create_entity(Position(-1.4e308, 1.0), AABB(1, 1))
    esper.process()
    before = _snapshot(spatial)
    esper.component_for_entity(entity, Position).x = 1.7e308
    with pytest.raises(ValueError, match=f"entity {entity}: Position x 1.7e\\+308 .*no image"):
        esper.process()
    assert _snapshot(spatial) == before


def test_a_watcher_radius_over_half_the_period_is_refused_naming_it(world: str) -> None:
    """A Proximity radius over half the smaller period: ``ValueError`` naming the watcher
    and its radius, before anything changes (no event, the neighbours as they were); a
    radius of exactly half is taken; once fixed the processor carries on."""
    spatial = SpatialProcessor(wrap=Box(0, 0, 40, 20), events=())
    proximity = ProximityProcessor(spatial)
    esper.add_processor(spatial)
    esper.add_processor(proximity)
    rec = Recorder(PROXIMITY_ENTER, PROXIMITY_EXIT)
    w1 = esper.create_entity(Position(1.0, 1.0), AABB(0, 0), Proximity(10))  # exactly half
    other = esper.create_entity(Position(35.0, 15.0), AABB(1, 1))
    esper.process()
    assert rec.take(PROXIMITY_ENTER) == [(w1, other)]  # (-5, -5) away through the seams
    w2 = esper.create_entity(Position(39.0, 19.0), AABB(0, 0), Proximity(10.5))
    esper.component_for_entity(other, Position).x = 20.0  # would make w1's exit
    with pytest.raises(ValueError, match=f"watcher entity {w2}: Proximity radius 10.5 is over"):
        esper.process()
    assert rec.log == []
    assert set(esper.component_for_entity(w1, Proximity).neighbors) == {other}
    esper.component_for_entity(w2, Proximity).radius = 10
    esper.component_for_entity(w1, Proximity).radius = 11.0
    with pytest.raises(ValueError, match=f"watcher entity {w1}: Proximity radius 11.0"):
        esper.process()
    esper.component_for_entity(w1, Proximity).radius = 10
    esper.process()
    assert rec.take(PROXIMITY_EXIT) == [(w1, other)]
    assert rec.take(PROXIMITY_ENTER) == [(w1, w2), (w2, w1)]  # (2, 2) apart across both seams


def test_the_exit_reach_is_measured_by_the_minimum_image_too(world: str) -> None:
    """A neighbour within ``exit_radius`` across the seams stays one (hysteresis by the
    minimum-image distance, not the plain one, which would put it 90 units away)."""
    spatial = SpatialProcessor(wrap=Box(0, 0, 100, 100), events=())
    esper.add_processor(spatial)
    esper.add_processor(ProximityProcessor(spatial))
    rec = Recorder(PROXIMITY_ENTER, PROXIMITY_EXIT)
    watcher = esper.create_entity(Position(1.0, 50.0), AABB(0, 0), Proximity(3, exit_radius=6))
    other = esper.create_entity(Position(97.0, 50.0), AABB(1, 1))  # 3 away across the seam
    esper.process()
    assert rec.take(PROXIMITY_ENTER) == [(watcher, other)]
    pos = esper.component_for_entity(other, Position)
    # 5 away, then 6 (the exit reach is closed), then 7: only the last leaves
    for x, stays in ((95.0, True), (-6.0, True), (93.0, False)):
        pos.x = x
        esper.process()
        assert rec.take(PROXIMITY_EXIT) == ([] if stays else [(watcher, other)])
    assert rec.log == []


# The orders in which two boxes over half the period are stored in one frame: into a member
# of the members table (a float) or on the dirty list's path (an int leaves the table), and
# an entity created with one; the first stored is the one named, table or not.
REFUSALS = {
    "table first": ([("a", "width", 11.0), ("b", "width", 12)], "a", "width 11.0"),
    "list first": ([("b", "width", 12), ("a", "width", 11.0)], "b", "width 12"),
    "table, created": ([("a", "height", 6.0), ("new", "width", 13.0)], "a", "height 6.0"),
    "table, table": ([("b", "height", 5.5), ("a", "width", 11.0)], "b", "height 5.5"),
    "no image": ([("far", "x", 1e299)], "far", "past the float range"),
}


def _refusals(table: bool, stores: list[tuple[str, str, float]]) -> list[Any]:
    """A torus world whose members move each frame, the frame of ``stores`` (each refused,
    or not), then the frames after each refused box is fixed: every frame's error, events,
    ``moved``, pairs and index, with the members table in use or not."""
    log: list[Any] = []
    with fresh_world("refusals"):
        spatial = SpatialProcessor(wrap=Box(0, 0, 20, 10))
        if not table:
            spatial._table = None
        far = SpatialProcessor(wrap=Box(-1.7976931348623157e308, 0, -1.7e308, 10))
        rec = Recorder(COLLISION_ENTER, COLLISION_EXIT)
        esper.add_processor(spatial)
        names = {
            "a": esper.create_entity(Position(18.0, 1.0), AABB(4.0, 2.0)),
            "b": esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0)),
            "c": esper.create_entity(Position(5.0, 5.0), AABB(1.0, 1.0)),
        }
        if stores[0][0] == "far":  # a period at the float range's end: another world
            esper.remove_processor(SpatialProcessor)
            esper.add_processor(far)
            if not table:
                far._table = None
            names["far"] = names["c"]
            spatial = far
        esper.process()
        for frame in range(4):
            mover = names["b" if "far" in names else "c"]
            esper.component_for_entity(mover, Position).y += 0.5  # a real move beside them
            if frame == 1:
                for who, field, value in stores:
                    if who == "new":
                        names["new"] = esper.create_entity(Position(3.0, 3.0), AABB(value, 1.0))
                        continue
                    comp = esper.component_for_entity(
                        names[who], Position if field in "xy" else AABB
                    )
                    setattr(comp, field, value)
            before = _snapshot(spatial)
            try:
                esper.process()
                error = None
            except ValueError as exc:
                error = str(exc)
                assert _snapshot(spatial) == before  # nothing changed
                for who, field, _ in stores:  # fixed for the next frame
                    comp = esper.component_for_entity(
                        names[who], Position if field in "xy" else AABB
                    )
                    setattr(comp, field, 1.0)
            spatial.index.check()
            log.append((error, rec.log[:], sorted(spatial.moved), sorted(spatial.pairs),
                        sorted((e, tuple(spatial.index[e])) for e in spatial.index)))
            rec.log.clear()
        log.append(names)
    return log


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_is_the_same_with_the_members_table_and_without(case: str) -> None:
    """On a torus the members table's read checks its new boxes against the period: a box
    over half the period (or with no image) stored into a member of the table is refused
    by ``process()`` as on the dirty list's path, naming the entity, the field and the
    value, the first stored of two, nothing changed; and every frame, the refused one and
    those after it are the same, table or not (before, a torus had no table)."""
    stores, who, text = REFUSALS[case]
    with_table, without = _refusals(True, stores), _refusals(False, stores)
    assert with_table == without
    names = with_table[-1]
    error = with_table[1][0]
    assert error is not None and error.startswith(f"entity {names[who]}: ") and text in error
    assert [frame[0] for frame in with_table[:-1]].count(None) == 3
    from ecs_spatial import _members

    if _members._MembersTable is not None:  # the torus processor keeps its table
        with fresh_world("kept"):
            spatial = SpatialProcessor(wrap=Box(0, 0, 20, 10))
            esper.add_processor(spatial)
            entity = esper.create_entity(Position(1.0, 1.0), AABB(2.0, 2.0))
            esper.process()
            assert spatial._table is not None and spatial._table.bound(entity)


# ---------------------------------------------------------------- state


def test_the_period_is_read_only_and_kept_by_copies(world: str) -> None:
    """``wrap`` is the index's period, None for a plain world, read-only; a deep copy and a
    pickle keep it, as the index does; a torus processor keeps the members table, as a
    plain one does (where there is one: its read checks the period), copies too."""
    plain = SpatialProcessor()
    assert plain.wrap is None
    spatial = SpatialProcessor(wrap=(0, 0, 30, 20))
    assert spatial.wrap == Box(0, 0, 30, 20) == spatial.index.wrap
    assert spatial.index.bounds == Box(0, 0, 30, 20)
    with pytest.raises(AttributeError):
        spatial.wrap = None  # type: ignore[misc]
    with pytest.raises(ValueError, match="wrap must be a box"):
        SpatialProcessor(wrap=(0, 0, 0, 10))
    from ecs_spatial import _members

    assert (plain._table is None) == (spatial._table is None) == (_members._MembersTable is None)
    for copied in (copy.deepcopy(spatial), pickle.loads(pickle.dumps(spatial))):
        assert copied.wrap == Box(0, 0, 30, 20)
        assert (copied._table is None) == (_members._MembersTable is None)


def _drive(frame: int) -> None:
    """The same moves in any world built by ``_build``: across the seams, far away."""
    for entity in sorted(esper._entities):
        pos = esper.component_for_entity(entity, Position)
        step = (entity * 7 + frame * 3) % 11 - 5
        pos.x += step
        if (entity + frame) % 4 == 0:
            pos.x -= 30.0  # by hand across the seam
        pos.y += (entity + frame) % 5 - 2


def _build() -> tuple[SpatialProcessor, Recorder]:
    spatial = SpatialProcessor(wrap=Box(0, 0, 30, 20))
    esper.add_processor(spatial)
    esper.add_processor(CullingProcessor(spatial, Box(25, 15, 34, 23)))
    esper.add_processor(ProximityProcessor(spatial))
    for i in range(24):
        extra = [Proximity(4)] if i % 5 == 0 else []
        esper.create_entity(Position(i * 3.0 - 20, i * 2.0), AABB(i % 4, i % 3 + 1), *extra)
    return spatial, _recorder()


def _recorder() -> Recorder:
    return Recorder(
        COLLISION_ENTER, COLLISION_EXIT, VIEW_ENTER, VIEW_EXIT, PROXIMITY_ENTER, PROXIMITY_EXIT
    )


def test_a_restored_torus_world_gives_the_same_next_events(world: str) -> None:
    """A torus world saved (``save_world``, pickled) mid-run and restored elsewhere gives,
    frame by frame, the events and pairs of the world that ran on."""
    from ecs_spatial.saving import restore_world, save_world

    spatial, rec = _build()
    for frame in range(5):
        _drive(frame)
        esper.process()
    saved = pickle.dumps(save_world())
    with fresh_world("torus-restored"):
        restore_world(pickle.loads(saved))
        (copied,) = [p for p in esper._processors if isinstance(p, SpatialProcessor)]
        assert copied.wrap == Box(0, 0, 30, 20)
        rec2 = _recorder()
        logs = []
        for frame in range(5, 15):
            _drive(frame)
            esper.process()
            logs.append((sorted(copied.pairs), rec2.log))
            rec2.log = []
    esper.switch_world(world)
    for frame in range(5, 15):
        rec.log = []
        _drive(frame)
        esper.process()
        assert (sorted(spatial.pairs), rec.log) == logs[frame - 5]
    assert any(log for _, log in logs)


def test_the_debug_overlay_draws_a_box_across_a_seam_as_its_pieces() -> None:
    """The overlay's cut of a canonical box at the seams it crosses: a box inside the
    period is itself; one across the right seam is two pieces, one across both four, the
    parts past a seam moved back by a period."""
    import pyglet

    pyglet.options["headless"] = True
    from ecs_spatial._wrap import period_of
    from ecs_spatial.pyglet_debug import _pieces

    period = period_of(Box(-5, 3, 15, 13))
    assert _pieces(0, 4, 2, 5, period) == [(0, 4, 2, 5)]
    assert _pieces(12, 4, 17, 5, period) == [(12, 4, 15, 5), (-5, 4, -3, 5)]
    assert _pieces(12, 10, 17, 15, period) == [
        (12, 10, 15, 13), (12, 3, 15, 5), (-5, 10, -3, 13), (-5, 3, -3, 5),
    ]
