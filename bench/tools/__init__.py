"""Investigation tools: profiles, A/B comparisons and self-checks used while working on the
index. They are not measurements (``python -m bench --help`` lists those); their output is a
profile or a verdict, not figures for ``bench/results/``. Run each as
``python -m bench.tools.<name> --help``; ``bench/tools/README.md`` says what each is for.
"""
