/* tree_storage.c: slots, the id table, the container protocol, the tree's lifetime (new, init,
 * dealloc, busy), its properties, repr and size.
 *
 * The twin of ecs_spatial/_tree_storage.py.
 */

#include "tree_storage.h"
#include "wrap.h"
#include "containers.h"
#include "snapshots.h"
#include "records.h"
#include "tree_nodes.h"
#include "tree_queries.h"
#include "quadtree.h"
#include "constants.h"

/* Room for `need` entities, or -1 and MemoryError with the tree unchanged. Grows by an
 * eighth (below): memory per entity is a target (`python -m bench native` measures it), and
 * realloc moves big blocks by remapping pages, not by copying them. */
QT_API int
reserve_slots(Tree *t, int64_t need)
{
    if (need <= t->cap) {
        return 0;
    }
    if (need > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree holds fewer than 2**30 entities");
        return -1;
    }
    /* Growth by an eighth, as CPython's lists: less memory per entity than by a quarter,
     * for a few more instructions in an insert loop (see docs/design.md#decisions). */
    int64_t cap = (int64_t)t->cap + t->cap / 8;
    if (cap < need) {
        cap = need;
    }
    if (cap < 8) {
        cap = 8;
    }
    if (cap > MAX_COUNT) {
        cap = MAX_COUNT;
    }
    if (grow_array((void **)&t->ids, (int32_t)cap, sizeof(int64_t)) < 0
        || grow_array((void **)&t->box, (int32_t)cap, 4 * sizeof(double)) < 0
        || grow_array((void **)&t->node_of, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->next, (int32_t)cap, sizeof(int32_t)) < 0
        || grow_array((void **)&t->prev, (int32_t)cap, sizeof(int32_t)) < 0) {
        return -1;
    }
    t->cap = (int32_t)cap;
    return 0;
}

/* The bucket that holds `id` (which must be in the table). */
static inline size_t
bucket_of(const Tree *t, int64_t id)
{
    return probe(t, t->table_size, hash_id(id), id, id_stop);
}

/* Remove `id` from the table, shifting back the entries that probed past it. */
static void
table_delete(Tree *t, int64_t id)
{
    size_t mask = t->table_size - 1;
    size_t i = bucket_of(t, id);
    size_t j = i;
    for (;;) {
        j = probe_next(j, t->table_size);
        int32_t s = t->table[j];
        if (s == NO_SLOT) {
            break;
        }
        size_t home = hash_id(t->ids[s]) & mask;
        /* s may move back to i unless its home lies cyclically in (i, j]. */
        int stays = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            t->table[i] = s;
            i = j;
        }
    }
    t->table[i] = NO_SLOT;
}

/* Room in the table for `need` ids at a load of at most 0.7, or -1 and MemoryError with the
 * tree unchanged. */
QT_API int
reserve_table(Tree *t, int64_t need)
{
    if (t->table != NULL && need * 10 <= (int64_t)t->table_size * 7) {
        return 0;
    }
    size_t size = 16;
    while ((int64_t)size < need * 2) {
        size *= 2;
    }
    int32_t *table = PyMem_Malloc(size * sizeof(int32_t));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < size; i++) {
        table[i] = NO_SLOT;
    }
    PyMem_Free(t->table);
    t->table = table;
    t->table_size = size;
    for (int32_t s = 0; s < t->n; s++) {
        table_put(t, s);
    }
    return 0;
}

/* Give slot s's place to the last slot (s is in no list and no longer in the table). */
static void
free_slot(Tree *t, int32_t s)
{
    int32_t last = --t->n;
    if (s == last) {
        return;
    }
    snap_changed(t, t->node_of[last]); /* its snapshot names the slot `last` */
    t->ids[s] = t->ids[last];
    memcpy(&t->box[4 * (size_t)s], &t->box[4 * (size_t)last], 4 * sizeof(double));
    t->node_of[s] = t->node_of[last];
    t->next[s] = t->next[last];
    t->prev[s] = t->prev[last];
    if (t->prev[s] != NO_SLOT) {
        t->next[t->prev[s]] = s;
    }
    else {
        t->nodes[t->node_of[s]].head = s;
    }
    if (t->next[s] != NO_SLOT) {
        t->prev[t->next[s]] = s;
    }
    t->table[bucket_of(t, t->ids[s])] = s;
}

