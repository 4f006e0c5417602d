"""The tax of ecs_spatial's components on the user's own loop (issue 27's "Tax on the user's
loop"): ``p.x = p.x + v.x; p.y = p.y + v.y`` over N entities inside an esper processor,
with each kind of Position, against the same loop over plain ``__slots__`` components.

Variants (each an esper world of its own, N entities with a Position and a Velocity):

- ``plain``: a plain ``__slots__`` Position, the baseline;
- ``compiled``: ``components.Position`` of ``_ccomponents`` (member descriptors for reading,
  its own ``__setattr__`` that stores and marks), tracked and armed, re-armed after each
  frame as the SpatialProcessor does (the realistic case: every entity reports once);
- ``compiled+processor``: the same with a real SpatialProcessor (every entity also has an
  AABB) running after the movement each frame, only the movement timed;
- ``reference``: ``components.PyPosition`` (property setters), tracked and armed;
- ``getset``: a prototype C type whose fields are getset descriptors (a C getter and a C
  setter that stores and marks), compiled from the source below, tracked and armed;
- ``untracked-compiled``: the compiled type nobody tracks (no report at all);
- ``members-no-flag``: a prototype C type with member descriptors only (no dirty flag: the
  store specialises as a plain slot's does);
- ``setattro-floor``: the same with a ``tp_setattro`` that only calls
  ``PyObject_GenericSetAttr``: the least any type that sees its stores can cost, since
  CPython does not specialise a store to a type with its own ``tp_setattro``.

And the alternative with no dirty flag at all (the user's loop is then the plain one): the
cost it moves into the processor, a read of every tracked component each frame
(``_cmembers.read_boxes`` over all members, comparing each box with the last), at N static.

Wall clock: every variant's frame, interleaved frame by frame with the order rotating,
``--repeats`` rounds of ``--frames`` frames, the minimum per frame. ``--callgrind VARIANT``
instead runs one variant for ``--frames`` frames, for ``valgrind --tool=callgrind`` (one
frame's instructions are the difference of two runs' totals divided by the difference of
their frames).

    python -m tools.component_tax --n 10000
    valgrind --tool=callgrind python -m tools.component_tax --callgrind compiled --frames 6

The callgrind figure of a variant's loop: (total at 6 frames - at 1 frame) - (the same with
``--no-movement``), over 5 frames.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import esper  # noqa: E402

from ecs_spatial import components  # noqa: E402
from ecs_spatial.components import rearm, track  # noqa: E402
from ecs_spatial.spatial_processor import SpatialProcessor  # noqa: E402

GETSET_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
typedef struct { PyObject_HEAD PyObject *owner, *sink, *eid, *x, *y; } P;
static PyObject *s_append;
static int mark(P *p) {
    PyObject *sink = p->sink;
    if (sink == Py_None) return 0;
    Py_INCREF(Py_None); p->sink = Py_None;
    int r;
    if (PyList_CheckExact(sink)) r = PyList_Append(sink, p->eid);
    else {
        PyObject *o = PyObject_CallMethodOneArg(sink, s_append, p->eid);
        r = o ? 0 : -1;
        Py_XDECREF(o);
    }
    Py_DECREF(sink);
    return r;
}
#define FIELD(f) \
  static PyObject *get_##f(PyObject *s, void *c) { \
      (void)c; PyObject *v = ((P *)s)->f; Py_INCREF(v); return v; } \
  static int set_##f(PyObject *s, PyObject *v, void *c) { (void)c; P *p = (P *)s; \
      if (v == NULL) { PyErr_SetString(PyExc_AttributeError, "no"); return -1; } \
      PyObject *o = p->f; Py_INCREF(v); p->f = v; int r = mark(p); Py_XDECREF(o); return r; }
FIELD(x)
FIELD(y)
static PyGetSetDef getset[] = {
    {"x", get_x, set_x, NULL, NULL}, {"y", get_y, set_y, NULL, NULL}, {NULL}};
static PyMemberDef members[] = {
    {"_x", T_OBJECT_EX, offsetof(P, x), 0, NULL}, {"_y", T_OBJECT_EX, offsetof(P, y), 0, NULL},
    {"_owner", T_OBJECT_EX, offsetof(P, owner), 0, NULL},
    {"_sink", T_OBJECT_EX, offsetof(P, sink), 0, NULL},
    {"_eid", T_OBJECT_EX, offsetof(P, eid), 0, NULL}, {NULL}};
static int init(PyObject *s, PyObject *a, PyObject *k) {
    (void)k; P *p = (P *)s; PyObject *x, *y;
    if (!PyArg_ParseTuple(a, "OO", &x, &y)) return -1;
    Py_INCREF(x); Py_INCREF(y); p->x = x; p->y = y;
    Py_INCREF(Py_None); p->owner = Py_None; Py_INCREF(Py_None); p->sink = Py_None;
    p->eid = PyLong_FromLong(0);
    return 0;
}
static void dealloc(PyObject *s) { P *p = (P *)s; Py_XDECREF(p->x); Py_XDECREF(p->y);
    Py_XDECREF(p->owner); Py_XDECREF(p->sink); Py_XDECREF(p->eid); Py_TYPE(s)->tp_free(s); }
static PyTypeObject T = {PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "getset_proto.Position",
    .tp_basicsize = sizeof(P), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = PyType_GenericNew,
    .tp_init = init, .tp_dealloc = dealloc, .tp_getset = getset, .tp_members = members};
static PyMemberDef public[] = {
    {"x", T_OBJECT_EX, offsetof(P, x), 0, NULL}, {"y", T_OBJECT_EX, offsetof(P, y), 0, NULL},
    {NULL}};
static int generic(PyObject *s, PyObject *n, PyObject *v) {
    return PyObject_GenericSetAttr(s, n, v); }
static PyTypeObject M = {PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "getset_proto.Members",
    .tp_basicsize = sizeof(P), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = PyType_GenericNew,
    .tp_init = init, .tp_dealloc = dealloc, .tp_members = public};
static PyTypeObject S = {PyVarObject_HEAD_INIT(NULL, 0) .tp_name = "getset_proto.Setattro",
    .tp_basicsize = sizeof(P), .tp_flags = Py_TPFLAGS_DEFAULT, .tp_new = PyType_GenericNew,
    .tp_init = init, .tp_dealloc = dealloc, .tp_members = public, .tp_setattro = generic};
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "getset_proto", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_getset_proto(void) {
    s_append = PyUnicode_InternFromString("append");
    if (PyType_Ready(&T) < 0 || PyType_Ready(&M) < 0 || PyType_Ready(&S) < 0) return NULL;
    PyObject *mod = PyModule_Create(&m);
    Py_INCREF(&T); PyModule_AddObject(mod, "Position", (PyObject *)&T);
    Py_INCREF(&M); PyModule_AddObject(mod, "Members", (PyObject *)&M);
    Py_INCREF(&S); PyModule_AddObject(mod, "Setattro", (PyObject *)&S);
    return mod;
}
"""


