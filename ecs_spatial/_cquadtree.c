/* _cquadtree.c: the compiled twin of ecs_spatial.quadtree.QuadTree, built as one translation
 * unit from its units in ecs_spatial/_cquadtree/ (listed in _cquadtree/quadtree.c, each the twin
 * of the reference module of the same name), included here in dependency order. One unit
 * keeps every hot call inlinable, as when this was one file: QT_API (tree.h) makes the
 * functions the units share static here. setup.py, CI and the sdist build this file. */
#define QT_UNITY 1

#include "_cquadtree/containers.c"
#include "_cquadtree/geometry.c"
#include "_cquadtree/growth.c"
#include "_cquadtree/snapshots.c"
#include "_cquadtree/records.c"
#include "_cquadtree/tree_storage.c"
#include "_cquadtree/tree_nodes.c"
#include "_cquadtree/tree_updates.c"
#include "_cquadtree/tree_queries.c"
#include "_cquadtree/tree_nearest.c"
#include "_cquadtree/tree_casts.c"
#include "_cquadtree/tree_pairs.c"
#include "_cquadtree/tree_state.c"
#include "_cquadtree/tree_check.c"
#include "_cquadtree/quadtree.c"
