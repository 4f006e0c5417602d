"""Benchmarks for ecs_spatial: ``python -m bench --help``, run from the repository root.

Not tests (pytest collects ``tests/`` only) and not part of the installed package.
"""
