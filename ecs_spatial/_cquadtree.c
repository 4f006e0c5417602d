/* _cquadtree.c: the compiled twin of ecs_spatial.quadtree.QuadTree.
 *
 * The pure-Python module is the reference (heapq's pattern: Lib/heapq.py is judged by
 * nobody, _heapq is judged by it). This file gives the same answers, errors included, with a
 * layout made for C. Everything here is checked against the reference by
 * tests/test_native_quadtree.py, side by side, step by step.
 *
 * Floats: every expression that decides an answer is the reference's, in the reference's
 * order of operations, and the file is compiled with -ffp-contract=off -fno-fast-math
 * (setup.py), so each one rounds exactly as CPython rounds it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * Float kernels, each the C of one Python expression of the reference
 * ---------------------------------------------------------------------------------------- */

/* Python's max(a, b) and min(a, b) for floats: the first argument unless the second is
 * strictly greater (smaller). fmax/fmin may pick either zero of -0.0 and 0.0. */
static inline double
py_max(double a, double b)
{
    return b > a ? b : a;
}

static inline double
py_min(double a, double b)
{
    return b < a ? b : a;
}

/* geometry.midpoint(a, b): (a + b) * 0.5 unless the sum overflows. */
static inline double
midpoint(double a, double b)
{
    double s = a + b;
    if (-INFINITY < s && s < INFINITY) {
        return s * 0.5;
    }
    return a * 0.5 + b * 0.5;
}

/* math.ulp(x), as Modules/mathmodule.c computes it. */
static double
py_ulp(double x)
{
    if (isnan(x)) {
        return x;
    }
    x = fabs(x);
    if (isinf(x)) {
        return x;
    }
    double x2 = nextafter(x, INFINITY);
    if (isinf(x2)) {
        /* x is the largest finite float */
        x2 = nextafter(x, -INFINITY);
        return x - x2;
    }
    return x2 - x;
}

/* math.hypot(dx, dy): CPython 3.11's vector_norm() for two coordinates
 * (Modules/mathmodule.c), not libm's hypot, whose last bit can differ: lossless scaling by a
 * power of two, squares split exactly (Veltkamp-Dekker, no fma), compensated summation in
 * three accumulators and one differential correction of the square root. The statements are
 * CPython's, in its order; tests/test_native_quadtree.py compares millions of results. */
static double
vector_norm2(double vec[2], double max)
{
    const double T27 = 134217729.0; /* ldexp(1.0, 27) + 1.0 */
    double x, scale, oldcsum, csum = 1.0, frac1 = 0.0, frac2 = 0.0, frac3 = 0.0;
    double t, hi, lo, h;
    int max_e;

    /* vec holds |dx| and |dy|, max the larger; neither is NaN (the caller's floats are
     * finite, and a gap between two finite floats is finite or inf). */
    if (isinf(max) || max == 0.0) {
        return max;
    }
    frexp(max, &max_e);
    if (max_e < -1023) {
        /* ldexp(1.0, -max_e) would overflow: 3.11 divides by max instead of scaling. */
        for (int i = 0; i < 2; i++) {
            x = vec[i];
            x /= max;
            x = x * x;
            oldcsum = csum;
            csum += x;
            frac1 += (oldcsum - csum) + x;
        }
        return max * sqrt(csum - 1.0 + frac1);
    }
    scale = ldexp(1.0, -max_e);
    for (int i = 0; i < 2; i++) {
        x = vec[i];
        x *= scale;
        t = x * T27;
        hi = t - (t - x);
        lo = x - hi;

        x = hi * hi;
        oldcsum = csum;
        csum += x;
        frac1 += (oldcsum - csum) + x;

        x = 2.0 * hi * lo;
        oldcsum = csum;
        csum += x;
        frac2 += (oldcsum - csum) + x;

        frac3 += lo * lo;
    }
    h = sqrt(csum - 1.0 + (frac1 + frac2 + frac3));

    x = h;
    t = x * T27;
    hi = t - (t - x);
    lo = x - hi;

    x = -hi * hi;
    oldcsum = csum;
    csum += x;
    frac1 += (oldcsum - csum) + x;

    x = -2.0 * hi * lo;
    oldcsum = csum;
    csum += x;
    frac2 += (oldcsum - csum) + x;

    x = -lo * lo;
    oldcsum = csum;
    csum += x;
    frac3 += (oldcsum - csum) + x;

    x = csum - 1.0 + (frac1 + frac2 + frac3);
    return (h + x / (2.0 * h)) / scale;
}

