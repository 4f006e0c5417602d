/* quadtree.c: the Python type: its method table (the reference's signatures and docstrings),
 * the module's functions and init, the reference's helpers it imports.
 *
 * The twin of ecs_spatial/quadtree.py.
 *
 * The compiled index is these units, each the twin of the reference module of its name (the
 * reference's stem without its leading underscore), each a .c with its .h:
 *
 *   geometry       geometry.py       the float rules: py_max, midpoint, ulp, hypot, the casts'
 *   growth         _growth.py        the root's growth toward a box outside it
 *   snapshots      _snapshots.py     straddler snapshots for the per-entity pair search
 *   records        _records.py       reading ids, boxes, points, buffers, records, arguments
 *   wrap           _wrap.py          the period of a wrapped tree, canonical boxes, images
 *   tree_storage   _tree_storage.py  slots, the id table, the container protocol, lifetime
 *   tree_nodes     _tree_nodes.py    place, sink, split, merge, relocate, rebuild, compact
 *   tree_updates   _tree_updates.py  insert*, move*, remove, discard, clear
 *   tree_queries   _tree_queries.py  query, query_point, query_radius(_many), nodes, depth
 *   tree_nearest   _tree_nearest.py  nearest
 *   tree_casts     _tree_casts.py    raycast, cast_box, their _first forms
 *   tree_pairs     _tree_pairs.py    find_all_intersections(_array), *_for, query_entity
 *   tree_state     _tree_state.py    pickles, copies, state_hash
 *   tree_check     _tree_check.py    check()
 *   quadtree       quadtree.py       this: the type, the module
 *
 * and the C-only ones, with no twin (the reference uses Python's objects and builtins):
 *
 *   tree.h         the layout (Node, Tree and their invariants), QT_API, the rules on Python
 *                  running inside the core
 *   containers.c, containers.h  I64Buf, NodeStack, IdSet, the sorts, the keyed id hash, the
 *                  one open-addressing probe the id table, the snapshot table and IdSet share
 *   floats.h       header-only: the float rules _cneighbours.c and _cmembers.c share with
 *                  the index (hypot, gap, midpoint, wrap_coord, canonical_box), each once
 *   constants.h    GENERATED from the reference (scripts/gen_core_headers.py)
 *   docstrings.h   GENERATED: the reference's signatures and docstrings
 *
 * ecs_spatial/_cquadtree.c includes every unit's .c into one translation unit (QT_API is
 * static there, so every call can be inlined); tests/test_house.py compiles each alone.
 */
#include "quadtree.h"
#include "containers.h"
#include "geometry.h"
#include "records.h"
#include "tree_storage.h"
#include "tree_updates.h"
#include "tree_queries.h"
#include "tree_nearest.h"
#include "tree_casts.h"
#include "tree_pairs.h"
#include "tree_state.h"
#include "tree_check.h"
#include "docstrings.h"

/* The reference's helpers, taken from its modules when this one is imported, so that every
 * error message has one text, the reference's. Each is a strong reference owned by the module
 * for the interpreter's lifetime (single-phase init, m_size = -1). */
QT_API PyObject *BoxType;       /* geometry.Box, a tuple subclass */
QT_API PyObject *NodeInfoType;  /* quadtree.NodeInfo */
QT_API PyObject *ref_coords;    /* _records.coords(box, entity=None) -> 4 floats, or its error */
QT_API PyObject *ref_entity_id; /* _records.entity_id(entity) -> int, or its TypeError */
QT_API PyObject *ref_lookup_id; /* _records.lookup_id(entity) -> int or None */
QT_API PyObject *ref_missing;   /* _records.missing(entity) -> the KeyError of a failed lookup */
QT_API PyObject *ref_out_of_range; /* _records.out_of_range(int) -> the OverflowError of an id */
QT_API PyObject *ref_tree;      /* quadtree.QuadTree: its methods' signatures are this class's */
QT_API PyObject *ref_point;     /* _records.point(x, y) -> 2 floats, or its error */
QT_API PyObject *ref_many_point;  /* _tree_queries.many_point(item, i) -> 2 floats, or its error */
QT_API PyObject *ref_many_radius; /* _tree_queries.many_radius(value, i) -> float, or its error */
QT_API PyObject *ref_to_float;  /* geometry.to_float(value, what) */
QT_API PyObject *ref_motion;    /* geometry.motion_floats(dx, dy) -> 2 finite floats, or its error */
QT_API PyObject *builtin_zip;   /* builtins.zip */
QT_API PyObject *array_array;   /* array.array */
QT_API PyObject *copyreg_newobj; /* copyreg.__newobj__(cls) -> cls.__new__(cls) */
QT_API PyObject *ref_busy;       /* _tree_storage.BUSY: what guard() raises while busy */
/* Pickles: _tree_state.STATE_FORMAT, and the functions that read a state and carry a subclass's
 * own attributes (see tree_state.c) */
