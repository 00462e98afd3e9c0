"""Maintainer tools, each run as ``python -m course.qa.NAME`` from the repository root: ``mutate`` (do the tests
notice small bugs?), ``platforms`` (the same verdict under other CPUs' kernels, threads and seeds),
``reading_time``, ``execute`` (re-execute notebooks as nbval does) and ``number_words_model`` (rebuild notebook
11's saved weights)."""
