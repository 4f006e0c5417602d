/* records.h: reading what a caller passes: ids, boxes, points, buffers, records, arguments (by
 * the reference's signatures), and the reference's errors for them.
 *
 * The twin of ecs_spatial/_records.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_RECORDS_H
#define ECS_SPATIAL_CQUADTREE_RECORDS_H

#include "tree.h"
#include "geometry.h"
#include "quadtree.h"

/* Arguments, by the reference's signatures. Every method takes its arguments as the
 * reference's method of the same name declares them (positional or by keyword, then
 * keyword-only ones), through bind(). A call that binds gives the values at once, and a call
 * of every parameter by position (the per-frame calls) costs one comparison more than no
 * parsing at all. A call that does not bind is refused with the reference's own TypeError:
 * the reference's method is called with the same arguments, and the interpreter refuses them
 * before its body runs, with the text of the running version (3.13 adds "Did you mean ...?"). */
#define MAX_PARAMS 5

/* A method's parameters after self, as the reference declares them: names[0 .. positional)
 * positional-or-keyword, the first `required` of them without a default, then keyword-only
 * ones (with defaults) up to names[n). */
typedef struct {
    const char *method;
    int positional, required, n;
    const char *names[MAX_PARAMS];
} Params;

QT_API PyObject *make_box(double x0, double y0, double x1, double y1);
QT_API PyObject *id_list(const int64_t *ids, Py_ssize_t n);
QT_API PyObject *id_array(const int64_t *ids, Py_ssize_t n);
QT_API PyObject *stored_id(PyObject *entity);
QT_API int int64_of(PyObject *integer, int64_t *out);
QT_API int32_t lookup_slot(const Tree *t, PyObject *entity);
QT_API PyObject *raise_missing(PyObject *entity);
QT_API PyObject *raise_id_range(PyObject *integer);
QT_API int read_box(PyObject *tuple, double c[4]);
QT_API int box_any(PyObject *box, PyObject *entity, double c[4]);
QT_API int raise_box_error(const double c[4], int64_t id);
QT_API int point_any(PyObject *x, PyObject *y, double *fx, double *fy);
QT_API int motion_any(PyObject *dx, PyObject *dy, double *fdx, double *fdy);
QT_API int float_arg(PyObject *value, const char *what, double *out);
QT_API int typed_buffer(PyObject *obj, Py_buffer *view, int want_double);
QT_API Py_ssize_t boxes_in(const Py_buffer *view, const char *method);
QT_API int signature_error(const char *method, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames);
QT_API int bind(const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                PyObject **out);
QT_API int bind_tuple(const Params *p, PyObject *args, PyObject *kwds, PyObject **out);
QT_API PyObject *zip_strict(PyObject *entities, PyObject *boxes);
QT_API int is_zip_length_error(void);
QT_API void rewrite_batch_error(const char *method, int atomic);
QT_API int read_record(PyObject *rec, int storing, int64_t *id, double c[4], PyObject **entity);

/* A plain tuple or a Box of four floats: 1 and c filled, whether or not they form a valid
 * box. 0 for any other value (no error set). */
static inline int
floats_of(PyObject *box, double c[4])
{
    if (!(PyTuple_CheckExact(box) || Py_IS_TYPE(box, (PyTypeObject *)BoxType))
        || PyTuple_GET_SIZE(box) != 4) {
        return 0;
    }
    PyObject *x0 = PyTuple_GET_ITEM(box, 0), *y0 = PyTuple_GET_ITEM(box, 1); /* borrowed */
    PyObject *x1 = PyTuple_GET_ITEM(box, 2), *y1 = PyTuple_GET_ITEM(box, 3); /* borrowed */
    if (!(PyFloat_CheckExact(x0) && PyFloat_CheckExact(y0) && PyFloat_CheckExact(x1)
          && PyFloat_CheckExact(y1))) {
        return 0;
    }
    c[0] = PyFloat_AS_DOUBLE(x0);
    c[1] = PyFloat_AS_DOUBLE(y0);
    c[2] = PyFloat_AS_DOUBLE(x1);
    c[3] = PyFloat_AS_DOUBLE(y1);
    return 1;
}

/* A plain tuple or a Box of four floats that form a valid box: 1 and c filled. 0 for any
 * other value, which box_any() decides (no error set). */
static inline int
box_fast(PyObject *box, double c[4])
{
    return floats_of(box, c) && valid_box(c);
}

/* The arguments of a call by p: `args` itself when every parameter is given by position
 * (nothing to do), else `buf` filled by bind(), NULL where a default stands; or NULL and the
 * reference's TypeError. */
static inline PyObject *const *
arguments(const Params *p, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
          PyObject **buf)
{
    if (kwnames == NULL && nargs == p->n && p->n == p->positional) {
        return args;
    }
    return bind(p, args, nargs, kwnames, buf) < 0 ? NULL : buf;
}

/* The arguments of a method that takes none: 0, or -1 and the reference's TypeError. */
static inline int
no_arguments(const char *method, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs == 0 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        return 0;
    }
    return signature_error(method, args, nargs, kwnames);
}

#endif
