"""Make the whole test command deterministic, and strict about text encodings, whatever the caller's shell has set.

Float sums differ in their last digits between one and two threads, and stored
notebook outputs were made with one thread. Notebook kernels started by nbval
inherit this process's environment, so setting the variables here (before any
kernel or torch kernel starts) fixes the thread count everywhere. Under
pytest-xdist (``-n 2`` in pyproject.toml) each worker process imports this file
too, so the workers and the kernels they start get one thread as well.
"""

import os

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
# Graded mode off (a student copy turns it on with a file; a teacher may have set the variable): the stored outputs
# and the checkers' tests show the ungraded hints. Tests of graded mode set it themselves.
os.environ["ATTENTION_GRADED"] = "0"
os.environ.pop("ATTENTION_GRADEBOOK", None)
# Text read or written without naming its encoding is read as cp1252 on Windows (issue 35). Python warns of it
# (EncodingWarning) only when started with PYTHONWARNDEFAULTENCODING set: set here, before pytest-xdist starts its
# worker processes, so that the tests run with the warning on (pyproject.toml's filterwarnings makes it an error in
# our own modules). The workers take it out again for what they start: kernels and scripts load third-party code
# (nbconvert, regex) that reads files without an encoding, and their output is compared. Our own code there is held
# to the rule by ruff (PLW1514 in pyproject.toml).
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("PYTHONWARNDEFAULTENCODING", None)
else:
    os.environ["PYTHONWARNDEFAULTENCODING"] = "1"

import pytest
import torch

torch.set_num_threads(1)

# The test command runs in two worker processes that each take whole files (--dist loadfile), handed out in
# collection order (--no-loadscope-reorder: xdist would otherwise order files by their number of tests). A slow
# file handed out last keeps one worker busy while the other idles, so the slowest files (seconds each in the
# whole run on 2 cores, measured per file) are collected first; the rest keep their order.
SLOW_FIRST = [
    "notebooks/10_training_and_decoding.ipynb",  # ~45
    "notebooks/solutions/07_what_attention_learns_solutions.ipynb",  # ~23
    "tests/course/publish/test_site.py",  # ~20 (it builds the site and decks, shared with test_slides: tests/conftest.py)
    "notebooks/14_modern_attention_blocks.ipynb",  # ~20
    "notebooks/07_what_attention_learns.ipynb",  # ~17
    "notebooks/solutions/13_induction_heads_solutions.ipynb",  # ~16
    "notebooks/13_induction_heads.ipynb",  # ~16
    "notebooks/11_efficient_attention.ipynb",  # ~15
    "tests/course/explorer/test_explorer.py",  # ~15
    "notebooks/06_encoder_block.ipynb",  # ~14
    "tests/course/publish/test_slides.py",  # ~10
    "notebooks/12_a_real_trained_encoder.ipynb",  # ~10
    "tests/course/exercises/test_engine.py",  # ~9
    "tests/course/test_grade.py",  # ~8
    "notebooks/solutions/11_efficient_attention_solutions.ipynb",  # ~8
    "tests/helpers/test_pretrained.py",  # ~7
]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath)

    def rank(item):
        path = os.path.relpath(str(item.path), root).replace(os.sep, "/")
        return SLOW_FIRST.index(path) if path in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: within a file, and among the other files, the order is unchanged
