/* tree_state.c: state: pickles, copies, state_hash.
 *
 * The twin of ecs_spatial/_tree_state.py.
 *
 * The state is the reference's (_tree_state.STATE_FORMAT): plain data, the same for both
 * classes, so that either loads the other's pickles. This class writes it here, and reads it
 * through _tree_state.read_state, which checks it and gives each error its one text; the
 * tree's shape is a function of its root and its boxes, so it is rebuilt node for node. A
 * subclass's own attributes (its __dict__ and slots) travel as the reference's do
 * (_tree_state.own_state, restore_own_state, copy_own_state).
 */

#include "tree_state.h"
#include "containers.h"
#include "records.h"
#include "tree_storage.h"
#include "tree_nodes.h"
#include "tree_updates.h"
#include "quadtree.h"
#include "constants.h"
#include "wrap.h"

/* _tree_state's hash: mix64 chained over the id and the IEEE bits of the four
 * coordinates (-0.0 as 0.0), the entries' hashes summed mod 2**64, the sum mixed with their
 * number. The same integers as the reference's, by construction. */
QT_API PyObject *
Tree_state_hash(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    uint64_t total = 0;
    for (int32_t s = 0; s < t->n; s++) {
        uint64_t h = mix64((uint64_t)t->ids[s]);
        for (int i = 0; i < 4; i++) {
            double v = t->box[4 * (size_t)s + i] + 0.0; /* -0.0 + 0.0 is 0.0 */
            uint64_t bits;
            memcpy(&bits, &v, sizeof(bits));
            h = mix64(h ^ bits);
        }
        total += h;
    }
    if (t->wrapped) { /* the period counts as one more entry's box (id -1), salted */
        const double box[4] = {t->period[0], t->period[1], t->period[4], t->period[5]};
        uint64_t h = mix64(UINT64_MAX);
        for (int i = 0; i < 4; i++) {
            double v = box[i] + 0.0;
            uint64_t bits;
            memcpy(&bits, &v, sizeof(bits));
            h = mix64(h ^ bits);
        }
        total += h ^ (uint64_t)WRAP_SALT;
    }
    return PyLong_FromUnsignedLongLong(mix64(total ^ (uint64_t)t->n));
}

/* A plain tuple of these 4 floats. New reference. */
static PyObject *
float_tuple(double x0, double y0, double x1, double y1)
{
    return Py_BuildValue("(dddd)", x0, y0, x1, y1);
}

/* An entry of the state: the state lists them by id. */
typedef struct {
    int64_t id;
    int32_t slot;
} IdSlot;

static inline int
id_slot_less(const IdSlot *x, const IdSlot *y)
{
    return x->id < y->id;
}

DEFINE_SORT(sort_id_slots, IdSlot, id_slot_less)

/* Copies of the n entities' ids and boxes (4 doubles each) in ascending order of id, the
 * state's order (as _tree_state.state_of writes it): *ids and *boxes in PyMem memory, freed by
 * the caller (also on error). 0, or -1 and MemoryError. */
static int
entries_by_id(const Tree *t, int64_t **ids, double **boxes)
{
    size_t n = t->n > 0 ? (size_t)t->n : 1;
    IdSlot *order = PyMem_Malloc(n * sizeof(IdSlot));
    *ids = PyMem_Malloc(n * sizeof(int64_t));
    *boxes = PyMem_Malloc(4 * n * sizeof(double));
    int r = -1;
    if (order == NULL || *ids == NULL || *boxes == NULL) {
        PyErr_NoMemory();
    }
    else {
        for (int32_t s = 0; s < t->n; s++) {
            order[s] = (IdSlot){t->ids[s], s};
        }
        r = sort_id_slots(order, t->n);
        for (int32_t i = 0; r == 0 && i < t->n; i++) {
            (*ids)[i] = order[i].id;
            memcpy(&(*boxes)[4 * (size_t)i], &t->box[4 * (size_t)order[i].slot], 4 * sizeof(double));
        }
    }
    PyMem_Free(order);
    return r;
}

/* A new array.array of the given typecode holding a copy of the len bytes at p (the state's
 * buffers: its ids an array('q'), its boxes an array('d')), or NULL and an error. */
