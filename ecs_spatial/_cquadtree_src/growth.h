/* growth.h: the root's growth toward a box outside it.
 *
 * The twin of ecs_spatial/_growth.py.
 */

#ifndef ECS_SPATIAL_CQUADTREE_GROWTH_H
#define ECS_SPATIAL_CQUADTREE_GROWTH_H

#include "tree.h"

QT_API void first_root(const double b[4], double out[4]);
QT_API int can_grow_toward(const Tree *t, const double b[4]);
QT_API int grow_to(Tree *t, const double b[4]);

#endif