/* quadtree.remove, from the slot: uncount up to the root, merge the highest node left at or
 * under threshold, then free the slot. */
QT_API void
remove_slot(Tree *t, int32_t s)
{
    int32_t node = t->node_of[s], highest = NO_NODE;
    unlink_entry(t, s);
    for (int32_t m = node; m != NO_NODE; m = t->nodes[m].parent) {
        Node *mn = &t->nodes[m];
        mn->count--;
        if (mn->count <= t->threshold && mn->kids[0] != NO_NODE) {
            highest = m;
        }
    }
    if (highest != NO_NODE) {
        merge(t, highest);
    }
    table_delete(t, t->ids[s]);
    free_slot(t, s);
}

/* The call-order hints (Tree.call_hint) for every slot there is room for: 0, or -1 with the
 * hints as they were and no error (they are an optimisation). */
QT_API int
grow_call_hints(Tree *t)
{
    CallHint *h = t->cap > t->call_cap
                      ? PyMem_Realloc(t->call_hint, (size_t)t->cap * sizeof(CallHint)) : NULL;
    if (h == NULL) {
        return -1;
    }
    for (int32_t i = t->call_cap; i < t->cap; i++) {
        h[i] = (CallHint){NO_SLOT, 0};
    }
    t->call_hint = h;
    t->call_cap = t->cap;
    return 0;
}

/* Let go of move_many's slot hints (see Tree.slot_hint). */
QT_API void
drop_hints(Tree *t)
{
    PyMem_Free(t->slot_hint);
    t->slot_hint = NULL;
    t->slot_hint_cap = 0;
}

/* The slots' arrays and the id table released (the pointers NULL). */
static void
free_slots(Tree *t)
{
    PyMem_Free(t->ids);
    PyMem_Free(t->box);
    PyMem_Free(t->node_of);
    PyMem_Free(t->next);
    PyMem_Free(t->prev);
    PyMem_Free(t->table);
    t->ids = NULL;
    t->box = NULL;
    t->node_of = t->next = t->prev = t->table = NULL;
}

/* Every entity gone, their memory released; the tree back to the bounds it was made with. */
QT_API int
reset(Tree *t)
{
    free_slots(t);
    t->n = t->cap = 0;
    t->table_size = 0;
    t->scattered = 0;
    drop_hints(t);
    PyMem_Free(t->call_hint);
    t->call_hint = NULL;
    t->call_cap = 0;
    clear_nodes(t);
    t->broken = 0; /* emptied: whatever a change cut off in the middle is gone */
    if (t->has_hint && new_root(t, t->hint, 0) < 0) {
        t->broken = 1;
        return -1;
    }
    return 0;
}

/* busy_end()'s rare half: the deferred discard()s applied (see tree_storage.h). */
QT_API void
apply_pending(Tree *t)
{
    Py_ssize_t k = t->n_pending;
    t->n_pending = 0;
    for (Py_ssize_t i = 0; i < k && !t->broken; i++) {
        int32_t s = find_slot(t, t->pending[i]);
        if (s != NO_SLOT) {
            remove_slot(t, s);
        }
    }
}

QT_API int
guard(Tree *t, int mutating)
{
    if (t->broken) {
        PyErr_SetString(PyExc_RuntimeError,
                        "this QuadTree ran out of memory in the middle of a change and can no "
                        "longer be used");
        return -1;
    }
    if (mutating && t->busy) {
        PyErr_SetObject(PyExc_RuntimeError, ref_busy); /* the reference's text */
        return -1;
    }
    return 0;
}

#ifndef _WIN32
#include <sched.h>
#endif