static inline double
py_hypot(double dx, double dy)
{
    double vec[2] = {fabs(dx), fabs(dy)};
    double max = 0.0;
    if (vec[0] > max) {
        max = vec[0];
    }
    if (vec[1] > max) {
        max = vec[1];
    }
    return vector_norm2(vec, max);
}

/* Box.distance_to_point's gap on one axis: lo - v left of the box, v - hi right of it. */
static inline double
gap(double v, double lo, double hi)
{
    return v < lo ? lo - v : (v > hi ? v - hi : 0.0);
}

/* geometry.segment_entry(box, x0, y0, x1, y1): 1 and *t the entry fraction if the segment
 * touches the closed box, else 0. The same slab test, the same halving where a segment spans
 * more than the float range, the same order of every operation. */
static int
segment_entry(double min_x, double min_y, double max_x, double max_y,
              double x0, double y0, double x1, double y1, double *t)
{
    double t_enter = 0.0, t_exit = 1.0, ta, tb, swap;
    double dx = x1 - x0;
    if (dx == 0.0) {
        if (x0 < min_x || x0 > max_x) {
            return 0;
        }
    }
    else {
        if (dx == INFINITY || dx == -INFINITY) {
            dx = x1 * 0.5 - x0 * 0.5;
            ta = (min_x * 0.5 - x0 * 0.5) / dx;
            tb = (max_x * 0.5 - x0 * 0.5) / dx;
        }
        else {
            ta = (min_x - x0) / dx;
            tb = (max_x - x0) / dx;
        }
        if (ta > tb) {
            swap = ta;
            ta = tb;
            tb = swap;
        }
        if (ta > t_enter) {
            t_enter = ta;
        }
        if (tb < t_exit) {
            t_exit = tb;
        }
        if (t_enter > t_exit) {
            return 0;
        }
    }
    double dy = y1 - y0;
    if (dy == 0.0) {
        if (y0 < min_y || y0 > max_y) {
            return 0;
        }
    }
    else {
        if (dy == INFINITY || dy == -INFINITY) {
            dy = y1 * 0.5 - y0 * 0.5;
            ta = (min_y * 0.5 - y0 * 0.5) / dy;
            tb = (max_y * 0.5 - y0 * 0.5) / dy;
        }
        else {
            ta = (min_y - y0) / dy;
            tb = (max_y - y0) / dy;
        }
        if (ta > tb) {
            swap = ta;
            ta = tb;
            tb = swap;
        }
        if (ta > t_enter) {
            t_enter = ta;
        }
        if (tb < t_exit) {
            t_exit = tb;
        }
        if (t_enter > t_exit) {
            return 0;
        }
    }
    *t = t_enter;
    return 1;
}

/* ------------------------------------------------------------------------------------------
 * Module-level functions: the kernels, exposed for the tests that hold them to CPython's
 * ---------------------------------------------------------------------------------------- */

static PyObject *
mod_hypot(PyObject *Py_UNUSED(module), PyObject *args)
{
    double dx, dy;
    if (!PyArg_ParseTuple(args, "dd:_hypot", &dx, &dy)) {
        return NULL;
    }
    if (isnan(dx) || isnan(dy)) {
        PyErr_SetString(PyExc_ValueError, "_hypot: NaN is not a gap");
        return NULL;
    }
    return PyFloat_FromDouble(py_hypot(dx, dy));
}

static PyObject *
mod_segment_entry(PyObject *Py_UNUSED(module), PyObject *args)
{
    double b[4], x0, y0, x1, y1, t;
    if (!PyArg_ParseTuple(args, "(dddd)dddd:_segment_entry", &b[0], &b[1], &b[2], &b[3],
                          &x0, &y0, &x1, &y1)) {
        return NULL;
    }
    if (!segment_entry(b[0], b[1], b[2], b[3], x0, y0, x1, y1, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

static PyObject *
mod_midpoint(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a, b;
    if (!PyArg_ParseTuple(args, "dd:_midpoint", &a, &b)) {
        return NULL;
    }
    return PyFloat_FromDouble(midpoint(a, b));
}

static PyObject *
mod_ulp(PyObject *Py_UNUSED(module), PyObject *args)
{
    double x;
    if (!PyArg_ParseTuple(args, "d:_ulp", &x)) {
        return NULL;
    }
    return PyFloat_FromDouble(py_ulp(x));
}

static PyMethodDef module_methods[] = {
    {"_hypot", mod_hypot, METH_VARARGS, "math.hypot(dx, dy), as the index computes it."},
    {"_segment_entry", mod_segment_entry, METH_VARARGS,
     "geometry.segment_entry(box, x0, y0, x1, y1), as the index computes it."},
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

PyMODINIT_FUNC
PyInit__cquadtree(void)
{
    return PyModule_Create(&cquadtree_module);
}
