/* records.c: reading what a caller passes: ids, boxes, points, buffers, records, arguments (by
 * the reference's signatures), and the reference's errors for them.
 *
 * The twin of ecs_spatial/_records.py.
 */

#include "records.h"
#include "constants.h"
#include "geometry.h"
#include "tree_storage.h"
#include "quadtree.h"

/* A Box of these (valid) coordinates, built as tuple.__new__(Box, ...) builds one
 * (_records.to_box): no second validation. New reference. */
QT_API PyObject *
make_box(double x0, double y0, double x1, double y1)
{
    PyObject *items[4] = {PyFloat_FromDouble(x0), PyFloat_FromDouble(y0),
                          PyFloat_FromDouble(x1), PyFloat_FromDouble(y1)};
    PyObject *box = NULL;
    if (items[0] != NULL && items[1] != NULL && items[2] != NULL && items[3] != NULL) {
        PyTypeObject *type = (PyTypeObject *)BoxType;
        box = type->tp_alloc(type, 4);
    }
    if (box == NULL) {
        for (int i = 0; i < 4; i++) {
            Py_XDECREF(items[i]);
        }
        return NULL;
    }
    for (int i = 0; i < 4; i++) {
        PyTuple_SET_ITEM(box, i, items[i]); /* steals the new reference */
    }
    return box;
}

/* An array('q') of these ids (copied): an answer with no Python object per id. New
 * reference, or NULL with an error. */
QT_API PyObject *
id_array(const int64_t *ids, Py_ssize_t n)
{
    PyObject *result = PyObject_CallFunction(array_array, "s", "q"); /* new: array('q') */
    if (result == NULL || n == 0) {
        return result;
    }
    PyObject *view = PyMemoryView_FromMemory((char *)ids, n * (Py_ssize_t)sizeof(int64_t),
                                             PyBUF_READ); /* new, over ids */
    PyObject *done = view == NULL ? NULL : PyObject_CallMethod(result, "frombytes", "O", view);
    if (view != NULL) {
        PyObject *released = PyObject_CallMethod(view, "release", NULL);
        Py_XDECREF(released);
    }
    Py_XDECREF(view);
    if (done == NULL) {
        Py_CLEAR(result);
    }
    Py_XDECREF(done);
    return result;
}

/* A list of these ids. New reference. */
QT_API PyObject *
id_list(const int64_t *ids, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyLong_FromLongLong(ids[i]);
        if (id == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, id); /* steals */
    }
    return list;
}

/* _records.entity_id: the int an entity value is stored as (an int as itself, an
 * integer-like value such as a numpy integer as its int), or NULL and the reference's
 * TypeError. New reference. */
QT_API PyObject *
stored_id(PyObject *entity)
{
    if (PyLong_CheckExact(entity)) {
        Py_INCREF(entity);
        return entity;
    }
    return PyObject_CallOneArg(ref_entity_id, entity);
}

