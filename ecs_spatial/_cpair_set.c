/* ecs_spatial._cpair_set: the pair diff of pair_set.py, compiled.
 *
 * pair_set.diff_sorted_reference merges the previous frame's sorted pairs with this frame's
 * into the frame's exits and enters. diff_sorted() below is that merge, and only that merge:
 * the same steps in the same order, comparing a pair's two ints in C where the Python merge
 * compares tuples; the Python function stays the reference (ECS_SPATIAL_PURE=1 runs it, and
 * tests/test_cpair_set.py drives both side by side).
 *
 * The fast path takes two exact lists whose items, where the merge compares them, are exact
 * tuples of two exact ints that fit a long long: for those, comparing the ints as C integers
 * is what the tuples' comparison answers, and it runs no Python code. At the first item that
 * is anything else (a subclass, a longer tuple, an int beyond 64 bits, not a tuple at all)
 * the partial answer is dropped and the reference runs on the whole input, so that every
 * answer and every error is the reference's own. Nothing the fast path does runs Python
 * code between its reads (no comparison calls out, and appending to a list allocates no
 * object the collector tracks): the two result lists are made before the first read.
 *
 * diff_sorted_flat() is the same merge over two frames' pairs flattened into int64 buffers
 * (what QuadTree.find_all_intersections_array() returns), pair_set.diff_sorted_flat_reference
 * its reference: the pairs are read as C integers straight from the buffers, and a tuple is
 * built only for an exit or an enter. Its checks of the buffers are the reference's, in the
 * same order with the same words; a call with other than two positional arguments is handed
 * to the reference, so that its errors are the reference's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_cquadtree_src/sorts.h" /* the core's merge sort */

/* The reference, pair_set.diff_sorted_reference: what configure() took (owned), the
 * fallback for anything the fast path does not take. */
static PyObject *reference = NULL;
/* pair_set.diff_sorted_flat_reference, when configure() took it (owned, or NULL): what a
 * call of diff_sorted_flat() with other than two positional arguments is handed to. */
static PyObject *flat_reference = NULL;
/* pair_set.diff_touched_reference, when configure() took it (owned, or NULL): what
 * diff_touched() falls back to for input its fast path does not take. */
static PyObject *touched_reference = NULL;
/* pair_set.apply_diff_reference, when configure() took it (owned, or NULL): what
 * apply_diff() hands the input its fast path does not take. */
static PyObject *apply_reference = NULL;

PyDoc_STRVAR(configure_doc,
"configure(reference, flat_reference=None, touched_reference=None, apply_reference=None,\n"
"/)\n--\n\n"
"Take the Python merge that diff_sorted() falls back to for input the fast path does not\n"
"take, the one that diff_sorted_flat() hands an odd call to (keywords, other than two\n"
"arguments), the one diff_touched() falls back to, and the upkeep apply_diff() falls\n"
"back to. Called once, by ecs_spatial.pair_set.");

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *given[4] = {NULL, NULL, NULL, NULL}; /* borrowed from args */
    if (!PyArg_UnpackTuple(args, "configure", 1, 4, &given[0], &given[1], &given[2],
                           &given[3])) {
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (i > 0 && given[i] == Py_None) {
            given[i] = NULL;
        }
        if (given[i] != NULL && !PyCallable_Check(given[i])) {
            PyErr_Format(PyExc_TypeError, "configure() takes a callable, got %.200s",
                         Py_TYPE(given[i])->tp_name);
            return NULL;
        }
    }
    PyObject **const slots[4] = {&reference, &flat_reference, &touched_reference,
                                 &apply_reference};
    PyObject *old[4];
    for (int i = 0; i < 4; i++) {
        old[i] = *slots[i];
        Py_XINCREF(given[i]);
        *slots[i] = given[i];
    }
    /* last: a finaliser may run, and find the new ones in place */
    for (int i = 0; i < 4; i++) {
        Py_XDECREF(old[i]);
    }
    Py_RETURN_NONE;
}

/* A pair's two ints, when ``item`` is an exact tuple of two exact ints that each fit a long
 * long: 1. Anything else: 0, no error set. */
static inline int
pair_key(PyObject *item, long long *a, long long *b)
{
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
        return 0;
    }
    PyObject *first = PyTuple_GET_ITEM(item, 0);   /* borrowed from item */
    PyObject *second = PyTuple_GET_ITEM(item, 1);  /* borrowed from item */
    if (!PyLong_CheckExact(first) || !PyLong_CheckExact(second)) {
        return 0;
    }
    int overflow = 0;
    *a = PyLong_AsLongLongAndOverflow(first, &overflow);
    if (overflow) {
        return 0;
    }
    *b = PyLong_AsLongLongAndOverflow(second, &overflow);
    return !overflow;
}