static PyObject *
buffer_array(const char *typecode, const void *p, size_t len)
{
    PyObject *module = PyImport_ImportModule("array"); /* new */
    if (module == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_CallMethod(module, "array", "sy#", typecode, (const char *)p,
                                           (Py_ssize_t)len); /* new */
    Py_DECREF(module);
    return result;
}

QT_API PyObject *
Tree_getstate(Tree *t, PyObject *Py_UNUSED(ignored))
{
    if (guard(t, 0) < 0) {
        return NULL;
    }
    /* The whole state read before the first allocation (see "Python inside the core" in
     * tree.h): the entries copied in the state's order, the root's box and level, the
     * configuration's ints held (an __init__ may replace them). */
    int64_t *by_id = NULL;
    double *box_by_id = NULL;
    Py_ssize_t n = t->n;
    int copied = entries_by_id(t, &by_id, &box_by_id);
    int has_hint = t->has_hint, has_root = t->root != NO_NODE, level = 0, wrapped = t->wrapped;
    const double wrap[4] = {t->period[0], t->period[1], t->period[4], t->period[5]};
    double hint[4], root_box[4] = {0.0, 0.0, 0.0, 0.0};
    memcpy(hint, t->hint, sizeof(hint));
    if (has_root) {
        const Node *r = &t->nodes[t->root];
        root_box[0] = r->x0;
        root_box[1] = r->y0;
        root_box[2] = r->x1;
        root_box[3] = r->y1;
        level = (int)r->level;
    }
    PyObject *threshold = t->threshold_obj, *max_depth = t->max_depth_obj; /* owned, taken: */
    Py_INCREF(threshold);
    Py_INCREF(max_depth);
    PyObject *ids = copied < 0 ? NULL : buffer_array("q", by_id, n * sizeof(int64_t)); /* new */
    PyObject *boxes = ids == NULL ? NULL
                                  : buffer_array("d", box_by_id, 4 * n * sizeof(double)); /* new */
    PyObject *bounds = Py_None, *root = Py_None; /* each new below */
    Py_INCREF(bounds);
    Py_INCREF(root);
    if (has_hint) {
        Py_SETREF(bounds, float_tuple(hint[0], hint[1], hint[2], hint[3]));
    }
    if (has_root) {
        Py_SETREF(root, float_tuple(root_box[0], root_box[1], root_box[2], root_box[3]));
    }
    PyObject *own = ids != NULL && boxes != NULL && bounds != NULL && root != NULL
                        ? PyObject_CallOneArg(ref_own_state, (PyObject *)t) /* new: a dict */
                        : NULL; /* never call into Python with an error set */
    PyObject *state = NULL;
    if (ids != NULL && boxes != NULL && bounds != NULL && root != NULL && own != NULL) {
        state = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:i,s:O,s:O}", "format", ref_state_format,
                              STATE_KEY_BOUNDS, bounds, STATE_KEY_THRESHOLD, threshold,
                              STATE_KEY_MAX_DEPTH, max_depth, STATE_KEY_ROOT, root,
                              STATE_KEY_ROOT_LEVEL, level, STATE_KEY_IDS, ids,
                              STATE_KEY_BOXES, boxes);
    }
    if (state != NULL && wrapped) { /* the period, as the 4 floats of .wrap */
        PyObject *box = float_tuple(wrap[0], wrap[1], wrap[2], wrap[3]); /* new */
        if (box == NULL || PyDict_SetItemString(state, STATE_KEY_WRAP, box) < 0) {
            Py_CLEAR(state);
        }
        Py_XDECREF(box);
    }
    if (state != NULL && PyDict_Update(state, own) < 0) {
        Py_CLEAR(state);
    }
    Py_DECREF(threshold);
    Py_DECREF(max_depth);
    Py_XDECREF(ids);
    Py_XDECREF(boxes);
    Py_XDECREF(bounds);
    Py_XDECREF(root);
    Py_XDECREF(own);
    PyMem_Free(by_id);
    PyMem_Free(box_by_id);
    return state;
}

/* Remove `key` from the dict d if it is there. 0, or -1 and an error. */
static int
dict_discard(PyObject *d, const char *key)
{
    PyObject *k = PyUnicode_FromString(key); /* new */
    if (k == NULL) {
        return -1;
    }
    int has = PyDict_Contains(d, k);
    int r = has < 0 ? -1 : has ? PyDict_DelItem(d, k) : 0;
    Py_DECREF(k);
    return r;
}

/* (copyreg.__newobj__, (class,), state): pickle makes the tree with class.__new__ (no
 * __init__, whose signature a subclass may change) and hands it the state. */
QT_API PyObject *
Tree_reduce(Tree *t, PyObject *Py_UNUSED(ignored))
{
    PyObject *state = Tree_getstate(t, NULL); /* new */
    if (state == NULL) {
        return NULL;
    }
    PyObject *result = Py_BuildValue("(O(O)O)", copyreg_newobj, (PyObject *)Py_TYPE(t), state);
    Py_DECREF(state);
    return result;
}

