/* wrap.c: wrap-around (toroidal) worlds: the period of a wrapped tree and the arithmetic of
 * its canonical boxes, points and images (issue 28).
 *
 * The twin of ecs_spatial/_wrap.py (see wrap.h).
 */

#include "wrap.h"
#include "containers.h"
#include "quadtree.h"

/* _wrap.period_of: the period a wrap= value gives, into period; 0, or -1 and the
 * reference's error naming the value. */
QT_API int
period_of(PyObject *value, double period[6])
{
    PyObject *got = PyObject_CallOneArg(ref_period_of, value); /* new: 6 floats */
    if (got == NULL) {
        return -1;
    }
    int r = -1;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 6) {
        PyErr_SetString(PyExc_SystemError, "_wrap.period_of returned no period");
    }
    else {
        r = 0;
        for (int i = 0; i < 6 && r == 0; i++) {
            period[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(got, i));
            r = period[i] == -1.0 && PyErr_Occurred() ? -1 : 0;
        }
    }
    Py_DECREF(got);
    return r;
}

/* The period as the reference keeps it, a tuple of 6 floats. New reference. */
QT_API PyObject *
period_tuple(const double period[6])
{
    return Py_BuildValue("(dddddd)", period[0], period[1], period[2], period[3], period[4],
                         period[5]);
}

/* canonical()'s refusal: _wrap.canonical's own error for the box c of entity (or of the int
 * id when entity is NULL). -1, with the error set. */
QT_API int
raise_canonical(const double period[6], const double c[4], PyObject *entity, int64_t id)
{
    PyObject *key = entity != NULL ? (Py_INCREF(entity), entity) : PyLong_FromLongLong(id);
    PyObject *p = key == NULL ? NULL : period_tuple(period); /* new */
    PyObject *got = p == NULL ? NULL
                              : PyObject_CallFunction(ref_canonical, "ddddOO", c[0], c[1], c[2],
                                                      c[3], key, p); /* new */
    Py_XDECREF(key);
    Py_XDECREF(p);
    if (got != NULL) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_SystemError, "_wrap.canonical took a box the core refused");
    }
    return -1;
}

/* _wrap.wrap_point: the canonical image of a checked point, in place; 0, or -1 and the
 * reference's ValueError for a point with no image. */
QT_API int
wrap_point(const double period[6], double *x, double *y)
{
    double cx = wrap_coord(*x, period[0], period[2], period[4]);
    double cy = wrap_coord(*y, period[1], period[3], period[5]);
    if (cx == cx && cy == cy) {
        *x = cx;
        *y = cy;
        return 0;
    }
    PyObject *p = period_tuple(period); /* new */
    PyObject *got = p == NULL ? NULL : PyObject_CallFunction(ref_wrap_point, "ddO", *x, *y, p);
    Py_XDECREF(p);
    if (got != NULL) {
        Py_DECREF(got);
        PyErr_SetString(PyExc_SystemError, "_wrap.wrap_point took a point the core refused");
    }
    return -1;
}

/* _wrap.query_intervals: the plain intervals that stand for the wrapped interval [lo, hi]
 * (checked, any size), into out; their number (1 to 3). The whole axis when it is as wide
 * as the period or wider, else its canonical image shifted by 0, +p and (when it reaches
 * the seam, _wrap.image_shifts) -p. */
QT_API int
query_intervals(double lo, double hi, double origin, double p, double end, double out[3][2])
{
    double c = hi - lo >= p ? NAN : wrap_coord(lo, origin, p, end);
    if (c != c) {
        out[0][0] = -DBL_MAX;
        out[0][1] = DBL_MAX;
        return 1;
    }
    double d = c + (hi - lo);
    const double shifts[3] = {0.0, p, -p};
    int n = d >= end || d - p >= origin ? 3 : 2;
    for (int i = 0; i < n; i++) {
        out[i][0] = c + shifts[i];
        out[i][1] = d + shifts[i];
    }
    return n;
}

/* _tree_queries._check_wrapped_radius: refuse a radius over half the smaller period, with
 * the reference's text (led by "point i: " when point >= 0, as query_radius_many's).
 * 0, or -1 and the ValueError. */
QT_API int
check_wrapped_radius(const double period[6], double r, Py_ssize_t point)
{
    double half = (period[3] < period[2] ? period[3] : period[2]) * 0.5;
    if (!(r > half)) {
        return 0;
    }
    PyObject *text = PyObject_CallMethod(ref_radius_over_half, "format", "dd", r, half);
    if (text != NULL && point >= 0) {
        Py_SETREF(text, PyUnicode_FromFormat("point %zd: %U", point, text));
    }
    if (text != NULL) {
        PyErr_SetObject(PyExc_ValueError, text);
        Py_DECREF(text);
    }
    return -1;
}

/* _wrap.cast_shifts: the list of (sx, sy) by which a cast is shifted on a wrapped tree (the
 * reference's own function: a cast crosses few cells, and its refusal is its text). New
 * reference, or NULL and the error. */
QT_API PyObject *
cast_shifts(const double period[6], double ax, double ay, double bx, double by, double bw,
            double bh)
{
    PyObject *p = period_tuple(period); /* new */
    if (p == NULL) {
        return NULL;
    }
    PyObject *got = PyObject_CallFunction(ref_cast_shifts, "ddddddO", ax, ay, bx, by, bw, bh, p);
    Py_DECREF(p);
    if (got != NULL && !PyList_CheckExact(got)) {
        Py_CLEAR(got);
        PyErr_SetString(PyExc_SystemError, "_wrap.cast_shifts returned no list");
    }
    return got;
}

/* ids[0 .. *n) sorted, each once (the union of a wrapped query's images): *n becomes their
 * number. 0, or -1 and MemoryError. */
QT_API int
sort_unique(int64_t *ids, Py_ssize_t *n)
{
    if (sort_ids(ids, *n) < 0) {
        return -1;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < *n; i++) {
        if (k == 0 || ids[i] != ids[k - 1]) {
            ids[k++] = ids[i];
        }
    }
    *n = k;
    return 0;
}