QT_API int
walk_begin(Tree *t)
{
    t->busy++; /* no change starts from here on; one in flight in another thread ends first */
    while (t->changing && t->changer != PyThread_get_thread_ident()) {
        Py_BEGIN_ALLOW_THREADS
#ifndef _WIN32
        sched_yield(); /* elsewhere, the GIL's forced switch hands it over */
#endif
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) {
            busy_end(t);
            return -1;
        }
    }
    return 0;
}

QT_API PyObject *
Tree_new(PyTypeObject *type, PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds))
{
    Tree *t = (Tree *)type->tp_alloc(type, 0); /* zero-filled */
    if (t == NULL) {
        return NULL;
    }
    t->threshold_obj = PyLong_FromLong(DEFAULT_THRESHOLD);
    t->max_depth_obj = PyLong_FromLong(DEFAULT_MAX_DEPTH);
    if (t->threshold_obj == NULL || t->max_depth_obj == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    t->threshold = DEFAULT_THRESHOLD;
    t->max_depth = DEFAULT_MAX_DEPTH;
    t->root = NO_NODE;
    return (PyObject *)t;
}

QT_API void
Tree_dealloc(Tree *t)
{
    free_slots(t);
    PyMem_Free(t->nodes);
    PyMem_Free(t->free_nodes);
    PyMem_Free(t->work);
    PyMem_Free(t->scratch.arena);
    PyMem_Free(t->scratch.own);
    PyMem_Free(t->scratch.frames);
    PyMem_Free(t->slot_hint);
    PyMem_Free(t->call_hint);
    PyMem_Free(t->pending);
    snaps_drop(t);
    Py_XDECREF(t->threshold_obj);
    Py_XDECREF(t->max_depth_obj);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

/* QuadTree.__init__'s rule for threshold and max_depth: an int (not a bool) >= minimum. */
static int
config_int(PyObject *value, const char *name, long minimum, int32_t *out)
{
    int ok = PyLong_Check(value) && !PyBool_Check(value);
    if (ok) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (overflow < 0 || (overflow == 0 && v < minimum)) {
            ok = 0;
        }
        else {
            *out = (overflow > 0 || v > INT32_MAX) ? INT32_MAX : (int32_t)v;
        }
    }
    if (!ok) {
        PyErr_Format(PyExc_ValueError, MSG_BAD_SETTING, name, minimum, value);
        return -1;
    }
    return 0;
}

/* Set the configuration and empty the tree (__init__ and __setstate__), wrapped by period
 * (_wrap.Period) if it is not NULL. */
QT_API int
configure(Tree *t, PyObject *bounds, PyObject *threshold, PyObject *max_depth,
          const double *period)
{
    int32_t thr, depth;
    double hint[4];
    if (config_int(threshold, "threshold", 1, &thr) < 0
        || config_int(max_depth, "max_depth", 0, &depth) < 0) {
        return -1;
    }
    if (bounds != Py_None && box_any(bounds, NULL, hint) < 0) {
        return -1;
    }
    /* Kept as exact ints (an int subclass's copy, no Python run): the tree has no collector
     * support, so a subclass instance referring back to it would never be freed. */
    PyObject *exact_threshold = PyNumber_Index(threshold); /* owned */
    if (exact_threshold == NULL) {
        return -1;
    }
    PyObject *exact_depth = PyNumber_Index(max_depth); /* owned */
    if (exact_depth == NULL) {
        Py_DECREF(exact_threshold);
        return -1;
    }
    PyObject *old_threshold = t->threshold_obj, *old_depth = t->max_depth_obj; /* owned */
    t->threshold_obj = exact_threshold;
    t->max_depth_obj = exact_depth;
    t->threshold = thr;
    t->max_depth = depth;
    t->has_hint = bounds != Py_None;
    if (t->has_hint) {
        memcpy(t->hint, hint, sizeof(hint));
    }
    t->wrapped = period != NULL;
    if (period != NULL) {
        memcpy(t->period, period, sizeof(t->period));
    }
    int r = reset(t);
    /* Let go of the old ints last: freeing one may run a finaliser, which finds the tree whole. */
    Py_DECREF(old_threshold);
    Py_DECREF(old_depth);
    return r;
}

static const Params init_params = {"__init__", 1, 0, 4,
                                   {"bounds", "threshold", "max_depth", "wrap"}};

/* __init__'s checks in the reference's order (threshold, max_depth, the period, then the
 * bounds in configure()), the bounds defaulting to the period's box; then configure(). */
static int
init_checked(Tree *t, PyObject *bounds, PyObject *threshold, PyObject *max_depth,
             PyObject *wrap)
{
    int32_t ignored;
    double period[6];
    if (config_int(threshold, "threshold", 1, &ignored) < 0
        || config_int(max_depth, "max_depth", 0, &ignored) < 0
        || (wrap != Py_None && period_of(wrap, period) < 0)) {
        return -1;
    }
    if (wrap == Py_None || bounds != Py_None) {
        return configure(t, bounds, threshold, max_depth, wrap == Py_None ? NULL : period);
    }
    PyObject *box = make_box(period[0], period[1], period[4], period[5]); /* new */
    if (box == NULL) {
        return -1;
    }
    int r = configure(t, box, threshold, max_depth, period);
    Py_DECREF(box);
    return r;
}

QT_API int
Tree_init(Tree *t, PyObject *args, PyObject *kwds)
{
    PyObject *a[MAX_PARAMS];
    if (bind_tuple(&init_params, args, kwds, a) < 0) {
        return -1;
    }
    if (t->busy) {
        return guard(t, 1);
    }
    PyObject *bounds = a[0] == NULL ? Py_None : a[0], *threshold = a[1], *max_depth = a[2];
    PyObject *default_threshold = NULL, *default_depth = NULL;
    if (threshold == NULL) {
        threshold = default_threshold = PyLong_FromLong(DEFAULT_THRESHOLD);
    }
    if (max_depth == NULL) {
        max_depth = default_depth = PyLong_FromLong(DEFAULT_MAX_DEPTH);
    }
    int r = -1;
    if (threshold != NULL && max_depth != NULL) {
        change_begin(t);
        r = init_checked(t, bounds, threshold, max_depth, a[3] == NULL ? Py_None : a[3]);
        change_end(t);
    }
    Py_XDECREF(default_threshold);
    Py_XDECREF(default_depth);
    return r;
}

QT_API Py_ssize_t
Tree_len(Tree *t)
{
    return t->n;
}

QT_API int
Tree_contains(Tree *t, PyObject *entity)
{
    if (guard(t, 0) < 0) {
        return -1;
    }
    int32_t s = lookup_slot(t, entity);
    return s == -2 ? -1 : s != NO_SLOT;
}

QT_API PyObject *
Tree_getitem(Tree *t, PyObject *entity)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    int32_t s = lookup_slot(t, entity);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        return raise_missing(entity);
    }
    const double *b = &t->box[4 * (size_t)s];
    return make_box(b[0], b[1], b[2], b[3]);
}

