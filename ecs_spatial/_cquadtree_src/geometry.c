/* geometry.c: the float rules: each function the C of one expression of the reference, in its
 * order of operations, so that each rounds as CPython rounds it.
 *
 * The twin of ecs_spatial/geometry.py. Its mod_* functions expose the kernels to the tests
 * that hold them to CPython's (the module's _hypot, _midpoint, ...), and _box_new is
 * Box.__new__ in C.
 */

#include "geometry.h"
#include "quadtree.h"

/* math.ulp(x), as Modules/mathmodule.c computes it. */
QT_API double
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
QT_API double
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

/* One axis of segment_entry's slab test: the segment from a0 to a1 against [lo, hi], which
 * narrows [*t_enter, *t_exit]; 0 when the segment misses the slab (or the interval closes). */
static inline int
slab(double lo, double hi, double a0, double a1, double *t_enter, double *t_exit)
{
    double ta, tb, swap;
    double d = a1 - a0;
    if (d == 0.0) {
        return !(a0 < lo || a0 > hi);
    }
    if (d == INFINITY || d == -INFINITY) {
        d = a1 * 0.5 - a0 * 0.5;
        ta = (lo * 0.5 - a0 * 0.5) / d;
        tb = (hi * 0.5 - a0 * 0.5) / d;
    }
    else {
        ta = (lo - a0) / d;
        tb = (hi - a0) / d;
    }
    if (ta > tb) {
        swap = ta;
        ta = tb;
        tb = swap;
    }
    if (ta > *t_enter) {
        *t_enter = ta;
    }
    if (tb < *t_exit) {
        *t_exit = tb;
    }
    return !(*t_enter > *t_exit);
}

/* geometry.segment_entry(box, x0, y0, x1, y1): 1 and *t the entry fraction if the segment
 * touches the closed box, else 0. The same slab test, the same halving where a segment spans
 * more than the float range, the same order of every operation. */
QT_API int
segment_entry(double min_x, double min_y, double max_x, double max_y,
              double x0, double y0, double x1, double y1, double *t)
{
    double t_enter = 0.0, t_exit = 1.0;
    if (!slab(min_x, max_x, x0, x1, &t_enter, &t_exit)
        || !slab(min_y, max_y, y0, y1, &t_enter, &t_exit)) {
        return 0;
    }
    *t = t_enter;
    return 1;
}

/* One axis of sweep_time: narrow [*t_enter, *t_exit] to the fractions at which the moving
 * interval [a_lo, a_hi] (by d) touches [lo, hi]. 0 when they never do in that span. */
static inline int
sweep_axis(double lo, double hi, double a_lo, double a_hi, double d, double *t_enter,
           double *t_exit)
{
    if (d == 0.0) {
        return lo <= a_hi && a_lo <= hi;
    }
    double ta = (lo - a_hi) / d, tb = (hi - a_lo) / d;
    if (ta > tb) {
        double swap = ta;
        ta = tb;
        tb = swap;
    }
    if (ta > *t_enter) {
        *t_enter = ta;
    }
    if (tb < *t_exit) {
        *t_exit = tb;
    }
    return *t_enter <= *t_exit;
}

/* geometry.floats_sweep_time(a, dx, dy, b): 1 and *t the first fraction of the motion (dx, dy)
 * at which the box a, moving, touches the closed box b, else 0. The same slab test, the same
 * order of every operation (the motion is finite: no halving, no NaN). */
QT_API int
sweep_time(const double a[4], double dx, double dy, const double b[4], double *t)
{
    double t_enter = 0.0, t_exit = 1.0;
    if (!sweep_axis(b[0], b[2], a[0], a[2], dx, &t_enter, &t_exit)
        || !sweep_axis(b[1], b[3], a[1], a[3], dy, &t_enter, &t_exit)) {
        return 0;
    }
    *t = t_enter;
    return 1;
}

QT_API PyObject *
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

QT_API PyObject *
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

QT_API PyObject *
mod_sweep_time(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a[4], b[4], dx, dy, t;
    if (!PyArg_ParseTuple(args, "(dddd)dd(dddd):_sweep_time", &a[0], &a[1], &a[2], &a[3], &dx,
                          &dy, &b[0], &b[1], &b[2], &b[3])) {
        return NULL;
    }
    if (!(isfinite(dx) && isfinite(dy))) {
        PyErr_SetString(PyExc_ValueError, "_sweep_time: the motion must be finite");
        return NULL;
    }
    if (!sweep_time(a, dx, dy, b, &t)) {
        Py_RETURN_NONE;
    }
    return PyFloat_FromDouble(t);
}

QT_API PyObject *
mod_midpoint(PyObject *Py_UNUSED(module), PyObject *args)
{
    double a, b;
    if (!PyArg_ParseTuple(args, "dd:_midpoint", &a, &b)) {
        return NULL;
    }
    return PyFloat_FromDouble(midpoint(a, b));
}

QT_API PyObject *
mod_ulp(PyObject *Py_UNUSED(module), PyObject *args)
{
    double x;
    if (!PyArg_ParseTuple(args, "d:_ulp", &x)) {
        return NULL;
    }
    return PyFloat_FromDouble(py_ulp(x));
}

