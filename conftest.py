"""Make the whole test command deterministic, whatever the caller's shell has set.

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

import torch

torch.set_num_threads(1)
