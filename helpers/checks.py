"""Argument checks shared by every public function of ``helpers``, so that bad input behaves alike everywhere.

Each raises a ``ValueError`` that names the argument and the value it got. ``True`` and ``False`` are ``int``
subclasses in Python; they are never accepted as a count, a length or an index.
"""

from __future__ import annotations

import torch

__all__ = ["is_int", "non_negative_int", "positive_int", "shape_text"]


def is_int(value) -> bool:
    """An ``int`` that is not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(name: str, value, what: str = "") -> int:
    """``value`` if it is an integer >= 1; otherwise a ValueError naming ``name`` (``what``: what it counts)."""
    if not is_int(value) or value < 1:
        detail = f" ({what})" if what else ""
        raise ValueError(f"{name} must be a positive integer{detail}, got {value!r}")
    return value


def non_negative_int(name: str, value, what: str = "") -> int:
    """``value`` if it is an integer >= 0; otherwise a ValueError naming ``name``."""
    if not is_int(value) or value < 0:
        detail = f" ({what})" if what else ""
        raise ValueError(f"{name} must be a non-negative integer{detail}, got {value!r}")
    return value


def shape_text(x, dtype: bool = True) -> str:
    """How a value reads in an error message: a tensor's dtype and shape, or the type of anything else.

    ``"torch.float32 of shape (2, 3)"``; with ``dtype=False`` the shape alone, ``"(2, 3)"``. Anything that is not a
    tensor reads as its type's name, ``"list"``.
    """
    if not isinstance(x, torch.Tensor):
        return type(x).__name__
    if not dtype:
        return str(tuple(x.shape))
    return f"{x.dtype} of shape {tuple(x.shape)}"