/* Room for k entries' ids and boxes in *ids and *boxes (PyMem memory, freed by the caller
 * whatever the result): 0, or -1 and an error. */
static int
entry_room(Py_ssize_t k, int64_t **ids, double **boxes)
{
    if (k > MAX_COUNT) {
        PyErr_SetString(PyExc_OverflowError, "a QuadTree holds fewer than 2**30 entities");
        return -1;
    }
    *ids = PyMem_Malloc((size_t)(k > 0 ? k : 1) * sizeof(int64_t));
    *boxes = PyMem_Malloc((size_t)(k > 0 ? k : 1) * 4 * sizeof(double));
    if (*ids == NULL || *boxes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The entries of read_state's records, a list of (x0, y0, x1, y1, id) tuples, ids checked to
 * fit in 64 bits, into *ids, *boxes and *k (see entry_room): 0, or -1 and an error. */
static int
read_records(PyObject *records, int64_t **ids, double **boxes, Py_ssize_t *k)
{
    *k = PyList_GET_SIZE(records);
    if (entry_room(*k, ids, boxes) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < *k; i++) {
        PyObject *rec = PyList_GET_ITEM(records, i); /* borrowed */
        if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 5) {
            PyErr_SetString(PyExc_SystemError, "_tree_state.read_state returned no record");
            return -1;
        }
        PyObject *entity = PyTuple_GET_ITEM(rec, 4); /* borrowed */
        int fit = int64_of(entity, &(*ids)[i]);
        if (fit <= 0) {
            if (fit == 0) { /* _read_state refuses ids past 64 bits, as insert does */
                PyErr_SetString(PyExc_SystemError, "_tree_state.read_state returned an id past 64 bits");
            }
            return -1;
        }
        for (int j = 0; j < 4; j++) {
            double v = PyFloat_AsDouble(PyTuple_GET_ITEM(rec, j));
            if (v == -1.0 && PyErr_Occurred()) {
                return -1;
            }
            (*boxes)[4 * i + j] = v;
        }
    }
    return 0;
}

/* The entries of read_state's checked buffers, (ids, boxes): an array('q') and an array('d')
 * of 4 coordinates an id, copied whole into *ids, *boxes and *k (see entry_room): 0, or -1 and
 * an error. */
static int
read_buffers(PyObject *records, int64_t **ids, double **boxes, Py_ssize_t *k)
{
    Py_buffer id_view, box_view;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 0), &id_view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(records, 1), &box_view, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&id_view);
        return -1;
    }
    int r = -1;
    *k = id_view.len / (Py_ssize_t)sizeof(int64_t);
    if (id_view.len != *k * (Py_ssize_t)sizeof(int64_t)
        || box_view.len != 4 * *k * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_SystemError, "_tree_state.read_state returned unequal buffers");
    }
    else if (entry_room(*k, ids, boxes) == 0) {
        memcpy(*ids, id_view.buf, (size_t)id_view.len);
        memcpy(*boxes, box_view.buf, (size_t)box_view.len);
        r = 0;
    }
    PyBuffer_Release(&id_view);
    PyBuffer_Release(&box_view);
    return r;
}

/* _tree_state.read_wrap of a state read_state has read: *wrapped and the period, or its
 * error. 0, or -1. */
static int
read_period(PyObject *state, double period[6], int *wrapped)
{
    PyObject *got = PyObject_CallOneArg(ref_read_wrap, state); /* new: None or a period */
    if (got == NULL) {
        return -1;
    }
    *wrapped = got != Py_None;
    int r = 0;
    if (*wrapped && (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 6)) {
        PyErr_SetString(PyExc_SystemError, "_tree_state.read_wrap returned no period");
        r = -1;
    }
    for (int i = 0; *wrapped && r == 0 && i < 6; i++) {
        period[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(got, i));
        r = period[i] == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(got);
    return r;
}

/* The k entries' boxes made canonical in place (_wrap.canonical_rec), or the first refusal
 * led by "QuadTree state: ". 0, or -1. */
static int
canonical_entries(const double period[6], const int64_t *ids, double *boxes, Py_ssize_t k)
{
    for (Py_ssize_t i = 0; i < k; i++) {
        if (canonical(period, &boxes[4 * i], NULL, ids[i]) < 0) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            if (type == PyExc_ValueError && value != NULL) {
                PyErr_Format(PyExc_ValueError, "QuadTree state: %S", value);
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(tb);
            }
            else {
                PyErr_Restore(type, value, tb);
            }
            return -1;
        }
    }
    return 0;
}