def prototype(name: str) -> type:
    """A prototype type (``Position``: getset descriptors that mark; ``Members``: member
    descriptors only, no mark; ``Setattro``: the same with a ``tp_setattro`` that only
    calls the generic one), compiled once into a temporary directory."""
    if name in _PROTOTYPES:
        return _PROTOTYPES[name]
    build = Path(tempfile.mkdtemp(prefix="getset-proto-"))
    (build / "getset_proto.c").write_text(GETSET_SOURCE)
    target = build / f"getset_proto{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", f"-I{sysconfig.get_paths()['include']}",
                    str(build / "getset_proto.c"), "-o", str(target)], check=True)
    sys.path.insert(0, str(build))
    import getset_proto  # type: ignore[import-not-found]

    _PROTOTYPES.update(
        {kind: getattr(getset_proto, kind) for kind in ("Position", "Members", "Setattro")}
    )
    return _PROTOTYPES[name]


_PROTOTYPES: dict[str, type] = {}


class PlainPosition:
    __slots__ = ("x", "y")

    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y


class Velocity:
    __slots__ = ("x", "y")

    def __init__(self, x: float, y: float) -> None:
        self.x = x
        self.y = y


class Movement(esper.Processor):
    """The user's loop."""

    def __init__(self, position: type) -> None:
        self.position = position

    def process(self, *args: Any, **kwargs: Any) -> None:
        p: Any
        for _, (p, v) in esper.get_components(self.position, Velocity):
            p.x = p.x + v.x
            p.y = p.y + v.y