/* 1 and *out if the int fits in 64 bits, 0 if it does not (no error set), -1 on error. */
QT_API int
int64_of(PyObject *integer, int64_t *out)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(integer, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

/* The slot of a value looked up (_records.lookup_id's rule: a value that is no id is in no
 * index): a slot, NO_SLOT if absent, or -2 with an error. */
QT_API int32_t
lookup_slot(const Tree *t, PyObject *entity)
{
    int64_t id;
    int fit;
    if (PyLong_CheckExact(entity)) {
        fit = int64_of(entity, &id);
    }
    else {
        PyObject *key = PyObject_CallOneArg(ref_lookup_id, entity); /* new: an int or None */
        if (key == NULL) {
            return -2;
        }
        fit = key == Py_None ? 0 : int64_of(key, &id);
        Py_DECREF(key);
    }
    if (fit < 0) {
        return -2;
    }
    return fit ? find_slot(t, id) : NO_SLOT;
}

/* Raise _records.missing(entity), the KeyError of a lookup that found nothing. NULL. */
QT_API PyObject *
raise_missing(PyObject *entity)
{
    PyObject *error = PyObject_CallOneArg(ref_missing, entity); /* new */
    if (error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
    }
    return NULL;
}

/* Raise _records.out_of_range(integer), the OverflowError of an id to store outside the
 * 64-bit range of ids (both classes' rule; a lookup of one finds nothing). NULL. */
QT_API PyObject *
raise_id_range(PyObject *integer)
{
    PyObject *error = PyObject_CallOneArg(ref_out_of_range, integer); /* new */
    if (error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
    }
    return NULL;
}

/* Four floats read from a tuple of them, checked to be a valid box. 0, or -1 and an error. */
QT_API int
read_box(PyObject *tuple, double c[4])
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != 4) {
        PyErr_SetString(PyExc_SystemError, "_records.coords returned no 4-tuple");
        return -1;
    }
    for (int i = 0; i < 4; i++) {
        c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (c[i] == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    if (!valid_box(c)) {
        PyErr_SetString(PyExc_SystemError, "_records.coords returned an invalid box");
        return -1;
    }
    return 0;
}

/* _records.coords: four valid floats from any box value (an int or another real number as
 * the nearest float), or -1 and the reference's error, naming `entity` if it is not NULL. */
QT_API int
box_any(PyObject *box, PyObject *entity, double c[4])
{
    if (box_fast(box, c)) {
        return 0;
    }
    PyObject *coords = entity == NULL ? PyObject_CallOneArg(ref_coords, box)
                                      : PyObject_CallFunctionObjArgs(ref_coords, box, entity, NULL);
    if (coords == NULL) {
        return -1;
    }
    int r = read_box(coords, c);
    Py_DECREF(coords);
    return r;
}

/* The reference's error for a box of four floats that is not valid. -1. */
QT_API int
raise_box_error(const double c[4], int64_t id)
{
    PyObject *box = Py_BuildValue("(dddd)", c[0], c[1], c[2], c[3]);
    PyObject *entity = PyLong_FromLongLong(id);
    double ignored[4];
    if (box != NULL && entity != NULL && box_any(box, entity, ignored) == 0) {
        PyErr_SetString(PyExc_SystemError, "_records.coords accepted an invalid box");
    }
    Py_XDECREF(box);
    Py_XDECREF(entity);
    return -1;
}

/* Two finite floats from `x` and `y`: at once where both are finite floats, else through
 * the reference's checker `check` (named `what` if it misbehaves), which returns the pair or
 * raises its error. 0, or -1 and that error. */
static int
two_finite(PyObject *x, PyObject *y, PyObject *check, const char *what, double *fx, double *fy)
{
    if (PyFloat_CheckExact(x) && PyFloat_CheckExact(y)) {
        *fx = PyFloat_AS_DOUBLE(x);
        *fy = PyFloat_AS_DOUBLE(y);
        if (-INFINITY < *fx && *fx < INFINITY && -INFINITY < *fy && *fy < INFINITY) {
            return 0;
        }
    }
    PyObject *pair = PyObject_CallFunctionObjArgs(check, x, y, NULL); /* new */
    if (pair == NULL) {
        return -1;
    }
    int r = -1;
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_SystemError, "%s returned no pair", what);
    }
    else {
        *fx = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 0));
        *fy = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 1));
        r = PyErr_Occurred() ? -1 : 0;
    }
    Py_DECREF(pair);
    return r;
}

/* _records.point: a query point as two finite floats, or -1 and the reference's error. */
QT_API int
point_any(PyObject *x, PyObject *y, double *fx, double *fy)
{
    return two_finite(x, y, ref_point, "_records.point", fx, fy);
}

/* geometry.motion_floats: a cast's motion as two finite floats, or -1 and the reference's
 * error. */
QT_API int
motion_any(PyObject *dx, PyObject *dy, double *fdx, double *fdy)
{
    return two_finite(dx, dy, ref_motion, "geometry.motion_floats", fdx, fdy);
}

/* `value` if it is a float, else geometry.to_float(value, what). 0, or -1 and its error. */
QT_API int
float_arg(PyObject *value, const char *what, double *out)
{
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return 0;
    }
    PyObject *number = PyObject_CallFunction(ref_to_float, "Os", value, what); /* new */
    if (number == NULL) {
        return -1;
    }
    *out = PyFloat_AsDouble(number);
    Py_DECREF(number);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* A C-contiguous buffer of 8-byte signed ints (want_double 0: array('q'), a numpy int64
 * array) or of doubles (want_double 1): 1 with the view held (release it), 0 if `obj` is no
 * such buffer (nothing held, no error). */