/* Become the tree a state describes: _tree_state.read_state checks it all (and raises its
 * errors) before anything changes; then the configuration, the root, the entities (placed as
 * insert_many places them) and a subclass's own attributes. 0, or -1 and an error. */
static int
setstate_impl(Tree *t, PyObject *state)
{
    PyObject *hint = t->has_hint ? make_box(t->hint[0], t->hint[1], t->hint[2], t->hint[3])
                                 : (Py_INCREF(Py_None), Py_None); /* new */
    if (hint == NULL) {
        return -1;
    }
    /* new: a _tree_state._State (hint, threshold, max_depth, root, level, records, attributes,
     * slots), its records a list of (x0, y0, x1, y1, id) tuples of floats and an int */
    PyObject *read = PyObject_CallFunctionObjArgs(ref_read_state, state, (PyObject *)Py_TYPE(t),
                                                  hint, NULL);
    Py_DECREF(hint);
    if (read == NULL) {
        return -1;
    }
    int64_t *ids = NULL;
    double *boxes = NULL;
    Py_ssize_t k = 0;
    double period[6];
    int wrapped = 0;
    PyObject *before = NULL; /* new, or NULL */
    int r = -1;
    if (!PyTuple_Check(read) || PyTuple_GET_SIZE(read) != 8
        || !(PyList_Check(PyTuple_GET_ITEM(read, 5))
             || (PyTuple_Check(PyTuple_GET_ITEM(read, 5))
                 && PyTuple_GET_SIZE(PyTuple_GET_ITEM(read, 5)) == 2))) {
        PyErr_SetString(PyExc_SystemError, "_tree_state.read_state returned no _State");
        goto done;
    }
    PyObject *bounds = PyTuple_GET_ITEM(read, 0), *threshold = PyTuple_GET_ITEM(read, 1),
             *max_depth = PyTuple_GET_ITEM(read, 2), *root = PyTuple_GET_ITEM(read, 3),
             *records = PyTuple_GET_ITEM(read, 5), *attributes = PyTuple_GET_ITEM(read, 6),
             *slots = PyTuple_GET_ITEM(read, 7); /* all borrowed from read */
    long level = PyLong_AsLong(PyTuple_GET_ITEM(read, 4));
    if (level == -1 && PyErr_Occurred()) {
        goto done;
    }
    double root_bounds[4] = {0, 0, 0, 0};
    if (root != Py_None && read_box(root, root_bounds) < 0) {
        goto done;
    }
    /* The records as this layout keeps them, ids checked to fit in 64 bits; or the state's
     * buffers, checked, copied whole. */
    if (PyTuple_Check(records)) {
        if (read_buffers(records, &ids, &boxes, &k) < 0) {
            goto done;
        }
    }
    else if (read_records(records, &ids, &boxes, &k) < 0) {
        goto done;
    }
    /* A wrapped tree's period (_tree_state.read_wrap), and its boxes made canonical or
     * refused as an insert refuses them, led by "QuadTree state: ". */
    if (read_period(state, period, &wrapped) < 0
        || (wrapped && canonical_entries(period, ids, boxes, k) < 0)) {
        goto done;
    }
    /* A subclass may refuse one of its own attributes, which come last: the index as it is
     * now (the state without them) is then put back. */
    if (attributes != Py_None || slots != Py_None) {
        before = Tree_getstate(t, NULL);
        if (before == NULL || dict_discard(before, OWN_KEY_ATTRIBUTES) < 0
            || dict_discard(before, OWN_KEY_SLOTS) < 0) {
            goto done;
        }
    }
    /* Everything checked: the tree changes from here on. */
    if (configure(t, bounds, threshold, max_depth, wrapped ? period : NULL) < 0) {
        goto done;
    }
    if (root != Py_None) {
        clear_nodes(t);
        if (new_root(t, root_bounds, (int32_t)level) < 0
            || insert_batch(t, ids, boxes, (int32_t)k) < 0) {
            goto done;
        }
    }
    if (attributes != Py_None || slots != Py_None) {
        PyObject *done_ = PyObject_CallFunctionObjArgs(ref_restore_own_state, (PyObject *)t,
                                                       attributes, slots, NULL); /* new */
        if (done_ == NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            if (setstate_impl(t, before) < 0) { /* memory ran out: the tree is broken */
                PyErr_Clear();
            }
            PyErr_Restore(type, value, tb);
            goto done;
        }
        Py_DECREF(done_);
    }
    r = 0;
done:
    PyMem_Free(ids);
    PyMem_Free(boxes);
    Py_XDECREF(before);
    Py_DECREF(read);
    return r;
}