class Variant:
    """One world: N entities, the movement processor, and the re-arming the processor does."""

    def __init__(self, name: str, position: type, n: int, *, tracked: bool,
                 processor: bool = False) -> None:
        self.name = name
        esper.switch_world(name)
        self.movement = Movement(position)
        self.spatial = SpatialProcessor() if processor else None
        self.sink: list[int] = []
        self.comps: list[tuple[Any, int]] = []
        for i in range(n):
            pos = position(float(i % 1000), float(i // 1000))
            parts: list[Any] = [pos, Velocity(0.5, -0.25)]
            if processor:
                parts.append(components.AABB(1.0, 1.0))
            entity = esper.create_entity(*parts)
            if tracked and not processor:
                track(pos, self.sink, entity)
                rearm(pos, self.sink, entity)
                self.comps.append((pos, entity))
        if self.spatial is not None:
            esper.add_processor(self.spatial)
            esper.process()  # the first frame tracks and arms every entity
        self.movement.process()  # esper's caches warm

    def frame(self) -> float:
        """One frame: the timed movement, then the untimed re-arm (or processor frame)."""
        esper.switch_world(self.name)
        start = time.perf_counter()
        self.movement.process()
        spent = time.perf_counter() - start
        if self.spatial is not None:
            esper.process()
        else:
            sink = self.sink
            for pos, entity in self.comps:
                rearm(pos, sink, entity)
            sink.clear()
        return spent


def variants(n: int, only: str | None = None) -> list[Variant]:
    twins = components._twins
    assert twins is not None
    makers: dict[str, Callable[[], Variant]] = {
        "plain": lambda: Variant("plain", PlainPosition, n, tracked=False),
        "compiled": lambda: Variant("compiled", twins.Position, n, tracked=True),
        "compiled+processor": lambda: Variant("compiled+processor", components.Position, n,
                                              tracked=True, processor=True),
        "reference": lambda: Variant("reference", components.PyPosition, n, tracked=True),
        "getset": lambda: Variant("getset", prototype("Position"), n, tracked=True),
        "members-no-flag": lambda: Variant("members-no-flag", prototype("Members"), n,
                                           tracked=False),
        "setattro-floor": lambda: Variant("setattro-floor", prototype("Setattro"), n,
                                          tracked=False),
        "untracked-compiled": lambda: Variant("untracked-compiled",
                                              twins.Position, n, tracked=False),
    }
    return [make() for name, make in makers.items() if only in (None, name)]


def no_dirty_flag(n: int, repeats: int) -> float:
    """Seconds a frame for the processor to read and compare every one of n static members
    (the compiled read loop over all of them): what dropping the dirty flag costs it."""
    from ecs_spatial import _cmembers, _members

    members: dict[int, list[Any]] = {}
    for e in range(n):
        pos = components.Position(float(e % 1000), float(e // 1000))
        aabb = components.AABB(1.0, 1.0)
        x0, y0 = pos.x + 0.0, pos.y + 0.0
        members[e] = [pos, aabb, (x0, y0, x0 + 1.0, y0 + 1.0, e), e]
    todo = list(members)
    _members.read_boxes([], members, [], [], None, None)  # configured
    best = float("inf")
    for _ in range(repeats):
        changed: list[list[Any]] = []
        start = time.perf_counter()
        _cmembers.read_boxes(todo, members, [], changed)
        best = min(best, time.perf_counter() - start)
        assert not changed
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--callgrind", metavar="VARIANT", help="run one variant's frames only")
    parser.add_argument("--no-movement", action="store_true",
                        help="with --callgrind: the frames without the user's loop (the "
                        "re-arming alone, to subtract)")
    args = parser.parse_args(argv)
    if not components.NATIVE:
        parser.error("the compiled components are not in use (build the core; no "
                     "ECS_SPATIAL_PURE=1)")
    if args.callgrind:
        (variant,) = variants(args.n, args.callgrind)
        if args.no_movement:
            variant.movement.process = lambda *a, **k: None  # type: ignore[method-assign]
        for _ in range(args.frames):
            variant.frame()
        return 0
    worlds = variants(args.n)
    best = {v.name: float("inf") for v in worlds}
    for _ in range(args.repeats):
        for frame in range(args.frames):
            rotated = worlds[frame % len(worlds):] + worlds[: frame % len(worlds)]
            for v in rotated:
                best[v.name] = min(best[v.name], v.frame())
    plain = best["plain"]
    print(f"N = {args.n}, min of {args.repeats} x {args.frames} interleaved frames "
          f"(Python {sys.version.split()[0]})")
    for name, spent in best.items():
        print(f"  {name:20s} {spent * 1e3:7.3f} ms  {spent / args.n * 1e9:6.1f} ns/entity  "
              f"{spent / plain:5.2f} x plain")
    for n in (args.n, 200_000):
        spent = no_dirty_flag(n, args.repeats)
        print(f"  no dirty flag: reading all {n} static members {spent * 1e3:7.3f} ms a frame "
              f"({spent / n * 1e9:5.1f} ns each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