static const Params get_params = {"get", 2, 1, 2, {"entity", "default"}};

QT_API PyObject *
Tree_get(Tree *t, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *buf[MAX_PARAMS];
    PyObject *const *a = arguments(&get_params, args, nargs, kwnames, buf);
    if (a == NULL || guard(t, 0) < 0) {
        return NULL;
    }
    int32_t s = lookup_slot(t, a[0]);
    if (s == -2) {
        return NULL;
    }
    if (s == NO_SLOT) {
        PyObject *fallback = a[1] != NULL ? a[1] : Py_None;
        Py_INCREF(fallback);
        return fallback;
    }
    const double *b = &t->box[4 * (size_t)s];
    return make_box(b[0], b[1], b[2], b[3]);
}

QT_API PyObject *
Tree_iter(Tree *t)
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    I64Buf copy = {0}; /* the ids in ascending order (_tree_storage.__iter__) */
    int r = i64_reserve(&copy, t->n);
    if (r == 0 && t->n > 0) {
        memcpy(copy.p, t->ids, (size_t)t->n * sizeof(int64_t));
        copy.n = t->n;
    }
    PyObject *ids = ids_result(&copy, r);
    if (ids == NULL) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(ids);
    Py_DECREF(ids);
    return it;
}

QT_API PyObject *
Tree_repr(Tree *t)
{
    /* All read before the Box is made (see "Python inside the core" in tree.h). */
    int n = (int)t->n, wrapped = t->wrapped;
    double period[6];
    memcpy(period, t->period, sizeof(period));
    PyObject *threshold = t->threshold_obj, *max_depth = t->max_depth_obj; /* owned, taken: */
    Py_INCREF(threshold);
    Py_INCREF(max_depth);
    PyObject *bounds = t->root == NO_NODE ? (Py_INCREF(Py_None), Py_None)
                       : make_box(t->nodes[t->root].x0, t->nodes[t->root].y0,
                                  t->nodes[t->root].x1, t->nodes[t->root].y1);
    PyObject *empty = PyUnicode_FromString("");
    PyObject *thr = empty == NULL ? NULL : PyObject_Format(threshold, empty);
    PyObject *depth = empty == NULL ? NULL : PyObject_Format(max_depth, empty);
    PyObject *text = NULL;
    PyObject *wrap = !wrapped ? PyUnicode_FromString("")
                     : make_box(period[0], period[1], period[4], period[5]); /* new */
    if (wrap != NULL && wrapped) {
        Py_SETREF(wrap, PyUnicode_FromFormat(", wrap=%R", wrap));
    }
    if (bounds != NULL && thr != NULL && depth != NULL && wrap != NULL) {
        text = PyUnicode_FromFormat("QuadTree(bounds=%R, threshold=%U, max_depth=%U%U, "
                                    "entities=%d)", bounds, thr, depth, wrap, n);
    }
    Py_XDECREF(wrap);
    Py_DECREF(threshold);
    Py_DECREF(max_depth);
    Py_XDECREF(bounds);
    Py_XDECREF(empty);
    Py_XDECREF(thr);
    Py_XDECREF(depth);
    return text;
}

