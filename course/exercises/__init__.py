"""Checkers for the notebooks' exercises: run your answer on hidden seeded cases, and name the likely mistake.

A checked exercise gives you a stub to fill in and a cell that calls its checker on your function (or class):
``check_attention(my_attention)``. The checker runs it on a few seeded cases, compares each result with the
reference in ``helpers`` and returns a :class:`Verdict`, which the cell shows as a short text.

What a checker does:

- It runs your code on fresh copies of each case's inputs, and the reference on copies of its own. Your answer
  fails if it changed an input in place (``x += ...``, ``steps.pow_(...)``, ``lengths.sort()``, a norm's weight),
  and the verdict names the argument, since the caller's tensor would change with it.
- Each case runs under a time limit (10 s; :func:`set_time_limit` changes it), so an endless loop gives a verdict
  instead of hanging the notebook.
- It compares on the CPU, to ``rtol=1e-4, atol=1e-5``. Any floating dtype passes when the values are right; masks
  must be boolean and token ids integers (of the inputs' own dtype where the exercise says so). A list returned
  instead of a tuple passes. "Close, but outside the tolerance" is said only when the error is small next to the
  values.
- When your answer is wrong, it runs deliberately wrong versions of the reference (the classic mistakes); if one
  reproduces your answer on every case, the verdict names that mistake and how to fix it. Otherwise it says where
  the wrong entries are (a column, row or batch only when the pattern is structural) and gives a hint.
- A stub whose own body still raises a bare ``NotImplementedError`` is "not attempted yet" and gets the first hint.
  A ``NotImplementedError`` raised deeper, in an unfinished function your answer calls, is a failure that says
  where; one your answer raises with a message of its own is a failure like any error.
- Where an exercise asks for whole-tensor code (10.1), an answer with right values whose own lines ran once per
  element (a Python loop or comprehension) fails, naming the line.

Hints come in tiers, chosen by how many failures at the exercise that no named mistake explains came before in this
kernel (counted per exercise id, "01.1"; a stub does not count; every attempt is counted and a pass is shown as
"(attempt 3)"):

1. the first failure that no named mistake explains gets the conceptual hint: which equation, which axis, what to
   print to see the difference;
2. the second gets a hint in code: which functions, which shapes, not assembled;
3. the third and later get a reference solution, line by line.

In graded mode (``ATTENTION_GRADED=1``, or the file ``course/exercises/GRADED`` of a student copy) the third and
later failures get the hint in code again, never a solution, and ``solution("01.1")`` says that solutions are
switched off; ``ATTENTION_GRADED=0`` turns it off.

A failure that names a mistake gives its diagnosis on every attempt and does not use up a tier. ``solution("01.1")`` (or
``verdict.solution()``) shows a solution at any time; other ways to write it pass as well. ``reset_attempts()``
forgets the counts, of one exercise (``reset_attempts("01.1")``) or of all. A verdict's text depends only on your
answer and the count, so a notebook that runs a checker several times shows the same text on every Run All.

Where the checkers live: ``course.exercises.nb01`` ... ``nb15`` hold each notebook's checkers (``nb03`` those of
exercises 03.x), each with its cases, classic mistakes and hints; :mod:`course.exercises.engine` holds the machinery
they share. This package gathers the ``check_*`` functions, :class:`Verdict`, :func:`solution`,
:func:`reset_attempts` and :func:`set_time_limit`.
"""

from __future__ import annotations

from course.exercises.engine import Verdict, reset_attempts, set_time_limit, solution
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
from course.exercises.nb15 import check_top_p

__all__ = [
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
    "check_top_p",
    "reset_attempts",
    "set_time_limit",
    "solution",
]