/* Box.__new__(cls, min_x, min_y, max_x, max_y) in C, for geometry.Box to take when the core
 * is built: four floats that form a valid box (the common case) become the Box at once,
 * without a Python frame (the Box holds the very float objects given, as tuple.__new__ does);
 * every other call, keywords included, goes to the reference's own Box.__new__, which
 * converts or refuses by name: the same Box, or the same error, in every case. */
QT_API PyObject *
mod_box_new(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    if (kwnames == NULL && nargs == 5 && PyType_Check(args[0])
        && PyType_IsSubtype((PyTypeObject *)args[0], (PyTypeObject *)BoxType)) {
        double c[4];
        int floats = 1;
        for (int i = 0; i < 4 && floats; i++) {
            floats = PyFloat_CheckExact(args[i + 1]);
            c[i] = floats ? PyFloat_AS_DOUBLE(args[i + 1]) : 0.0;
        }
        if (floats && valid_box(c)) {
            PyTypeObject *type = (PyTypeObject *)args[0];
            PyObject *box = type->tp_alloc(type, 4);
            if (box == NULL) {
                return NULL;
            }
            for (int i = 0; i < 4; i++) {
                Py_INCREF(args[i + 1]);
                PyTuple_SET_ITEM(box, i, args[i + 1]); /* steals the reference just taken */
            }
            return box;
        }
    }
    return PyObject_Vectorcall(ref_box_new, args, (size_t)nargs, kwnames);
}

/* Box(...) itself: the call of the class, installed as the Box type's tp_vectorcall by
 * mod_box_vectorcall (index.py does, with the compiled core). A call of Box itself with four
 * floats that form a valid box, while Box's __new__ is the one in place at installation and
 * its __init__ is object's, is answered here: what type_call -> __new__ would give, the Box
 * holding the very float objects given, without the argument tuple, the look-up of __new__
 * and the call through it. Every other call (a subclass, keywords, other values, another
 * arity, a __new__ or __init__ put on Box since) is the type's own call, so every other Box
 * and every error is the reference's. A subclass never gets here for its own calls: a type's
 * tp_vectorcall is not inherited, and the test of `type` below holds if it ever were. */
static PyObject *box_new_installed; /* owned: Box.__dict__["__new__"] when installed */
static PyObject *str_dunder_new;     /* owned, interned: "__new__" */

/* type.__call__(type, *args, **kwargs), the call a type without a tp_vectorcall makes. */
static PyObject *
box_type_call(PyObject *type, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs); /* new */
    PyObject *kwargs = NULL;              /* new */
    PyObject *result = NULL;
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]); /* steals the reference just taken */
    }
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        kwargs = PyDict_New();
        if (kwargs == NULL) {
            goto done;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                goto done;
            }
        }
    }
    if (Py_EnterRecursiveCall(" while calling a Python object") == 0) {
        result = PyType_Type.tp_call(type, tuple, kwargs);
        Py_LeaveRecursiveCall();
    }
done:
    Py_DECREF(tuple);
    Py_XDECREF(kwargs);
    return result;
}

static PyObject *
box_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (type == BoxType && nargs == 4 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)
        && ((PyTypeObject *)type)->tp_init == PyBaseObject_Type.tp_init) {
        double c[4];
        if (PyFloat_CheckExact(args[0]) && PyFloat_CheckExact(args[1])
            && PyFloat_CheckExact(args[2]) && PyFloat_CheckExact(args[3])
            && (c[0] = PyFloat_AS_DOUBLE(args[0]), c[1] = PyFloat_AS_DOUBLE(args[1]),
                c[2] = PyFloat_AS_DOUBLE(args[2]), c[3] = PyFloat_AS_DOUBLE(args[3]),
                valid_box(c))) {
            PyObject *dict = ((PyTypeObject *)type)->tp_dict; /* borrowed */
            PyObject *new = PyDict_GetItemWithError(dict, str_dunder_new); /* borrowed */
            if (new == NULL && PyErr_Occurred()) {
                return NULL;
            }
            if (new == box_new_installed) {
                PyObject *box = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 4);
                if (box == NULL) {
                    return NULL;
                }
                for (int i = 0; i < 4; i++) {
                    Py_INCREF(args[i]);
                    PyTuple_SET_ITEM(box, i, args[i]); /* steals the reference just taken */
                }
                return box;
            }
        }
    }
    return box_type_call(type, args, nargs, kwnames);
}

/* _box_vectorcall(on): install (or take away) box_vectorcall as Box's call; whether it was
 * installed before. Installing takes Box's __new__ as it is at that moment as the one the
 * fast path stands for. */
QT_API PyObject *
mod_box_vectorcall(PyObject *Py_UNUSED(module), PyObject *on)
{
    int enable = PyObject_IsTrue(on);
    if (enable < 0) {
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)BoxType;
    if (str_dunder_new == NULL) {
        str_dunder_new = PyUnicode_InternFromString("__new__");
        if (str_dunder_new == NULL) {
            return NULL;
        }
    }
    if (enable) {
        PyObject *new = PyDict_GetItemWithError(type->tp_dict, str_dunder_new); /* borrowed */
        if (new == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "Box has no __new__ of its own");
            }
            return NULL;
        }
        Py_INCREF(new);
        Py_XSETREF(box_new_installed, new);
    }
    int was = type->tp_vectorcall == box_vectorcall;
    type->tp_vectorcall = enable ? box_vectorcall : NULL;
    return PyBool_FromLong(was);
}