QT_API int
typed_buffer(PyObject *obj, Py_buffer *view, int want_double)
{
    if (!PyObject_CheckBuffer(obj)) {
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *f = view->format != NULL ? view->format : "B";
    if (*f == '@' || *f == '=' || (*f == '<' && PY_LITTLE_ENDIAN) || (*f == '>' && !PY_LITTLE_ENDIAN)
        || (*f == '!' && !PY_LITTLE_ENDIAN)) {
        f++;
    }
    int ok = view->itemsize == 8 && f[0] != '\0' && f[1] == '\0'
             && (want_double ? f[0] == 'd' : (f[0] == 'q' || f[0] == 'l' || f[0] == 'n'));
    if (!ok) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* How many boxes a buffer of doubles holds (4 floats each, flat or as rows of 4), or -1 and
 * ValueError. */
QT_API Py_ssize_t
boxes_in(const Py_buffer *view, const char *method)
{
    Py_ssize_t floats = view->len / 8;
    if ((view->ndim <= 1 && floats % 4 == 0) || (view->ndim == 2 && view->shape[1] == 4)) {
        return floats / 4;
    }
    PyErr_Format(PyExc_ValueError,
                 "%s: a buffer of boxes holds 4 floats per box (flat, or rows of 4), got %zd "
                 "floats in %d dimension(s)", method, floats, view->ndim);
    return -1;
}

/* Raise the TypeError that the reference's method raises for these arguments. -1. */
QT_API int
signature_error(const char *method, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *func = PyObject_GetAttrString(ref_tree, method); /* new */
    PyObject **stack = func == NULL ? NULL : PyMem_Malloc((size_t)(1 + nargs + n_kw) * sizeof(PyObject *));
    if (stack == NULL) {
        if (func != NULL) {
            PyErr_NoMemory();
        }
        Py_XDECREF(func);
        return -1;
    }
    stack[0] = Py_None; /* self: the interpreter refuses the arguments before any use of it */
    if (nargs + n_kw > 0) {
        memcpy(stack + 1, args, (size_t)(nargs + n_kw) * sizeof(PyObject *));
    }
    PyObject *result = PyObject_Vectorcall(func, stack, (size_t)(1 + nargs), kwnames); /* new */
    PyMem_Free(stack);
    Py_DECREF(func);
    if (result != NULL || !PyErr_ExceptionMatches(PyExc_TypeError)) {
        /* the reference took them: this parser and the reference's signature disagree */
        Py_XDECREF(result);
        PyErr_Clear();
        PyErr_Format(PyExc_SystemError, "QuadTree.%s: the arguments bind here differently "
                     "from the reference's signature", method);
    }
    return -1;
}

/* Bind a call's arguments to p: out[i] the value given for names[i] (borrowed), NULL where
 * its default stands. 0, or -1 and the reference's TypeError (signature_error). */
QT_API int
bind(const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out)
{
    for (int i = 0; i < p->n; i++) {
        out[i] = i < nargs ? args[i] : NULL;
    }
    if (nargs > p->positional) {
        return signature_error(p->method, args, nargs, kwnames);
    }
    Py_ssize_t n_kw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < n_kw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j); /* a str: the interpreter checks */
        int i = 0;
        while (i < p->n && PyUnicode_CompareWithASCIIString(key, p->names[i]) != 0) {
            i++;
        }
        if (i == p->n || out[i] != NULL) { /* unknown, or given twice */
            return signature_error(p->method, args, nargs, kwnames);
        }
        out[i] = args[nargs + j];
    }
    for (int i = 0; i < p->required; i++) {
        if (out[i] == NULL) {
            return signature_error(p->method, args, nargs, kwnames);
        }
    }
    return 0;
}

/* bind() for a call given as a tuple and a dict (tp_init's): out[i] borrowed from them. */
QT_API int
bind_tuple(const Params *p, PyObject *args, PyObject *kwds, PyObject **out)
{
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), n_kw = kwds == NULL ? 0 : PyDict_Size(kwds);
    if (n_kw == 0) {
        return bind(p, PySequence_Fast_ITEMS(args), nargs, NULL, out);
    }
    PyObject **stack = PyMem_Malloc((size_t)(nargs + n_kw) * sizeof(PyObject *));
    PyObject *kwnames = PyTuple_New(n_kw); /* new */
    int r = -1;
    if (stack == NULL || kwnames == NULL) {
        if (stack == NULL) {
            PyErr_NoMemory();
        }
    }
    else {
        PyObject *key, *value; /* borrowed */
        Py_ssize_t pos = 0, j = 0;
        for (Py_ssize_t i = 0; i < nargs; i++) {
            stack[i] = PyTuple_GET_ITEM(args, i);
        }
        while (j < n_kw && PyDict_Next(kwds, &pos, &key, &value)) {
            Py_INCREF(key);
            PyTuple_SET_ITEM(kwnames, j, key); /* steals the reference just taken */
            stack[nargs + j++] = value;
        }
        r = bind(p, stack, nargs, kwnames, out);
    }
    PyMem_Free(stack);
    Py_XDECREF(kwnames);
    return r;
}