QT_API PyObject *
Tree_setstate(Tree *t, PyObject *state)
{
    if (guard(t, 1) < 0) {
        return NULL;
    }
    change_begin(t);
    int r = setstate_impl(t, state);
    change_end(t);
    maybe_compact(t);
    if (r < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* A copy of an array of cap items of `size` bytes (NULL for an empty one). 0, or -1. */
static int
copy_array(void **dst, const void *src, size_t items, size_t size)
{
    *dst = NULL;
    if (src == NULL || items == 0) {
        return 0;
    }
    *dst = PyMem_Malloc(items * size);
    if (*dst == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(*dst, src, items * size);
    return 0;
}

/* A new tree of the same class with the same configuration, entities and nodes (a subclass's
 * attributes aside). */
static Tree *
copy_data(Tree *t)
{
    Tree *c = (Tree *)Tree_new(Py_TYPE(t), NULL, NULL); /* may run Python: t is read after it */
    if (c == NULL) {
        return NULL;
    }
    if (guard(t, 0) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    Py_INCREF(t->threshold_obj);
    Py_SETREF(c->threshold_obj, t->threshold_obj);
    Py_INCREF(t->max_depth_obj);
    Py_SETREF(c->max_depth_obj, t->max_depth_obj);
    c->threshold = t->threshold;
    c->max_depth = t->max_depth;
    c->has_hint = t->has_hint;
    memcpy(c->hint, t->hint, sizeof(t->hint));
    c->wrapped = t->wrapped;
    memcpy(c->period, t->period, sizeof(t->period));
    size_t cap = (size_t)t->cap, nodes = (size_t)t->cap_nodes;
    if (copy_array((void **)&c->ids, t->ids, cap, sizeof(int64_t)) < 0
        || copy_array((void **)&c->box, t->box, cap, 4 * sizeof(double)) < 0
        || copy_array((void **)&c->node_of, t->node_of, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->next, t->next, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->prev, t->prev, cap, sizeof(int32_t)) < 0
        || copy_array((void **)&c->table, t->table, t->table_size, sizeof(int32_t)) < 0
        || copy_array((void **)&c->nodes, t->nodes, nodes, sizeof(Node)) < 0
        || copy_array((void **)&c->free_nodes, t->free_nodes, nodes, sizeof(int32_t)) < 0
        || copy_array((void **)&c->work, t->work, nodes + 1, sizeof(Work)) < 0) {
        Py_DECREF(c);
        return NULL;
    }
    c->n = t->n;
    c->cap = t->cap;
    c->table_size = t->table_size;
    c->n_nodes = t->n_nodes;
    c->cap_nodes = t->cap_nodes;
    c->n_free = t->n_free;
    c->root = t->root;
    return c;
}

/* Give the copy c a subclass's own attributes: _tree_state.copy_own_state, shared (memo None)
 * or deep-copied with deepcopy's memo. 0, or -1 and an error. */
static int
copy_own_state(Tree *t, PyObject *c, PyObject *memo)
{
    PyObject *r = PyObject_CallFunctionObjArgs(ref_copy_own_state, (PyObject *)t, c, memo,
                                               NULL); /* new: None */
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* copy.copy: a new tree (copies of its arrays), a subclass's attributes shared as a shallow
 * copy shares them. */
QT_API PyObject *
Tree_copy(Tree *t, PyObject *Py_UNUSED(ignored))
{
    PyObject *c = (PyObject *)copy_data(t); /* new */
    if (c != NULL && copy_own_state(t, c, Py_None) < 0) {
        Py_CLEAR(c);
    }
    return c;
}

/* copy.deepcopy: the tree's own data is ids and floats, immutable, so a copy of it is deep;
 * a subclass's attributes are deep-copied, the new tree entered in the memo first (an
 * attribute may refer back to the tree). */
QT_API PyObject *
Tree_deepcopy(Tree *t, PyObject *memo)
{
    PyObject *c = (PyObject *)copy_data(t); /* new */
    if (c == NULL) {
        return NULL;
    }
    /* deepcopy always passes its memo, a dict; a direct call may pass None */
    PyObject *own_memo = memo == Py_None ? PyDict_New() : (Py_INCREF(memo), memo); /* new */
    if (own_memo == NULL || copy_own_state(t, c, own_memo) < 0) {
        Py_CLEAR(c);
    }
    Py_XDECREF(own_memo);
    return c;
}
