"""Benchmarks for ecs_spatial: one entry point, ``python -m bench``, run from the repository root.

``python -m bench --help`` lists every measurement; ``bench/README.md`` says what each one is,
which shared piece does what, and where the results go (``bench/results/<machine>/``).
Benchmarks are not tests: nothing here is collected by pytest (its testpaths is ``tests/``),
and nothing here is part of the installed package.
"""
