/* quadtree.h: the Python type: its method table (the reference's signatures and docstrings),
 * the module's functions and init, the reference's helpers it imports.
 *
 * The twin of ecs_spatial/quadtree.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_QUADTREE_H
#define ECS_SPATIAL_CQUADTREE_QUADTREE_H

#include "tree.h"

QT_DATA PyObject *ref_read_state;
QT_DATA PyObject *ref_own_state;
QT_DATA PyObject *ref_restore_own_state;
QT_DATA PyObject *ref_copy_own_state;

QT_DATA PyObject *BoxType;       /* geometry.Box, a tuple subclass */
QT_DATA PyObject *NodeInfoType;  /* quadtree.NodeInfo */
QT_DATA PyObject *ref_coords;    /* _records.coords(box, entity=None) -> 4 floats, or its error */
QT_DATA PyObject *ref_entity_id; /* _records.entity_id(entity) -> int, or its TypeError */
QT_DATA PyObject *ref_lookup_id; /* _records.lookup_id(entity) -> int or None */
QT_DATA PyObject *ref_missing;   /* _records.missing(entity) -> the KeyError of a failed lookup */
QT_DATA PyObject *ref_out_of_range; /* _records.out_of_range(int) -> the OverflowError of an id */
QT_DATA PyObject *ref_tree;      /* quadtree.QuadTree: its methods' signatures are this class's */
QT_DATA PyObject *ref_point;     /* _records.point(x, y) -> 2 floats, or its error */
QT_DATA PyObject *ref_many_point;  /* _tree_queries.many_point(item, i) -> 2 floats, or its error */
QT_DATA PyObject *ref_many_radius; /* _tree_queries.many_radius(value, i) -> float, or its error */
QT_DATA PyObject *ref_to_float;  /* geometry.to_float(value, what) */
QT_DATA PyObject *ref_motion;    /* geometry.motion_floats(dx, dy) -> 2 finite floats, or its error */
QT_DATA PyObject *builtin_zip;   /* builtins.zip */
QT_DATA PyObject *array_array;   /* array.array */
QT_DATA PyObject *copyreg_newobj; /* copyreg.__newobj__(cls) -> cls.__new__(cls) */
QT_DATA PyObject *ref_busy;       /* _tree_storage.BUSY: what guard() raises while busy */
QT_DATA PyObject *ref_state_format;
QT_DATA PyObject *ref_period_of;  /* _wrap.period_of(value) -> the period, or its error */
QT_DATA PyObject *ref_canonical;  /* _wrap.canonical(x0, y0, x1, y1, entity, period) */
QT_DATA PyObject *ref_wrap_point; /* _wrap.wrap_point(x, y, period) */
QT_DATA PyObject *ref_cast_shifts; /* _wrap.cast_shifts(ax, ay, bx, by, bw, bh, period) */
QT_DATA PyObject *ref_radius_over_half; /* _wrap.RADIUS_OVER_HALF, a format string */
QT_DATA PyObject *ref_read_wrap;  /* _tree_state.read_wrap(state) -> the period or None */

#endif
