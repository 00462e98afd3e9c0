"""Checkers for the notebooks' exercises: hidden seeded cases, a verdict, and a diagnosis of the likely mistake.

Each ``check_*`` function takes the reader's function (or class), runs it on a few
seeded cases, compares it with the reference in ``helpers`` and returns a
:class:`Verdict`, which a notebook cell displays as a short text.

- The answer and the reference each run on their own fresh copies of a case's
  inputs, so an answer that changes its inputs in place cannot change what the
  reference computes. After each call the checker compares every input with a
  saved copy: an answer that changed one in place (``x += ...``, ``steps.pow_(...)``,
  ``lengths.sort()``, a norm's weight) fails, and the verdict names the argument,
  since the caller's tensor would change with it.
- Each case runs under a time limit (:data:`TIME_LIMIT_S` seconds), so an endless
  loop gives a verdict instead of hanging the notebook.
- Results are compared on the CPU, detached; any floating dtype is accepted when
  the values are right (tolerance ``rtol=1e-4, atol=1e-5``), masks must be
  boolean and token ids integers (of the inputs' own dtype where the exercise
  says so). A list returned instead of a tuple is accepted. "Close, but outside
  the tolerance" is said only when the error is small next to the values.
- When the answer is wrong, the checker also runs deliberately wrong versions of
  the reference (the classic mistakes of attention code); if the reader's answer
  matches one of them on every case, the verdict names that mistake and how to fix
  it. Otherwise it says where the wrong entries are (a column, row or batch
  pattern only when it is structural, not a coincidence of a few entries) and
  gives a hint of the tier below.
- A stub whose own body still raises ``NotImplementedError`` is "not attempted yet"
  and gets the conceptual hint. A ``NotImplementedError`` raised deeper, in an
  unfinished function the answer calls, is a failure that says where it was raised.

Hints come in tiers, chosen by how many attempts at the exercise failed before in
this kernel (a module-level count per exercise id, "01.1"; a stub does not count,
a pass is counted and shown as "(attempt 3)" but resets nothing):

1. the first failure that no named mistake explains gets the conceptual hint: which
   equation, which axis, what to print to see the difference;
2. the second gets a hint in code: which functions, which shapes, not assembled;
3. the third and later get a reference solution, line by line.

A failure that names a mistake gives its diagnosis on every attempt. A solution is
also there on request, ``solution("01.1")`` or ``verdict.solution()``, and
``reset_attempts()`` forgets the counts (of one exercise, or all). The verdict's
text depends only on the answer and the count, so a notebook that runs a checker
several times stores the same outputs on every Run All (each starts a fresh kernel).

The package: :mod:`course.exercises.engine` holds the shared machinery (fresh inputs, the time limit,
:class:`Verdict`, the diagnoses of differences, the hints in tiers and the attempt counts, :func:`solution`,
:func:`reset_attempts`); ``nb01`` ... ``nb14`` hold each notebook's checkers, their cases, classic mistakes and
hints (``nb03`` the checkers of exercises 03.x); this module re-exports the public names.
"""

from __future__ import annotations

import sys
import types

from course.exercises import engine as _core
from course.exercises.engine import TIME_LIMIT_S, Verdict, reset_attempts, solution
from course.exercises.nb01 import check_attention
from course.exercises.nb02 import check_masked_attention, check_padding_mask
from course.exercises.nb03 import check_combine_heads, check_multi_head_attention, check_split_heads
from course.exercises.nb04 import check_causal_mask
from course.exercises.nb05 import check_positional_encoding
from course.exercises.nb06 import check_encoder_block
from course.exercises.nb07 import check_reverse_targets
from course.exercises.nb09 import check_decoder_block, check_shift_right
from course.exercises.nb10 import check_length_penalty, check_rate
from course.exercises.nb11 import check_cached_attention, check_grouped_attention, check_online_softmax_update
from course.exercises.nb12 import check_mean_pooling
from course.exercises.nb13 import check_induction_scores, check_predictable_accuracy
from course.exercises.nb14 import check_alibi_slopes, check_rms_norm, check_rotary

__all__ = [
    "TIME_LIMIT_S",
    "Verdict",
    "check_alibi_slopes",
    "check_attention",
    "check_cached_attention",
    "check_causal_mask",
    "check_combine_heads",
    "check_decoder_block",
    "check_encoder_block",
    "check_grouped_attention",
    "check_induction_scores",
    "check_length_penalty",
    "check_masked_attention",
    "check_mean_pooling",
    "check_multi_head_attention",
    "check_online_softmax_update",
    "check_padding_mask",
    "check_positional_encoding",
    "check_predictable_accuracy",
    "check_rate",
    "check_reverse_targets",
    "check_rms_norm",
    "check_rotary",
    "check_shift_right",
    "check_split_heads",
    "reset_attempts",
    "solution",
]


class _Package(types.ModuleType):
    """``course.exercises.TIME_LIMIT_S = 30`` sets the limit that the checks use, which lives in ``_core``."""

    def __setattr__(self, name: str, value) -> None:
        if name == "TIME_LIMIT_S":
            _core.TIME_LIMIT_S = value
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