QT_API PyObject *
Tree_get_bounds(Tree *t, void *Py_UNUSED(closure))
{
    if (t->root == NO_NODE) {
        Py_RETURN_NONE;
    }
    const Node *r = &t->nodes[t->root];
    return make_box(r->x0, r->y0, r->x1, r->y1);
}

/* The period as the box (x0, y0, x0 + W, y0 + H), or None for a plain tree. */
QT_API PyObject *
Tree_get_wrap(Tree *t, void *Py_UNUSED(closure))
{
    if (!t->wrapped) {
        Py_RETURN_NONE;
    }
    return make_box(t->period[0], t->period[1], t->period[4], t->period[5]);
}

QT_API PyObject *
Tree_get_threshold(Tree *t, void *Py_UNUSED(closure))
{
    Py_INCREF(t->threshold_obj);
    return t->threshold_obj;
}

QT_API PyObject *
Tree_get_max_depth(Tree *t, void *Py_UNUSED(closure))
{
    Py_INCREF(t->max_depth_obj);
    return t->max_depth_obj;
}

QT_API PyObject *
Tree_sizeof(Tree *t, PyObject *Py_UNUSED(ignored))
{
    size_t size = Py_TYPE(t)->tp_basicsize;
    size += (size_t)t->cap * (sizeof(int64_t) + 4 * sizeof(double) + 3 * sizeof(int32_t));
    size += t->table_size * sizeof(int32_t);
    size += (size_t)t->cap_nodes * (sizeof(Node) + sizeof(int32_t) + sizeof(Work));
    size += (size_t)t->scratch.arena_cap * sizeof(Rec) + (size_t)t->scratch.own_cap * sizeof(OwnRec);
    size += (size_t)t->scratch.frames_cap * sizeof(SweepFrame);
    size += (size_t)t->slot_hint_cap * sizeof(int32_t) + (size_t)t->call_cap * sizeof(CallHint);
    size += t->snaps_bytes;
    return PyLong_FromSize_t(size);
}
