"""Synthetic sequence tasks, generated on the fly, and a tiny encoder-only model to learn them.

Every task maps a sequence of ``n`` tokens to ``n`` target tokens, one per position,
so a per-position classifier on top of an encoder can learn it. Token ``0`` is
reserved for padding (``PAD_ID``); real tokens are ``1 .. vocab_size - 1``.

Tasks, and the attention pattern each one needs:
    reverse  target[i] = x[len - 1 - i]: attend by position (the anti-diagonal).
    sort     target[i] = the i-th smallest real token: attend by content, a different key per output.
    max      target[i] = the largest token of the sequence: every query attends to the same key.
    count    target[i] = how many times x[i] occurs in the sequence: compare tokens with each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from helpers.encoder import Encoder, PositionalEncoding
from helpers.masks import padding_mask

__all__ = ["PAD_ID", "TASKS", "Batch", "TinyTransformer", "make_batch", "reverse_targets"]

PAD_ID = 0
TASKS = ("reverse", "sort", "max", "count")


@dataclass
class Batch:
    """One batch of a task: ``tokens (B, n)``, ``targets (B, n)``, ``lengths (B,)``, ``mask (B, 1, n)``.

    ``targets`` is ``PAD_ID`` at padded positions; ``mask`` is ``True`` at real keys.
    """

    tokens: torch.Tensor
    targets: torch.Tensor
    lengths: torch.Tensor
    mask: torch.Tensor


def reverse_targets(tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Targets of the reverse task: ``tokens (B, n)``, ``lengths (B,)`` -> ``(B, n)``.

    Each sequence is reversed within its own length (position ``i`` takes token
    ``len - 1 - i``); padded positions get ``PAD_ID``.
    """
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(tokens.shape[1]).expand_as(tokens)  # (B, n)
    source = (lengths[:, None] - 1 - positions).clamp(min=0)  # position len-1-i feeds position i
    return tokens.gather(1, source).masked_fill(positions >= lengths[:, None], PAD_ID)


def make_batch(
    task: str,
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    min_len: int | None = None,
    generator: torch.Generator | None = None,
) -> Batch:
    """Random sequences for ``task`` with lengths in ``[min_len, seq_len]`` (all ``seq_len`` by default).

    Tokens are drawn uniformly from ``1 .. vocab_size - 1`` (repeats allowed).
    Shorter sequences are right-padded with ``PAD_ID``; their targets at padded
    positions are ``PAD_ID`` too (ignore them in the loss with ``ignore_index=PAD_ID``).
    For ``count`` the targets are counts ``1 .. seq_len``, so the model needs
    ``max(vocab_size, seq_len + 1)`` output classes; the other tasks need ``vocab_size``.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose one of {TASKS}")
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2 (PAD_ID plus one real token), got {vocab_size}")
    min_len = seq_len if min_len is None else min_len
    if not 1 <= min_len <= seq_len:
        raise ValueError(f"need 1 <= min_len <= seq_len, got min_len={min_len}, seq_len={seq_len}")

    tokens = torch.randint(1, vocab_size, (batch_size, seq_len), generator=generator)
    lengths = torch.randint(min_len, seq_len + 1, (batch_size,), generator=generator)
    real = padding_mask(lengths, seq_len)[:, 0, :]  # (B, n) True at real positions
    tokens = tokens.masked_fill(~real, PAD_ID)
    if task == "reverse":
        targets = reverse_targets(tokens, lengths)
    elif task == "sort":
        # Padding sorts last when it is replaced by a value above every real token.
        targets = tokens.masked_fill(~real, vocab_size).sort(dim=1).values
    elif task == "max":
        targets = tokens.max(dim=1, keepdim=True).values.expand(batch_size, seq_len)  # PAD_ID = 0 is never the max
    else:  # count
        same = (tokens[:, :, None] == tokens[:, None, :]) & real[:, None, :]  # (B, n, n)
        targets = same.sum(dim=-1)
    targets = targets.masked_fill(~real, PAD_ID)
    return Batch(tokens, targets, lengths, padding_mask(lengths, seq_len))


class TinyTransformer(nn.Module):
    """Token embedding x sqrt(d_model) (§3.4), positional encoding (§3.5), encoder stack, per-position output layer.

    ``forward(tokens (B, n), mask=None, need_weights=False) -> (logits (B, n, num_classes), weights)``
    where ``weights`` is the list of each layer's ``(B, h, n, n)`` attention weights
    (``None`` entries when ``need_weights=False``, the fast training path).
    ``mask`` is boolean, ``True`` = may attend, e.g. ``Batch.mask`` of shape ``(B, 1, n)``.
    ``use_positions=False`` drops the positional encoding (an ablation).

    The embedding is initialised with standard deviation ``d_model ** -0.5``, so
    that after the ``sqrt(d_model)`` scaling its entries are about as large as
    the positional encoding's (notebook 05, section 8). With PyTorch's default
    ``N(0, 1)`` the tokens would drown the positions and position-based tasks
    such as ``reverse`` learn far more slowly.
    """

    def __init__(
        self,
        vocab_size: int,
        num_classes: int,
        d_model: int = 32,
        num_heads: int = 2,
        d_ff: int = 64,
        num_layers: int = 2,
        max_len: int = 64,
        use_positions: bool = True,
        norm_first: bool = True,
    ):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)
        self.positional = PositionalEncoding(d_model, max_len) if use_positions else None
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first=norm_first)
        self.projection = nn.Linear(d_model, num_classes)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False):
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (B, n), got {tuple(tokens.shape)}")
        x = self.embedding(tokens) * math.sqrt(self.d_model)  # (B, n) -> (B, n, d_model)
        if self.positional is not None:
            x = self.positional(x)  # + PE[:n]
        x, weights = self.encoder(x, mask, need_weights=need_weights)
        return self.projection(x), weights  # (B, n, num_classes), list of (B, h, n, n) or None