/* Append old[from:] (or new[from:]) to ``out``: 0, or -1 with an error. */
static int
append_rest(PyObject *out, PyObject *list, Py_ssize_t from)
{
    for (Py_ssize_t i = from; i < PyList_GET_SIZE(list); i++) {
        if (PyList_Append(out, PyList_GET_ITEM(list, i)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The merge of the reference over two exact lists, into ``exits`` and ``enters``: 1 done,
 * 0 when an item it must compare is not a pair the fast path takes (the lists then hold a
 * partial answer), -1 with an error. */
static int
merge(PyObject *old, PyObject *new, PyObject *exits, PyObject *enters)
{
    Py_ssize_t i = 0, j = 0;
    long long a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    int have_a = 0, have_b = 0; /* whether a0, a1 hold old[i]'s ints, b0, b1 new[j]'s */
    while (i < PyList_GET_SIZE(old) && j < PyList_GET_SIZE(new)) {
        PyObject *a = PyList_GET_ITEM(old, i); /* borrowed from old */
        PyObject *b = PyList_GET_ITEM(new, j); /* borrowed from new */
        if (!have_a && !(have_a = pair_key(a, &a0, &a1))) {
            return 0;
        }
        if (!have_b && !(have_b = pair_key(b, &b0, &b1))) {
            return 0;
        }
        if (a0 == b0 && a1 == b1) {
            i++;
            j++;
            have_a = have_b = 0;
        }
        else if (a0 < b0 || (a0 == b0 && a1 < b1)) {
            if (PyList_Append(exits, a) < 0) {
                return -1;
            }
            i++;
            have_a = 0;
        }
        else {
            if (PyList_Append(enters, b) < 0) {
                return -1;
            }
            j++;
            have_b = 0;
        }
    }
    if (append_rest(exits, old, i) < 0 || append_rest(enters, new, j) < 0) {
        return -1;
    }
    return 1;
}

PyDoc_STRVAR(diff_sorted_doc,
"diff_sorted(old, new)\n--\n\n"
"The exits and the enters between two frames' sorted pairs, (exits, enters): the items of\n"
"``old`` not in ``new`` and those of ``new`` not in ``old``, each a new list of the lists'\n"
"own objects, in order; what ecs_spatial.pair_set.diff_sorted_reference answers or raises,\n"
"by one merge in C when both are lists of (int, int) tuples, else by calling it.");

static PyObject *
diff_sorted(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    if (reference == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "diff_sorted() before configure()");
        return NULL;
    }
    PyObject *old = nargs == 2 && kwnames == NULL ? args[0] : NULL; /* borrowed */
    PyObject *new = old == NULL ? NULL : args[1];                   /* borrowed */
    if (old != NULL && PyList_CheckExact(old) && PyList_CheckExact(new)) {
        PyObject *exits = PyList_New(0); /* new */
        PyObject *enters = exits == NULL ? NULL : PyList_New(0); /* new */
        int done = enters == NULL ? -1 : merge(old, new, exits, enters);
        if (done > 0) {
            PyObject *result = PyTuple_Pack(2, exits, enters); /* new */
            Py_DECREF(exits);
            Py_DECREF(enters);
            return result;
        }
        Py_XDECREF(exits);
        Py_XDECREF(enters);
        if (done < 0) {
            return NULL;
        }
    }
    /* The call as it came (keywords, any number of arguments), so that its errors are the
     * reference's too. The reference is held across it: it may run configure() again. */
    PyObject *fallback = reference;
    Py_INCREF(fallback);
    PyObject *result = PyObject_Vectorcall(fallback, args, (size_t)nargs, kwnames); /* new */
    Py_DECREF(fallback);
    return result;
}


/* Export ``obj``, the argument called ``name``, into ``view`` as the reference reads it: a
 * one-dimensional buffer of native int64 (format 'q') holding an even number of ints, any
 * stride. 0 with ``view`` held (the caller releases it), or -1 with the reference's error and
 * nothing held. The checks and their words are _flat_pairs()'s in pair_set.py, in its order:
 * memoryview(obj) exports with PyBUF_FULL_RO, so this does. */
static int
get_flat(PyObject *obj, const char *name, Py_buffer *view)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_FULL_RO) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
        /* An interned name: the type attribute cache keeps the name it was asked with, and a
         * fresh string each call would fill its slots with them (seen under ASan's malloc,
         * where no two of those strings share an address). */
        static PyObject *dunder_name = NULL;
        if (dunder_name == NULL && (dunder_name = PyUnicode_InternFromString("__name__")) == NULL) {
            return -1;
        }
        PyObject *type_name = PyObject_GetAttr((PyObject *)Py_TYPE(obj), dunder_name);
        if (type_name != NULL) { /* new */
            PyErr_Format(PyExc_TypeError,
                         "diff_sorted_flat() %s must be a buffer of int64 (format 'q'), "
                         "not %S", name, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    const char *format = view->format == NULL ? "B" : view->format;
    if (strcmp(format, "q") != 0 && strcmp(format, "@q") != 0) {
        PyErr_Format(PyExc_TypeError,
                     "diff_sorted_flat() %s must be a buffer of int64 (format 'q'), "
                     "not of format '%s'", name, format);
    }
    else if (view->ndim != 1) {
        PyErr_Format(PyExc_ValueError,
                     "diff_sorted_flat() %s must be one-dimensional, not %d-dimensional",
                     name, view->ndim);
    }
    else if (view->suboffsets != NULL) {
        PyErr_Format(PyExc_ValueError,
                     "diff_sorted_flat() %s must not be an indirect (suboffsets) buffer",
                     name);
    }
    else if (view->shape[0] % 2 != 0) {
        PyErr_Format(PyExc_ValueError,
                     "diff_sorted_flat() %s holds an odd number of ints (%zd): it must be "
                     "pairs flattened, a0, b0, a1, b1, ...", name, view->shape[0]);
    }
    else {
        return 0;
    }
    PyBuffer_Release(view);
    return -1;
}

/* The int at item ``i`` of a one-dimensional buffer of int64 (``stride`` bytes apart). */
static inline long long
flat_at(const char *buf, Py_ssize_t stride, Py_ssize_t i)
{
    long long x;
    memcpy(&x, buf + i * stride, sizeof x);
    return x;
}

/* Append the pair (a, b) to ``out`` as a new tuple of two ints: 0, or -1 with an error. */
static int
append_pair(PyObject *out, long long a, long long b)
{
    PyObject *pair = PyTuple_New(2); /* new */
    if (pair == NULL) {
        return -1;
    }
    PyObject *first = PyLong_FromLongLong(a); /* new, stolen by pair */
    if (first == NULL) {
        Py_DECREF(pair);
        return -1;
    }
    PyTuple_SET_ITEM(pair, 0, first);
    PyObject *second = PyLong_FromLongLong(b); /* new, stolen by pair */
    if (second == NULL) {
        Py_DECREF(pair);
        return -1;
    }
    PyTuple_SET_ITEM(pair, 1, second);
    int appended = PyList_Append(out, pair);
    Py_DECREF(pair);
    return appended;
}

/* The merge of the reference over two held flat buffers, into ``exits`` and ``enters``: 0,
 * or -1 with an error. The buffers stay exported throughout, so neither can be resized or
 * freed by what an allocation's collection runs; the ints are read afresh at each step. */
static int
merge_flat(const Py_buffer *old, const Py_buffer *new, PyObject *exits, PyObject *enters)
{
    const char *o = old->buf, *n = new->buf;
    Py_ssize_t so = old->strides == NULL ? old->itemsize : old->strides[0];
    Py_ssize_t sn = new->strides == NULL ? new->itemsize : new->strides[0];
    Py_ssize_t n_old = old->shape[0], n_new = new->shape[0];
    Py_ssize_t i = 0, j = 0;
    while (i < n_old && j < n_new) {
        long long a0 = flat_at(o, so, i), a1 = flat_at(o, so, i + 1);
        long long b0 = flat_at(n, sn, j), b1 = flat_at(n, sn, j + 1);
        if (a0 == b0 && a1 == b1) {
            i += 2;
            j += 2;
        }
        else if (a0 < b0 || (a0 == b0 && a1 < b1)) {
            if (append_pair(exits, a0, a1) < 0) {
                return -1;
            }
            i += 2;
        }
        else {
            if (append_pair(enters, b0, b1) < 0) {
                return -1;
            }
            j += 2;
        }
    }
    for (; i < n_old; i += 2) {
        if (append_pair(exits, flat_at(o, so, i), flat_at(o, so, i + 1)) < 0) {
            return -1;
        }
    }
    for (; j < n_new; j += 2) {
        if (append_pair(enters, flat_at(n, sn, j), flat_at(n, sn, j + 1)) < 0) {
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(diff_sorted_flat_doc,
"diff_sorted_flat(old, new)\n--\n\n"
"The exits and the enters between two frames' sorted pairs flattened into int64 buffers\n"
"(format 'q', a0, b0, a1, b1, ..., as QuadTree.find_all_intersections_array() gives them),\n"
"(exits, enters): the pairs of ``old`` not in ``new`` and those of ``new`` not in ``old``,\n"
"each a new sorted list of (a, b) tuples built for it; what\n"
"ecs_spatial.pair_set.diff_sorted_flat_reference answers or raises, by one merge in C that\n"
"builds no Python object for a pair both frames hold.");

static PyObject *
diff_sorted_flat(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    if (nargs != 2 || kwnames != NULL) {
        if (flat_reference == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "diff_sorted_flat() before configure()");
            return NULL;
        }
        /* Held across the call: it may run configure() again. */
        PyObject *fallback = flat_reference;
        Py_INCREF(fallback);
        PyObject *result = PyObject_Vectorcall(fallback, args, (size_t)nargs, kwnames); /* new */
        Py_DECREF(fallback);
        return result;
    }
    Py_buffer old, new;
    if (get_flat(args[0], "old", &old) < 0) {
        return NULL;
    }
    if (get_flat(args[1], "new", &new) < 0) {
        PyBuffer_Release(&old);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *exits = PyList_New(0); /* new */
    PyObject *enters = exits == NULL ? NULL : PyList_New(0); /* new */
    if (enters != NULL && merge_flat(&old, &new, exits, enters) == 0) {
        result = PyTuple_Pack(2, exits, enters); /* new */
    }
    Py_XDECREF(exits);
    Py_XDECREF(enters);
    PyBuffer_Release(&new);
    PyBuffer_Release(&old);
    return result;
}

/* An int that fits a long long, when ``obj`` is an exact int: 1 and *v; else 0, no error. */
static inline int
exact_int(PyObject *obj, long long *v)
{
    if (!PyLong_CheckExact(obj)) {
        return 0;
    }
    int overflow = 0;
    *v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    return !overflow;
}

typedef struct {
    long long a, b;
} Pair;

static inline int
pair_less(const Pair *p, const Pair *q)
{
    return p->a < q->a || (p->a == q->a && p->b < q->b);
}

/* Sort pairs in place (the core's merge sort: the comparison inline, where qsort's call a
 * comparison cost a quarter of a frame's diff at 1,000 touched entities). 0, or -1 and
 * MemoryError. */
DEFINE_SORT(sort_pairs, Pair, pair_less)

/* A growable array of pairs in PyMem memory. */
typedef struct {
    Pair *p;
    Py_ssize_t n, cap;
} Pairs;

static int
pairs_push(Pairs *s, long long a, long long b)
{
    if (s->n == s->cap) {
        Py_ssize_t cap = s->cap < 64 ? 64 : 2 * s->cap;
        Pair *grown = PyMem_Realloc(s->p, (size_t)cap * sizeof(Pair));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->p = grown;
        s->cap = cap;
    }
    s->p[s->n].a = a < b ? a : b;
    s->p[s->n].b = a < b ? b : a;
    s->n++;
    return 0;
}

/* Push each of the exact ints of the exact set ``others`` paired with ``e``: 1, 0 when an
 * item is not an exact int of 64 bits, -1 with an error. A set's iterator runs no Python. */
static int
push_partners(long long e, PyObject *others, Pairs *out)
{
    PyObject *it = PyObject_GetIter(others); /* new */
    if (it == NULL) {
        return -1;
    }
    int r = 1;
    PyObject *other;
    while (r > 0 && (other = PyIter_Next(it)) != NULL) { /* new; the set holds it too */
        long long o;
        r = !exact_int(other, &o) ? 0 : pairs_push(out, e, o) < 0 ? -1 : 1;
        Py_DECREF(other);
    }
    Py_DECREF(it);
    return r > 0 && PyErr_Occurred() ? -1 : r;
}

/* The stale pairs of a group given as a buffer of native int64 (format 'q', one
 * dimension, contiguous: an array('q') of the ids the frame moved, which spares building
 * a set of them), into ``out`` unsorted: 1, 0 when ``group`` is no such buffer or a
 * partner set is not an exact set, -1 with an error. The buffer stays held meanwhile: no
 * Python code can resize it (see stale_pairs). */
static int
stale_of_ids(PyObject *partners, PyObject *group, Pairs *out)
{
    Py_buffer view;
    if (PyObject_GetBuffer(group, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Clear(); /* not such a buffer: the reference takes it */
        return 0;
    }
    int r = view.ndim == 1 && view.itemsize == 8 && view.format != NULL
            && (strcmp(view.format, "q") == 0 || strcmp(view.format, "@q") == 0);
    const char *at = view.buf;
    for (Py_ssize_t i = 0; r > 0 && i < view.len / 8; i++) {
        int64_t e;
        memcpy(&e, at + 8 * i, 8);
        PyObject *key = PyLong_FromLongLong((long long)e); /* new */
        if (key == NULL) {
            r = -1;
            break;
        }
        PyObject *others = PyDict_GetItemWithError(partners, key); /* borrowed */
        Py_DECREF(key);
        if (others != NULL) {
            Py_INCREF(others);
            r = PyAnySet_CheckExact(others) ? push_partners((long long)e, others, out) : 0;
            Py_DECREF(others);
        }
        else if (PyErr_Occurred()) {
            r = -1;
        }
    }
    PyBuffer_Release(&view);
    return r;
}

/* The stale pairs, each entity of the exact sets (or int64 buffers: stale_of_ids) of
 * ``groups`` with each of its partners (an exact set of exact ints in the exact dict
 * ``partners``), into ``out`` sorted and without
 * repeats: 1 done, 0 when the input is not of those exact types, -1 with an error. Nothing
 * here runs Python code: the sets and the dict are exact and their keys exact ints, whose
 * hashing and comparison are C. */
static int
stale_pairs(PyObject *partners, PyObject *groups, Pairs *out)
{
    if (!PyDict_CheckExact(partners) || !PyTuple_CheckExact(groups)) {
        return 0;
    }
    for (Py_ssize_t g = 0; g < PyTuple_GET_SIZE(groups); g++) {
        PyObject *group = PyTuple_GET_ITEM(groups, g); /* borrowed */
        if (!PyAnySet_CheckExact(group)) {
            int r = PyObject_CheckBuffer(group) ? stale_of_ids(partners, group, out) : 0;
            if (r <= 0) {
                return r;
            }
            continue;
        }
        PyObject *it = PyObject_GetIter(group); /* new */
        if (it == NULL) {
            return -1;
        }
        int r = 1;
        PyObject *entity;
        while (r > 0 && (entity = PyIter_Next(it)) != NULL) { /* new */
            long long e;
            if (!exact_int(entity, &e)) {
                r = 0;
            }
            else {
                PyObject *others = PyDict_GetItemWithError(partners, entity); /* borrowed */
                if (others != NULL) {
                    Py_INCREF(others);
                    r = PyAnySet_CheckExact(others) ? push_partners(e, others, out) : 0;
                    Py_DECREF(others);
                }
                else if (PyErr_Occurred()) {
                    r = -1;
                }
            }
            Py_DECREF(entity);
        }
        Py_DECREF(it);
        if (r > 0 && PyErr_Occurred()) {
            r = -1;
        }
        if (r <= 0) {
            return r;
        }
    }
    if (out->n > 1) {
        if (sort_pairs(out->p, out->n) < 0) {
            return -1;
        }
        Py_ssize_t kept = 1;
        for (Py_ssize_t i = 1; i < out->n; i++) {
            if (out->p[i].a != out->p[kept - 1].a || out->p[i].b != out->p[kept - 1].b) {
                out->p[kept++] = out->p[i];
            }
        }
        out->n = kept;
    }
    return 1;
}

/* (a, b) as a new tuple of two new ints, or NULL with an error. */
static PyObject *
pair_tuple(long long a, long long b)
{
    PyObject *x = PyLong_FromLongLong(a); /* new */
    PyObject *y = x == NULL ? NULL : PyLong_FromLongLong(b); /* new */
    PyObject *t = y == NULL ? NULL : PyTuple_Pack(2, x, y); /* new */
    Py_XDECREF(x);
    Py_XDECREF(y);
    return t;
}

/* The merge of the sorted stale pairs with ``found``, an exact list of exact pairs strictly
 * increasing, into ``exits`` (new tuples) and ``enters`` (found's own items): 1 done, 0 when
 * ``found`` is not such a list (the lists then hold a partial answer), -1 with an error. */
static int
merge_touched(const Pairs *stale, PyObject *found, PyObject *exits, PyObject *enters)
{
    if (!PyList_CheckExact(found)) {
        return 0;
    }
    Py_ssize_t i = 0, j = 0, n = PyList_GET_SIZE(found);
    long long prev_a = 0, prev_b = 0;
    while (i < stale->n || j < n) {
        long long b0 = 0, b1 = 0;
        PyObject *item = j < n ? PyList_GET_ITEM(found, j) : NULL; /* borrowed */
        if (item != NULL) {
            if (!pair_key(item, &b0, &b1)
                || (j > 0 && !(prev_a < b0 || (prev_a == b0 && prev_b < b1)))) {
                return 0;
            }
        }
        const Pair *a = i < stale->n ? &stale->p[i] : NULL;
        if (a != NULL && item != NULL && a->a == b0 && a->b == b1) {
            i++;
        }
        else if (a != NULL && (item == NULL || a->a < b0 || (a->a == b0 && a->b < b1))) {
            PyObject *t = pair_tuple(a->a, a->b); /* new */
            if (t == NULL || PyList_Append(exits, t) < 0) {
                Py_XDECREF(t);
                return -1;
            }
            Py_DECREF(t);
            i++;
            continue;
        }
        else if (PyList_Append(enters, item) < 0) {
            return -1;
        }
        prev_a = b0;
        prev_b = b1;
        j++;
    }
    return 1;
}

PyDoc_STRVAR(diff_touched_doc,
"diff_touched(partners, groups, found)\n--\n\n"
"The exits and the enters of an incremental pair search, (exits, enters), each sorted: the\n"
"pairs that the entities of ``groups`` formed with their ``partners`` and that ``found``\n"
"does not hold, and the pairs of ``found`` they did not form; what\n"
"ecs_spatial.pair_set.diff_touched_reference answers or raises, in C when the groups are\n"
"sets of ints or buffers of int64 (an array('q')), the partners a dict of sets of ints and\n"
"``found`` a sorted list of (int, int) tuples, else by calling it.");

static PyObject *
diff_touched(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames)
{
    if (touched_reference == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "diff_touched() before configure()");
        return NULL;
    }
    if (nargs == 3 && kwnames == NULL) {
        Pairs stale = {NULL, 0, 0};
        int done = stale_pairs(args[0], args[1], &stale);
        PyObject *exits = NULL, *enters = NULL, *result = NULL;
        if (done > 0) {
            exits = PyList_New(0); /* new */
            enters = exits == NULL ? NULL : PyList_New(0); /* new */
            done = enters == NULL ? -1 : merge_touched(&stale, args[2], exits, enters);
        }
        if (done > 0) {
            result = PyTuple_Pack(2, exits, enters); /* new */
        }
        Py_XDECREF(exits);
        Py_XDECREF(enters);
        PyMem_Free(stale.p);
        if (done != 0) {
            return result; /* the answer, or NULL with its error */
        }
    }
    PyObject *fallback = touched_reference; /* held across the call, as diff_sorted()'s */
    Py_INCREF(fallback);
    PyObject *result = PyObject_Vectorcall(fallback, args, (size_t)nargs, kwnames); /* new */
    Py_DECREF(fallback);
    return result;
}

/* Whether ``list`` is an exact list of exact tuples of two exact ints: the input whose
 * hashing and comparison, as dict and set keys, run no Python code. */
static int
exact_pairs(PyObject *list)
{
    if (!PyList_CheckExact(list)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i); /* borrowed */
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2
            || !PyLong_CheckExact(PyTuple_GET_ITEM(item, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(item, 1))) {
            return 0;
        }
    }
    return 1;
}

/* ``b`` out of ``a``'s partners (``others = partners[a]; others.discard(b)``), and ``a``
 * dropped if none are left: 0, or -1 with an error (KeyError for an ``a`` without
 * partners, as ``partners[a]`` raises it). */
static int
drop_partner(PyObject *partners, PyObject *a, PyObject *b)
{
    PyObject *others = PyDict_GetItemWithError(partners, a); /* borrowed */
    if (others == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, a); /* an int: KeyError(a), as dict raises */
        }
        return -1;
    }
    Py_INCREF(others); /* held while a method of a set subclass may run Python code */
    int empty;
    if (PyAnySet_CheckExact(others)) {
        empty = PySet_Discard(others, b) < 0 ? -1 : PySet_GET_SIZE(others) == 0;
    }
    else {
        PyObject *done = PyObject_CallMethod(others, "discard", "O", b); /* new */
        int truth = done == NULL ? -1 : PyObject_IsTrue(others);
        Py_XDECREF(done);
        empty = truth < 0 ? -1 : !truth;
    }
    Py_DECREF(others);
    if (empty < 0) {
        return -1;
    }
    return empty ? PyDict_DelItem(partners, a) : 0;
}

/* ``b`` among ``a``'s partners (a new set if ``a`` had none): 0, or -1 with an error. */
static int
add_partner(PyObject *partners, PyObject *a, PyObject *b)
{
    PyObject *others = PyDict_GetItemWithError(partners, a); /* borrowed */
    if (others == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (others == NULL || others == Py_None) {
        PyObject *fresh = PySet_New(NULL); /* new */
        int r = fresh == NULL || PySet_Add(fresh, b) < 0
                || PyDict_SetItem(partners, a, fresh) < 0 ? -1 : 0;
        Py_XDECREF(fresh);
        return r;
    }
    Py_INCREF(others);
    int r;
    if (PyAnySet_CheckExact(others)) {
        r = PySet_Add(others, b);
    }
    else {
        PyObject *done = PyObject_CallMethod(others, "add", "O", b); /* new */
        r = done == NULL ? -1 : 0;
        Py_XDECREF(done);
    }
    Py_DECREF(others);
    return r;
}

PyDoc_STRVAR(apply_diff_doc,
"apply_diff(pairs, partners, exits, enters)\n--\n\n"
"Take a frame's exits out of pairs and put its enters in, then (unless partners is None)\n"
"the same in each id's partners: what ecs_spatial.pair_set.apply_diff_reference does, the\n"
"same steps in the same order, in C for an exact dict of pairs (and of partners), and\n"
"exact lists of exact tuples of two exact ints; the reference takes anything else.");

static PyObject *
apply_diff(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    if (apply_reference == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "apply_diff() before configure()");
        return NULL;
    }
    if (!(nargs == 4 && kwnames == NULL && PyDict_CheckExact(args[0])
          && (args[1] == Py_None || PyDict_CheckExact(args[1]))
          && exact_pairs(args[2]) && exact_pairs(args[3]))) {
        PyObject *fallback = apply_reference; /* held across the call */
        Py_INCREF(fallback);
        PyObject *result = PyObject_Vectorcall(fallback, args, (size_t)nargs, kwnames);
        Py_DECREF(fallback);
        return result; /* new */
    }
    PyObject *pairs = args[0], *partners = args[1], *exits = args[2], *enters = args[3];
    /* The lists' items are exact tuples of exact ints, whose hashes and comparisons run no
     * Python code: only a partner set of a subclass (never made by pair_set) can, and
     * each item is held while it is used. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(exits); i++) {
        if (PyDict_DelItem(pairs, PyList_GET_ITEM(exits, i)) < 0) {
            return NULL;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(enters); i++) {
        if (PyDict_SetItem(pairs, PyList_GET_ITEM(enters, i), Py_None) < 0) {
            return NULL;
        }
    }
    if (partners == Py_None) {
        Py_RETURN_NONE;
    }
    for (int which = 0; which < 2; which++) {
        PyObject *list = which ? enters : exits;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
            PyObject *pair = PyList_GET_ITEM(list, i); /* borrowed */
            Py_INCREF(pair);
            PyObject *a = PyTuple_GET_ITEM(pair, 0), *b = PyTuple_GET_ITEM(pair, 1);
            int r = which ? add_partner(partners, a, b) : drop_partner(partners, a, b);
            if (r == 0) {
                r = which ? add_partner(partners, b, a) : drop_partner(partners, b, a);
            }
            Py_DECREF(pair);
            if (r < 0) {
                return NULL;
            }
        }
    }
    Py_RETURN_NONE;
}


PyDoc_STRVAR(deliver_pairs_doc,
"deliver_pairs(cursor, keys, registry, name, handlers, only, entities, dead, silent, space,\n"
"slot, database, role, fresh, /)\n--\n\n"
"The hot loop of ecs_spatial.delivery.Outbox._deliver_batch for a batch of pairs whose event\n"
"has one handler, compiled: the same steps in the same order for each position the range\n"
"iterator cursor yields (the deletion rule against entities and dead, the silent exits, the\n"
"look-up of name in registry, the weak reference only called, the handler called with the\n"
"pair's two ids, space[slot] compared with database). role: 0 exit, 1 enter, 2 stay.\n"
"fresh: None, or (stamp, key) for a batch whose keys' entities all existed while esper's\n"
"component cache (space's _get_component_cache) held stamp for key: where it still does,\n"
"with esper's _cache_dirty not set and dead empty, they all still exist, and the deletion\n"
"rule passes without its look-ups.\n"
"Returns -1 when the cursor is exhausted, -2 right after a handler call that left another\n"
"database current (the caller raises Replaced), or the position of an event that passed\n"
"the deletion rule but found the handlers changed, nothing called for it (the caller\n"
"delivers it and goes on). An exception of a handler propagates, the cursor just past\n"
"its event.");

/* Whether no entity has left esper's tables since ``stamp`` became the list its component
 * cache (``space``'s ``_get_component_cache``) holds for ``key`` (_esper_tables.world_stamp):
 * esper marks its caches stale (``_cache_dirty``, or clears them at once) at every creation
 * and deletion of an entity and every change of one's components, and only a clear that
 * drops the stamp unmarks them; a list made later for the key is another object (the
 * caller holds the stamp). An esper without these globals never passes. The look-ups are of
 * interned strings, and of a type in a dict keyed by types: no Python code runs for them
 * (unless a component type's metaclass defines __eq__ and __hash__, which esper's own
 * look-ups of that dict run too). 1 or 0, or -1 with an error. */
static int
stamp_holds(PyObject *space, PyObject *key, PyObject *stamp)
{
    static PyObject *dirty_name, *cache_name;
    if (dirty_name == NULL && (dirty_name = PyUnicode_InternFromString("_cache_dirty")) == NULL) {
        return -1;
    }
    if (cache_name == NULL
        && (cache_name = PyUnicode_InternFromString("_get_component_cache")) == NULL) {
        return -1;
    }
    PyObject *dirty = PyDict_GetItemWithError(space, dirty_name); /* borrowed */
    if (dirty == NULL ? PyErr_Occurred() != NULL : dirty != Py_False) {
        return dirty == NULL ? -1 : 0;
    }
    PyObject *cache = PyDict_GetItemWithError(space, cache_name); /* borrowed */
    if (cache == NULL || !PyDict_CheckExact(cache)) {
        return cache == NULL && PyErr_Occurred() ? -1 : 0;
    }
    PyObject *now = PyDict_GetItemWithError(cache, key); /* borrowed, compared only */
    if (now == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    return now == stamp;
}

static PyObject *
deliver_pairs(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "deliver_pairs() takes 14 positional arguments");
        return NULL;
    }
    /* All borrowed from the caller, which holds them for the call. */
    PyObject *cursor = args[0], *keys = args[1], *registry = args[2], *name = args[3];
    PyObject *handlers = args[4], *only = args[5], *entities = args[6], *dead = args[7];
    PyObject *silent = args[8], *space = args[9], *slot = args[10], *database = args[11];
    PyObject *fresh = args[13];
    long role = PyLong_AsLong(args[12]);
    if (role == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (!(PyIter_Check(cursor) && PyList_CheckExact(keys) && PyDict_CheckExact(registry)
          && PyDict_Check(entities) && PyAnySet_Check(dead) && PySet_CheckExact(silent)
          && PyDict_Check(space) && role >= 0 && role <= 2
          && (fresh == Py_None || (PyTuple_CheckExact(fresh) && PyTuple_GET_SIZE(fresh) == 2)))) {
        PyErr_SetString(PyExc_TypeError, "deliver_pairs(): arguments of the wrong types");
        return NULL;
    }
    int is_exit = role == 0, is_enter = role == 1;
    /* borrowed from fresh, which the caller holds */
    PyObject *stamp = fresh == Py_None ? NULL : PyTuple_GET_ITEM(fresh, 0);
    PyObject *stamp_key = fresh == Py_None ? NULL : PyTuple_GET_ITEM(fresh, 1);
    PyObject *item;
    while ((item = PyIter_Next(cursor)) != NULL) {
        Py_ssize_t i = PyLong_AsSsize_t(item);
        Py_DECREF(item);
        if (i == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (i < 0 || i >= PyList_GET_SIZE(keys)) {
            PyErr_SetString(PyExc_IndexError, "deliver_pairs(): position out of the keys");
            return NULL;
        }
        PyObject *key = PyList_GET_ITEM(keys, i); /* borrowed, held below while used */
        if (!(PyTuple_CheckExact(key) && PyTuple_GET_SIZE(key) == 2)) {
            PyErr_SetString(PyExc_TypeError, "deliver_pairs(): a key that is not a pair");
            return NULL;
        }
        Py_INCREF(key);
        PyObject *a = PyTuple_GET_ITEM(key, 0), *b = PyTuple_GET_ITEM(key, 1);
        int r;
        if (is_exit) {
            if (PySet_GET_SIZE(silent)) {
                r = PySet_Discard(silent, key); /* `key in silent`, then discard: one step */
                if (r != 0) {
                    Py_DECREF(key);
                    if (r < 0) {
                        return NULL;
                    }
                    continue;
                }
            }
        }
        else {
            /* The deletion rule: the batch's stamp proves it (asked at every event: a
             * handler, or a finaliser run by a release above, may have changed the world),
             * or the look-ups of delivery.exist (inlined) decide, in esper's entity table,
             * which is cold by now in a large world. */
            int alive = 0;
            if (stamp != NULL && PySet_GET_SIZE(dead) == 0) {
                alive = stamp_holds(space, stamp_key, stamp);
            }
            if (alive == 0) {
                alive = PyDict_Contains(entities, a);
                if (alive > 0) {
                    alive = PyDict_Contains(entities, b);
                }
            }
            if (alive > 0 && PySet_GET_SIZE(dead)) {
                int gone = PySet_Contains(dead, a);
                if (gone == 0) {
                    gone = PySet_Contains(dead, b);
                }
                alive = gone < 0 ? -1 : !gone;
            }
            if (alive < 0) {
                Py_DECREF(key);
                return NULL;
            }
            if (!alive) {
                r = is_enter ? PySet_Add(silent, key) : 0;
                Py_DECREF(key);
                if (r < 0) {
                    return NULL;
                }
                continue;
            }
            if (!is_enter && PySet_GET_SIZE(silent)) {
                r = PySet_Contains(silent, key);
                if (r != 0) {
                    Py_DECREF(key);
                    if (r < 0) {
                        return NULL;
                    }
                    continue;
                }
            }
        }
        PyObject *now = PyDict_GetItemWithError(registry, name); /* borrowed */
        if (now != handlers) {
            Py_DECREF(key);
            if (now == NULL && PyErr_Occurred()) {
                return NULL;
            }
            return PyLong_FromSsize_t(i);
        }
        Py_ssize_t count = PyObject_Size(now);
        if (count != 1) {
            Py_DECREF(key);
            if (count < 0) {
                return NULL;
            }
            return PyLong_FromSsize_t(i);
        }
        PyObject *handler = PyObject_CallNoArgs(only); /* new */
        if (handler == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        if (handler != Py_None) {
            PyObject *pair[2] = {a, b};
            PyObject *result = PyObject_Vectorcall(handler, pair, 2, NULL);
            Py_DECREF(handler);
            Py_DECREF(key);
            if (result == NULL) {
                return NULL;
            }
            Py_DECREF(result);
            PyObject *current = PyDict_GetItemWithError(space, slot); /* borrowed */
            if (current != database) {
                if (current == NULL) {
                    if (!PyErr_Occurred()) {
                        PyErr_SetObject(PyExc_KeyError, slot);
                    }
                    return NULL;
                }
                return PyLong_FromLong(-2);
            }
        }
        else {
            Py_DECREF(handler);
            Py_DECREF(key);
        }
    }
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLong(-1);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, configure_doc},
    {"diff_sorted", (PyCFunction)(void (*)(void))diff_sorted, METH_FASTCALL | METH_KEYWORDS,
     diff_sorted_doc},
    {"diff_sorted_flat", (PyCFunction)(void (*)(void))diff_sorted_flat,
     METH_FASTCALL | METH_KEYWORDS, diff_sorted_flat_doc},
    {"diff_touched", (PyCFunction)(void (*)(void))diff_touched, METH_FASTCALL | METH_KEYWORDS,
     diff_touched_doc},
    {"apply_diff", (PyCFunction)(void (*)(void))apply_diff, METH_FASTCALL | METH_KEYWORDS,
     apply_diff_doc},
    {"deliver_pairs", (PyCFunction)(void (*)(void))deliver_pairs, METH_FASTCALL,
     deliver_pairs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ecs_spatial._cpair_set",
    .m_doc = "The pair diff of pair_set.py, compiled (see pair_set.diff_sorted_reference).",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__cpair_set(void)
{
    return PyModuleDef_Init(&module);
}
