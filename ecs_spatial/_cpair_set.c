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
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The reference, pair_set.diff_sorted_reference: what configure() took (owned), the
 * fallback for anything the fast path does not take. */
static PyObject *reference = NULL;

PyDoc_STRVAR(configure_doc,
"configure(reference)\n\n"
"Take the Python merge that diff_sorted() falls back to for input the fast path does not\n"
"take. Called once, by ecs_spatial.pair_set.");

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *fallback)
{
    if (!PyCallable_Check(fallback)) {
        PyErr_Format(PyExc_TypeError, "configure() takes a callable, got %.200s",
                     Py_TYPE(fallback)->tp_name);
        return NULL;
    }
    PyObject *old = reference;
    Py_INCREF(fallback);
    reference = fallback;
    Py_XDECREF(old); /* last: a finaliser may run, and find the new one in place */
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
"diff_sorted(old, new)\n\n"
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

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, configure_doc},
    {"diff_sorted", (PyCFunction)(void (*)(void))diff_sorted, METH_FASTCALL | METH_KEYWORDS,
     diff_sorted_doc},
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
