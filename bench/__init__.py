"""Benchmarks for ecs_spatial: the benchmark world, the baselines, the peers and the runners.

Benchmarks are not tests: nothing here is collected by pytest (its testpaths is ``tests/``),
and nothing here is part of the installed package. Run the scripts from the repository root,
e.g. ``python bench/frame.py --n 10000``.
"""