QT_API PyObject *ref_state_format;

/* Wrapped trees (wrap.c): the reference's refusals and its cast shifts. */
QT_API PyObject *ref_period_of;
QT_API PyObject *ref_canonical;
QT_API PyObject *ref_wrap_point;
QT_API PyObject *ref_cast_shifts;
QT_API PyObject *ref_radius_over_half;
QT_API PyObject *ref_read_wrap;

QT_API PyObject *ref_read_state;

QT_API PyObject *ref_own_state;

QT_API PyObject *ref_restore_own_state;

QT_API PyObject *ref_copy_own_state;

/* The methods of one argument or none, their functions above taking it as METH_O and
 * METH_NOARGS do: bound by the reference's signature (keywords included, its errors). */
#define ONE_ARGUMENT(FUNC, NAME, PARAM)                                                      \
    static PyObject *FUNC##_bound(Tree *t, PyObject *const *args, Py_ssize_t nargs,          \
                                  PyObject *kwnames)                                         \
    {                                                                                        \
        static const Params params = {NAME, 1, 1, 1, {PARAM}};                               \
        PyObject *buf[MAX_PARAMS];                                                           \
        PyObject *const *a = arguments(&params, args, nargs, kwnames, buf);                  \
        return a == NULL ? NULL : FUNC(t, a[0]);                                             \
    }

#define NO_ARGUMENT(FUNC, NAME)                                                              \
    static PyObject *FUNC##_bound(Tree *t, PyObject *const *args, Py_ssize_t nargs,          \
                                  PyObject *kwnames)                                         \
    {                                                                                        \
        return no_arguments(NAME, args, nargs, kwnames) < 0 ? NULL : FUNC(t, NULL);          \
    }

ONE_ARGUMENT(Tree_remove, "remove", "entity")

ONE_ARGUMENT(Tree_discard, "discard", "entity")

ONE_ARGUMENT(Tree_query, "query", "box")

ONE_ARGUMENT(Tree_query_entity, "query_entity", "entity")

ONE_ARGUMENT(Tree_find_intersections_for, "find_intersections_for", "entities")

ONE_ARGUMENT(Tree_insert_records, "insert_records", "records")

ONE_ARGUMENT(Tree_move_records, "move_records", "records")

ONE_ARGUMENT(Tree_deepcopy, "__deepcopy__", "memo")

ONE_ARGUMENT(Tree_setstate, "__setstate__", "state")

NO_ARGUMENT(Tree_clear, "clear")

NO_ARGUMENT(Tree_find_all_intersections, "find_all_intersections")

NO_ARGUMENT(Tree_find_all_intersections_array, "find_all_intersections_array")

NO_ARGUMENT(Tree_state_hash, "state_hash")

NO_ARGUMENT(Tree_depth, "depth")

NO_ARGUMENT(Tree_check, "check")

NO_ARGUMENT(Tree_copy, "__copy__")

NO_ARGUMENT(Tree_reduce, "__reduce__")

NO_ARGUMENT(Tree_getstate, "__getstate__")

/* Every method takes METH_FASTCALL | METH_KEYWORDS: see "Arguments" in records.h. */
#define BOUND(func) (PyCFunction)(void (*)(void))(func), METH_FASTCALL | METH_KEYWORDS

