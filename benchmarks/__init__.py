"""Measurements that the notebooks quote: seed sweeps and timings, each stored in ``results/`` with its command.

Run one from the repository root, in the activated environment: ``python -m benchmarks.NAME`` (its docstring
says what it measures and how long it takes). ``tests/test_benchmarks.py`` checks that the stored results still
support what the notebooks say.
"""