/* zip(entities, boxes, strict=True): the reference's pairing, with its errors. New. */
QT_API PyObject *
zip_strict(PyObject *entities, PyObject *boxes)
{
    PyObject *args = PyTuple_Pack(2, entities, boxes);
    PyObject *kwargs = Py_BuildValue("{s:O}", "strict", Py_True);
    PyObject *zipped = NULL;
    if (args != NULL && kwargs != NULL) {
        zipped = PyObject_Call(builtin_zip, args, kwargs);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    return zipped;
}

/* Whether the current exception is zip()'s "... is shorter/longer than ..." ValueError. */
QT_API int
is_zip_length_error(void)
{
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) {
        return 0;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    int yes = 0;
    PyObject *text = value != NULL ? PyObject_Str(value) : NULL;
    if (text != NULL) {
        /* str(error).startswith("zip()") */
        yes = PyUnicode_Check(text) && PyUnicode_GET_LENGTH(text) >= 5
              && PyUnicode_READ_CHAR(text, 0) == 'z' && PyUnicode_READ_CHAR(text, 1) == 'i'
              && PyUnicode_READ_CHAR(text, 2) == 'p' && PyUnicode_READ_CHAR(text, 3) == '('
              && PyUnicode_READ_CHAR(text, 4) == ')';
        Py_DECREF(text);
    }
    else {
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
    return yes;
}

/* Read a processor's record (min_x, min_y, max_x, max_y, entity): its shape, its id's
 * type, then (if `storing`) its id's range, then its box, as the reference reads them. 1
 * with the id and box; 0 for an id past 64 bits read for a lookup (no error set: no such
 * entity is present), with *id 0 and the box; or -1 and an error. */
QT_API int
read_record(PyObject *rec, int storing, int64_t *id, double c[4], PyObject **entity)
{
    *entity = NULL;
    if (!PyTuple_Check(rec) || PyTuple_GET_SIZE(rec) != 5) {
        PyErr_Format(PyExc_TypeError,
                     "records are (min_x, min_y, max_x, max_y, entity) tuples, got %R", rec);
        return -1;
    }
    *entity = stored_id(PyTuple_GET_ITEM(rec, 4)); /* new */
    if (*entity == NULL) {
        return -1;
    }
    int fit = int64_of(*entity, id);
    if (fit < 0 || (fit == 0 && storing)) {
        if (fit == 0) {
            raise_id_range(*entity);
        }
        return -1;
    }
    if (fit == 0) {
        *id = 0;
    }
    /* The processor's records hold four floats: read them in place (the slice and the
     * generic reading below are a large part of the processor's move: see docs/design.md#decisions). */
    int floats = 1;
    for (int i = 0; i < 4 && floats; i++) {
        PyObject *item = PyTuple_GET_ITEM(rec, i); /* borrowed */
        floats = PyFloat_CheckExact(item);
        c[i] = floats ? PyFloat_AS_DOUBLE(item) : 0.0;
    }
    if (floats && valid_box(c)) {
        return fit;
    }
    PyObject *coords = PyTuple_GetSlice(rec, 0, 4); /* new */
    if (coords == NULL) {
        return -1;
    }
    int r = box_any(coords, *entity, c);
    Py_DECREF(coords);
    return r < 0 ? -1 : fit;
}

/* move_many's error, as the reference rewrites it: the length error named for the method,
 * and with atomic=False a note that the moves before it stand. */
QT_API void
rewrite_batch_error(const char *method, int atomic)
{
    const char *kept = atomic ? "" : " (move_many stopped there: the moves before it stand)";
    if (is_zip_length_error()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, MSG_LENGTHS_DIFFER, method, kept);
        return;
    }
    if (atomic || !(PyErr_ExceptionMatches(PyExc_KeyError) || PyErr_ExceptionMatches(PyExc_TypeError)
                    || PyErr_ExceptionMatches(PyExc_ValueError))) {
        return;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    /* message = error.args[0] if len(error.args) == 1 else str(error) */
    PyObject *args = value != NULL ? PyObject_GetAttrString(value, "args") : NULL;
    PyObject *message = NULL;
    if (args != NULL && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1) {
        message = PyTuple_GET_ITEM(args, 0);
        Py_INCREF(message);
    }
    else if (value != NULL) {
        message = PyObject_Str(value);
    }
    Py_XDECREF(args);
    PyObject *text = message != NULL ? PyUnicode_FromFormat("%S%s", message, kept) : NULL;
    Py_XDECREF(message);
    if (text == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return; /* the error of building the message stands */
    }
    PyObject *error = PyObject_CallOneArg(type, text); /* type(error)(f"{message}{kept}") */
    Py_DECREF(text);
    if (error != NULL) {
        PyErr_SetObject(type, error);
        Py_DECREF(error);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}