/* The docs: the reference's signatures and docstrings, from the generated _cquadtree_docs.h. */
static PyMethodDef Tree_methods[] = {
    {"insert", BOUND(Tree_insert), QT_DOC_insert},
    {"insert_many", BOUND(Tree_insert_many), QT_DOC_insert_many},
    {"move", BOUND(Tree_move), QT_DOC_move},
    {"move_many", BOUND(Tree_move_many), QT_DOC_move_many},
    {"remove", BOUND(Tree_remove_bound), QT_DOC_remove},
    {"discard", BOUND(Tree_discard_bound), QT_DOC_discard},
    {"clear", BOUND(Tree_clear_bound), QT_DOC_clear},
    {"get", BOUND(Tree_get), QT_DOC_get},
    {"query", BOUND(Tree_query_bound), QT_DOC_query},
    {"query_point", BOUND(Tree_query_point), QT_DOC_query_point},
    {"query_radius", BOUND(Tree_query_radius), QT_DOC_query_radius},
    {"query_radius_many", BOUND(Tree_query_radius_many), QT_DOC_query_radius_many},
    {"nearest", BOUND(Tree_nearest), QT_DOC_nearest},
    {"raycast", BOUND(Tree_raycast), QT_DOC_raycast},
    {"raycast_first", BOUND(Tree_raycast_first), QT_DOC_raycast_first},
    {"cast_box", BOUND(Tree_cast_box), QT_DOC_cast_box},
    {"cast_box_first", BOUND(Tree_cast_box_first), QT_DOC_cast_box_first},
    {"query_entity", BOUND(Tree_query_entity_bound), QT_DOC_query_entity},
    {"find_intersections_for", BOUND(Tree_find_intersections_for_bound),
     QT_DOC_find_intersections_for},
    {"find_all_intersections", BOUND(Tree_find_all_intersections_bound),
     QT_DOC_find_all_intersections},
    {"find_all_intersections_array", BOUND(Tree_find_all_intersections_array_bound),
     QT_DOC_find_all_intersections_array},
    {"state_hash", BOUND(Tree_state_hash_bound), QT_DOC_state_hash},
    {"nodes", BOUND(Tree_nodes), QT_DOC_nodes},
    {"depth", BOUND(Tree_depth_bound), QT_DOC_depth},
    {"check", BOUND(Tree_check_bound), QT_DOC_check},
    {"insert_records", BOUND(Tree_insert_records_bound), QT_DOC_insert_records},
    {"move_records", BOUND(Tree_move_records_bound), QT_DOC_move_records},
    {"__copy__", BOUND(Tree_copy_bound), QT_DOC___copy__},
    {"__deepcopy__", BOUND(Tree_deepcopy_bound), QT_DOC___deepcopy__},
    {"__reduce__", BOUND(Tree_reduce_bound), QT_DOC___reduce__},
    {"__getstate__", BOUND(Tree_getstate_bound), QT_DOC___getstate__},
    {"__setstate__", BOUND(Tree_setstate_bound), QT_DOC___setstate__},
    {"__sizeof__", (PyCFunction)Tree_sizeof, METH_NOARGS, QT_DOC___sizeof__},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Tree_getset[] = {
    {"bounds", (getter)Tree_get_bounds, NULL, QT_DOC_bounds, NULL},
    {"threshold", (getter)Tree_get_threshold, NULL, QT_DOC_threshold, NULL},
    {"wrap", (getter)Tree_get_wrap, NULL, QT_DOC_wrap, NULL},
    {"max_depth", (getter)Tree_get_max_depth, NULL, QT_DOC_max_depth, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods Tree_as_sequence = {
    .sq_length = (lenfunc)Tree_len,
    .sq_contains = (objobjproc)Tree_contains,
};

static PyMappingMethods Tree_as_mapping = {
    .mp_length = (lenfunc)Tree_len,
    .mp_subscript = (binaryfunc)Tree_getitem,
};

static PyTypeObject TreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ecs_spatial._cquadtree.QuadTree",
    .tp_basicsize = sizeof(Tree),
    .tp_itemsize = 0,
    .tp_dealloc = (destructor)Tree_dealloc,
    .tp_repr = (reprfunc)Tree_repr,
    .tp_as_sequence = &Tree_as_sequence,
    .tp_as_mapping = &Tree_as_mapping,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = QT_DOC_CLASS,
    .tp_iter = (getiterfunc)Tree_iter,
    .tp_methods = Tree_methods,
    .tp_getset = Tree_getset,
    .tp_init = (initproc)Tree_init,
    .tp_new = Tree_new,
};

static PyMethodDef module_methods[] = {
    {"_hypot", mod_hypot, METH_VARARGS, "math.hypot(dx, dy), as the index computes it."},
    {"_segment_entry", mod_segment_entry, METH_VARARGS,
     "geometry.segment_entry(box, x0, y0, x1, y1), as the index computes it."},
    {"_sweep_time", mod_sweep_time, METH_VARARGS,
     "geometry.floats_sweep_time(box, dx, dy, other), as the index computes it."},
    {"_midpoint", mod_midpoint, METH_VARARGS, "geometry.midpoint(a, b), as the index computes it."},
    {"_ulp", mod_ulp, METH_VARARGS, "math.ulp(x), as the index computes it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cquadtree_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._cquadtree",
    .m_doc = "The compiled core of ecs_spatial: a twin of ecs_spatial.quadtree.QuadTree.",
    .m_size = -1,
    .m_methods = module_methods,
};

/* Take the reference's helpers (see the top of this file). 0, or -1 with ImportError or
 * AttributeError: then the package falls back to the reference (ecs_spatial.index). */
static int
import_helpers(void)
{
    static const struct {
        const char *module, *name;
        PyObject **slot;
    } wanted[] = {
        {"ecs_spatial.geometry", "Box", &BoxType},
        {"ecs_spatial.geometry", "to_float", &ref_to_float},
        {"ecs_spatial.geometry", "motion_floats", &ref_motion},
        {"ecs_spatial._tree_queries", "NodeInfo", &NodeInfoType},
        {"ecs_spatial._records", "coords", &ref_coords},
        {"ecs_spatial._records", "entity_id", &ref_entity_id},
        {"ecs_spatial._records", "lookup_id", &ref_lookup_id},
        {"ecs_spatial._records", "missing", &ref_missing},
        {"ecs_spatial._records", "out_of_range", &ref_out_of_range},
        {"ecs_spatial.quadtree", "QuadTree", &ref_tree},
        {"ecs_spatial._records", "point", &ref_point},
        {"ecs_spatial._tree_queries", "many_point", &ref_many_point},
        {"ecs_spatial._tree_queries", "many_radius", &ref_many_radius},
        {"ecs_spatial._tree_state", "STATE_FORMAT", &ref_state_format},
        {"ecs_spatial._tree_storage", "BUSY", &ref_busy},
        {"ecs_spatial._tree_state", "read_state", &ref_read_state},
        {"ecs_spatial._tree_state", "own_state", &ref_own_state},
        {"ecs_spatial._tree_state", "restore_own_state", &ref_restore_own_state},
        {"ecs_spatial._tree_state", "copy_own_state", &ref_copy_own_state},
        {"ecs_spatial._wrap", "period_of", &ref_period_of},
        {"ecs_spatial._wrap", "canonical", &ref_canonical},
        {"ecs_spatial._wrap", "wrap_point", &ref_wrap_point},
        {"ecs_spatial._wrap", "cast_shifts", &ref_cast_shifts},
        {"ecs_spatial._wrap", "RADIUS_OVER_HALF", &ref_radius_over_half},
        {"ecs_spatial._tree_state", "read_wrap", &ref_read_wrap},
        {"copyreg", "__newobj__", &copyreg_newobj},
        {"builtins", "zip", &builtin_zip},
        {"array", "array", &array_array},
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
        if (*wanted[i].slot != NULL) {
            continue; /* a second import of the module (a new interpreter state) */
        }
        PyObject *module = PyImport_ImportModule(wanted[i].module); /* new */
        if (module == NULL) {
            return -1;
        }
        *wanted[i].slot = PyObject_GetAttrString(module, wanted[i].name); /* new, kept */
        Py_DECREF(module);
        if (*wanted[i].slot == NULL) {
            return -1;
        }
    }
    if (!PyType_Check(BoxType) || !PyType_IsSubtype((PyTypeObject *)BoxType, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ImportError, "ecs_spatial.geometry.Box is no tuple subclass");
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__cquadtree(void)
{
    PyObject *m = PyModule_Create(&cquadtree_module);
    if (m == NULL) {
        return NULL;
    }
    if (set_hash_key() < 0 || import_helpers() < 0 || PyType_Ready(&TreeType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&TreeType);
    if (PyModule_AddObject(m, "QuadTree", (PyObject *)&TreeType) < 0) {
        Py_DECREF(&TreeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
