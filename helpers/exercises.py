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
"""

from __future__ import annotations

import copy
import ctypes
import functools
import inspect
import itertools
import linecache
import math
import os
import re
import signal
import sysconfig
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from helpers import tasks
from helpers.attention import MultiHeadAttention, scaled_dot_product_attention
from helpers.encoder import EncoderBlock, positional_encoding
from helpers.masks import causal_mask, padding_mask

__all__ = [
    "TIME_LIMIT_S",
    "Verdict",
    "check_attention",
    "check_cached_attention",
    "check_causal_mask",
    "check_combine_heads",
    "check_decoder_block",
    "check_encoder_block",
    "check_grouped_attention",
    "check_length_penalty",
    "check_masked_attention",
    "check_multi_head_attention",
    "check_online_softmax_update",
    "check_padding_mask",
    "check_positional_encoding",
    "check_rate",
    "check_reverse_targets",
    "check_shift_right",
    "check_split_heads",
    "reset_attempts",
    "solution",
]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"

TIME_LIMIT_S = 10.0
"""Seconds one case of an answer may run before the checker stops it (``None`` or 0: no limit)."""

RTOL, ATOL = 1e-4, 1e-5  # float comparisons: |actual - expected| <= ATOL + RTOL * |expected|


@dataclass
class Verdict:
    """What a checker found. ``status`` is "passed", "failed" or "not attempted";
    ``mistake`` names the recognised classic mistake (or ``None``); ``attempt`` counts this exercise's attempts in
    this kernel, this one included (0 for "not attempted", which does not count)."""

    exercise: str
    status: str
    message: str
    mistake: str | None = None
    details: list[str] = field(default_factory=list)
    attempt: int = 0

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def exercise_id(self) -> str:
        """The exercise's number, "01.1"."""
        return _exercise_id(self.exercise)

    def solution(self) -> _Code:
        """A reference solution of this verdict's exercise, as code (shown as text by a notebook cell)."""
        return solution(self.exercise_id)

    def __str__(self) -> str:
        lines = [f"{self.exercise}: {self.message}", *(f"  {line}" for line in self.details)]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython shows the text, not a dataclass repr
        printer.text(str(self))


@dataclass
class _Mistake:
    key: str
    wrong: Callable  # same signature as the reference
    diagnosis: str


@dataclass
class _Case:
    name: str
    args: tuple
    # label -> boolean tensor broadcastable to the results: "only <label> differ" when the wrong entries lie inside
    regions: dict[str, torch.Tensor] = field(default_factory=dict)
    error_hints: tuple = ()  # _ErrorHint's that apply to this case only
    # True where the results span orders of magnitude (learning rates): "close" then means a small error relative
    # to each entry, not a small absolute one
    relative: bool = False
    # ("step", [1, 38, ...]): what the entries of a 1-D result stand for, so that the verdict says "at step 38", not
    # "at index (1,)"
    labels: tuple[str, list] | None = None


@dataclass
class _ErrorHint:
    """A diagnosis for an exception the answer raised: ``matches(error)`` -> named mistake."""

    key: str
    matches: Callable[[BaseException], bool]
    diagnosis: str


# --- hints in tiers, and the attempts that choose them -------------------------------------------


class _Code(str):
    """Code as text: a notebook cell shows it as it is, not as a quoted string."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))


@dataclass(frozen=True)
class _Hints:
    """An exercise's hints, from the one that gives least away to the solution.

    ``concept``: what to compute, over which axis, by which equation, and what to print to see a difference (for a
    stub, and for the first failed attempt that no named mistake explains); ``code``: which functions and shapes,
    not assembled into the answer (the second such attempt); ``solution``: a reference solution, one line of code a
    line (the third, or :func:`solution` at any time)."""

    concept: str
    code: str
    solution: str


_HINTS: dict[str, _Hints] = {}  # exercise id ("01.1") -> its hints

_ATTEMPTS: dict[str, list[bool]] = {}
"""Each exercise's attempts in this kernel, in order, True for a pass: ``{"01.1": [False, False, True]}``. A stub
("not attempted") does not count; a pass is recorded and resets nothing."""


def _hints(exercise_id: str, concept: str, code: str, solution: str) -> _Hints:
    hints = _HINTS[exercise_id] = _Hints(concept, code, solution)
    return hints


def _exercise_id(exercise: str) -> str:
    """ "01.1" from "Exercise 01.1 attention" (or from "01.1" itself)."""
    found = re.search(r"\d\d\.\d", exercise)
    return found.group(0) if found else exercise


def solution(exercise: str) -> _Code:
    """A reference solution of a checked exercise, ``solution("01.1")``, as code: the body of the exercise's
    function (or its class, for 03.3). Other ways to write it pass as well."""
    key = _exercise_id(str(exercise))
    if key not in _HINTS:
        raise ValueError(f"no checked exercise {exercise!r}; the checked ones are {', '.join(sorted(_HINTS))}.")
    return _Code(_HINTS[key].solution)


def reset_attempts(exercise: str | None = None) -> None:
    """Forget the attempts counted for one exercise (``reset_attempts("01.1")``) or, with no argument, for all of
    them: the next failed attempt gets the conceptual hint again."""
    if exercise is None:
        _ATTEMPTS.clear()
    else:
        _ATTEMPTS.pop(_exercise_id(exercise), None)


_TIERED_HINT = "\x00tiered hint"  # a placeholder among a verdict's details: _record puts this attempt's hint there


def _tiered(hints: _Hints, failures: int, exercise_id: str) -> list[str]:
    """The hint for the ``failures``-th failed attempt at an exercise that no named mistake explains."""
    ask = f'helpers.exercises.solution("{exercise_id}")'
    if failures <= 1:
        return [
            f"Hint: {hints.concept}",
            f"(Failed attempt 1 at {exercise_id}: a second adds a hint in code, a third a solution; {ask} shows one "
            "now.)",
        ]
    if failures == 2:
        return [
            f"Hint in code: {hints.code}",
            f"(Failed attempt 2 at {exercise_id}: a third shows a solution; {ask} shows it now.)",
        ]
    return [
        f"Hint in code: {hints.code}",
        f"A solution (failed attempt {failures} at {exercise_id}):",
        *(f"    {line}" for line in hints.solution.splitlines()),
    ]


def _record(verdict: Verdict) -> Verdict:
    """Count the attempt (a stub does not count) and put the hint of this attempt's tier into the verdict."""
    if verdict.status == NOT_ATTEMPTED:
        return verdict
    exercise_id = verdict.exercise_id
    history = _ATTEMPTS.setdefault(exercise_id, [])
    history.append(verdict.passed)
    verdict.attempt = len(history)
    if verdict.passed and len(history) > 1:
        verdict.message = f"{verdict.message.rstrip('.')} (attempt {len(history)})."
    if _TIERED_HINT in verdict.details:
        at = verdict.details.index(_TIERED_HINT)
        hints = _HINTS.get(exercise_id)
        verdict.details[at : at + 1] = _tiered(hints, history.count(False), exercise_id) if hints else []
    return verdict


def _counted(checker: Callable) -> Callable:
    """A public checker that counts its attempts and tiers its hints (:func:`_record`)."""

    @functools.wraps(checker)
    def counted(*args, **kwargs) -> Verdict:
        return _record(checker(*args, **kwargs))

    return counted


# --- running the reader's code: fresh inputs, a time limit, where an error was raised ----------


class _Timeout(BaseException):
    """Raised inside the reader's code when a case runs past the time limit (not an ``Exception``,
    so a bare ``except Exception`` in the answer cannot swallow it)."""


def _fresh(x, memo: dict | None = None):
    """A copy of a case's inputs: tensors cloned, modules deep-copied, lists and tuples rebuilt, anything else
    (functions, ints) shared. The same tensor passed twice stays one tensor (self-attention's x, x, x)."""
    memo = {} if memo is None else memo
    if id(x) in memo:
        return memo[id(x)]
    if isinstance(x, torch.Tensor):
        result = x.detach().clone()
    elif isinstance(x, nn.Module):
        result = copy.deepcopy(x)
    elif isinstance(x, list):
        result = [_fresh(item, memo) for item in x]
    elif isinstance(x, tuple):
        result = tuple(_fresh(item, memo) for item in x)
    else:
        return x
    memo[id(x)] = result
    return result


def _differs(after, before) -> bool:
    """True when an input (``after``, as the answer left it) is no longer equal to its saved copy ``before``."""
    if isinstance(before, torch.Tensor):
        if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
            return True
        after = after.detach()
        if after.device != before.device:  # .data replaced by a tensor on another device
            return True
        same = after == before
        if before.is_floating_point() or before.is_complex():
            same |= torch.isnan(after) & torch.isnan(before)
        return not bool(same.all())
    if isinstance(before, nn.Module):
        mine, theirs = after.state_dict(), before.state_dict()
        return mine.keys() != theirs.keys() or any(_differs(mine[name], theirs[name]) for name in theirs)
    if isinstance(before, (list, tuple)):
        return (
            type(after) is not type(before)
            or len(after) != len(before)
            or any(_differs(a, b) for a, b in zip(after, before, strict=True))
        )
    if isinstance(before, (bool, int, float, str)):
        return bool(after != before)
    return False


@dataclass
class _InPlace:
    """An input the answer changed in place, on one case: its position and the others that were the same object."""

    case: str
    index: int
    aliases: tuple[int, ...]  # the positions that held the very same object in this case (self-attention's x, x, x)


def _changed_inputs(case: str, args: tuple, saved: tuple) -> list[_InPlace]:
    found = []
    for index, (after, before) in enumerate(zip(args, saved, strict=True)):
        if isinstance(after, (torch.Tensor, nn.Module, list, tuple)) and _differs(after, before):
            aliases = tuple(j for j, other in enumerate(args) if other is after and j != index)
            found.append(_InPlace(case, index, aliases))
    return found


def _argument(names: tuple[str, ...] | None, index: int) -> str:
    return f"`{names[index]}`" if names and index < len(names) else f"argument {index + 1}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _in_place_text(
    changes: list[_InPlace], args_by_case: dict[str, tuple], names, why: str | None
) -> tuple[str, str, str]:
    """(what changed, for the message; the same as a mistake key; the diagnosis), from the case that tells the
    arguments apart best (one where no changed input was passed twice)."""
    cases = list(dict.fromkeys(change.case for change in changes))
    unaliased = [c for c in cases if all(not ch.aliases for ch in changes if ch.case == c)]
    case = (unaliased or cases)[0]
    args = args_by_case[case]
    labels, plain, told, reported = [], [], set(), []
    for change in (ch for ch in changes if ch.case == case):
        if change.index in told:  # an alias of one already named
            continue
        told.update((change.index, *change.aliases))
        reported.append(change.index)
        label = _argument(names, change.index)
        if change.aliases:  # the same object passed twice: which name the answer used cannot be told
            label += f" (the same tensor as {_and([_argument(names, j) for j in change.aliases])} in this case)"
        labels.append(label)
        plain.append(_argument(names, change.index).strip("`"))
    first = args[reported[0]]
    name = plain[0] if names else "x"
    if isinstance(first, nn.Module):
        default_why = (
            "its parameters or buffers changed, so every later call of that module changes with them. Call the "
            f"module, {name}(...), and leave its weights alone."
        )
    elif isinstance(first, (list, tuple)):
        default_why = (
            f"the caller's list changes with it (as with `{name}.sort()` or `{name}[i] = ...`). Work on a copy: "
            f"sorted({name}), list({name}) or torch.as_tensor({name})."
        )
    else:
        default_why = (
            "the caller's tensor changes with it, so whatever uses it after the call (a plot, the next step, "
            "autograd's saved inputs in training) sees other values. Compute a new tensor instead: "
            f"`{name} = {name} + ...` rather than `{name} += ...`, `{name}.pow(...)` rather than "
            f"`{name}.pow_(...)` (a method whose name ends in `_` works in place), and no assignment into "
            f"`{name}[...]`."
        )
    what = _and(labels)
    return what, f"{_and(plain)} changed in place", f"your function changed {what} in place; {why or default_why}"


def _call_in_thread(fn: Callable, args: tuple, limit: float):
    """Run ``fn(*args)`` in a worker thread; past ``limit`` seconds, raise ``_Timeout`` inside it and here."""
    outcome: dict = {}
    grad_enabled = torch.is_grad_enabled()  # grad mode is per thread: carry the caller's over

    def target() -> None:
        try:
            with torch.set_grad_enabled(grad_enabled):
                outcome["value"] = fn(*args)
        except BaseException as error:  # handed back to the caller below
            outcome["error"] = error

    worker = threading.Thread(target=target, name="exercise-checker", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        for _ in range(100):  # stop the endless loop: raise _Timeout in the worker at its next bytecode
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident), ctypes.py_object(_Timeout))
            worker.join(0.05)
            if not worker.is_alive():
                break
        raise _Timeout
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _call_with_limit(fn: Callable, args: tuple):
    """``fn(*args)`` under the time limit: SIGALRM in the main thread (where Jupyter runs cells),
    a watched worker thread anywhere else or where there is no SIGALRM."""
    limit = TIME_LIMIT_S
    if not limit:
        return fn(*args)
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return _call_in_thread(fn, args, limit)

    def on_alarm(signum, frame):
        raise _Timeout

    try:
        previous = signal.signal(signal.SIGALRM, on_alarm)
    except ValueError:  # not the main thread of the main interpreter after all
        return _call_in_thread(fn, args, limit)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.monotonic()
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if old_delay:  # someone else's alarm was pending: put it back
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - start), 1e-3), old_interval)


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {os.path.dirname(torch.__file__), os.path.dirname(os.path.abspath(__file__))}
    dirs.update(paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(os.path.abspath(d) + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def _frames(error: BaseException):
    tb = error.__traceback__
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _where_raised(error: BaseException) -> str | None:
    """'in my_split_heads, line 3': the innermost frame of the reader's own code in the traceback."""
    own = [tb for tb in _frames(error) if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY_DIRS)]
    if not own:
        return None
    tb = own[-1]
    return f"`{tb.tb_frame.f_code.co_name}`, line {tb.tb_lineno}"


def _answer_codes(fn) -> set:
    """The code objects of the answer's own body (unwrapping partials, methods, modules, callables)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, nn.Module):
        fn = type(fn).forward
    elif callable(fn) and not isinstance(fn, type) and not hasattr(fn, "__code__") and not hasattr(fn, "__func__"):
        fn = type(fn).__call__  # a callable object: its __call__ is the body
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return {code} if code is not None else set()


_STUB_MESSAGE = re.compile(r"your code|todo|stub|exercise", re.IGNORECASE)


def _raised_by_stub(error: NotImplementedError, codes: set) -> bool:
    """True when the answer's own body raised it (the stub), or its message marks a stub."""
    last = None
    for tb in _frames(error):
        last = tb
    return (last is not None and last.tb_frame.f_code in codes) or bool(_STUB_MESSAGE.search(str(error)))


def _short(text: str, limit: int = 300) -> str:
    """The first ``limit`` characters of an error message, cut at a word boundary."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


def _kind(x) -> str:
    """What a value is, in words: 'a tensor of shape (2, 3), dtype torch.float32', 'a list of 2', 'an int'."""
    if x is None:
        return "None"
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)}, dtype {x.dtype}"
    if isinstance(x, (list, tuple)):
        return f"a {type(x).__name__} of {len(x)}"
    name = type(x).__name__ if type(x).__module__ == "builtins" else f"{type(x).__module__}.{type(x).__name__}"
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _outputs(value, count: int) -> list:
    """A result of ours (the reference's or a mistake's) as a list of detached CPU tensors."""
    values = list(value) if isinstance(value, (tuple, list)) and count > 1 else [value]
    return [v.detach().cpu() if isinstance(v, torch.Tensor) else v for v in values]


def _normalise(value, names: tuple[str, ...] | None) -> tuple[list | None, str | None]:
    """The answer's result as a list of detached CPU tensors, or a return-type message."""
    count = len(names) if names else 1
    wanted = f"a tuple ({', '.join(names)})" if names else "one tensor"
    if count > 1:
        if not isinstance(value, (tuple, list)) or len(value) != count:
            got = "one tensor" if isinstance(value, torch.Tensor) else _kind(value)
            return None, f"returned {got}; return {wanted}."
        values = list(value)  # a list of the right length is as good as a tuple
    else:
        if isinstance(value, (tuple, list)) and not (len(value) == 1 and isinstance(value[0], torch.Tensor)):
            return None, f"returned {_kind(value)}; return {wanted}, not a {type(value).__name__}."
        values = list(value) if isinstance(value, (tuple, list)) else [value]
    result = []
    for index, item in enumerate(values):
        label = names[index] if names else "result"
        if not isinstance(item, torch.Tensor):
            extra = " (torch.as_tensor(...) converts it)" if type(item).__module__.startswith("numpy") else ""
            return None, f"{label}: returned {_kind(item)}; return a torch tensor{extra}."
        try:
            result.append(item.detach().cpu())
        except Exception as error:  # e.g. a tensor on the meta device
            return None, (
                f"{label}: returned a tensor on device {item.device} that cannot be moved to the CPU "
                f"({_short(error, 120)}); return a tensor on the CPU, like the inputs."
            )
    return result, None


# --- comparing results ----------------------------------------------------------------------------


def _category(t: torch.Tensor) -> str:
    if t.dtype == torch.bool:
        return "bool"
    if t.is_floating_point():
        return "float"
    if t.is_complex():
        return "complex"
    return "int"


def _wrong_entries(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Boolean tensor: True where ``x`` (the answer) differs from ``y`` (same shape and kind)."""
    if _category(y) == "float":
        return ~torch.isclose(x.double(), y.double(), rtol=RTOL, atol=ATOL, equal_nan=True)
    return x.long() != y.long() if _category(y) == "int" else x != y


def _same_one(x, y, exact_dtype: str | None = None) -> bool:
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.shape != y.shape:
        return False
    if _category(x) != _category(y) or (exact_dtype and x.dtype != y.dtype):
        return False
    return not bool(_wrong_entries(x, y).any())


def _same(a: list, b: list, exact_dtype: str | None = None) -> bool:
    """Results equal in structure, shape, dtype kind (or dtype, when exact) and values (NaN equal to NaN)."""
    return len(a) == len(b) and all(_same_one(x, y, exact_dtype) for x, y in zip(a, b, strict=True))


def _indices(flags: torch.Tensor, labels: list | None = None) -> str:
    """'1, 3', '0-122' (a run of 3 or more), '0-3, 7, 9, ...': the first four runs of True entries, each entry
    named by its index or, given ``labels``, by its label (10.1's step numbers)."""
    found = flags.nonzero().flatten().tolist()
    runs: list[list[int]] = []
    for index in found:
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    name = (lambda i: str(labels[i])) if labels is not None else str
    parts = []
    for run in runs:
        parts.extend([f"{name(run[0])}-{name(run[-1])}"] if len(run) >= 3 else map(name, run))
    return ", ".join(parts[:4]) + (", ..." if len(parts) > 4 else "")


def _plural(flags: torch.Tensor, one: str, many: str) -> str:
    return one if int(flags.sum()) == 1 else many


def _structural(wrong: torch.Tensor, axis: int) -> tuple[torch.Tensor, bool]:
    """Which slices along ``axis`` hold a wrong entry, and whether that is a pattern rather than a coincidence:
    there are at least two slices, not all of them are wrong, and each wrong slice is wrong in at least half of its
    entries (a wrong column, for instance, in at least half of the rows), so that a few scattered wrong entries
    that happen to fall into, say, the odd columns are not reported as 'only in the odd columns'."""
    slices = wrong.movedim(axis, 0).reshape(wrong.shape[axis], -1)
    hit = slices.any(1)
    if slices.shape[0] < 2 or hit.all() or slices.shape[1] < 2:
        return hit, False
    counts = slices.sum(1)
    return hit, bool((2 * counts[hit] >= slices.shape[1]).all())


def _pattern(wrong: torch.Tensor, regions: dict[str, torch.Tensor], labels: tuple[str, list] | None = None) -> str:
    """Where the wrong entries are, in a few words: 'only in the odd columns (last axis)', 'only at index 3' ('' when
    there is no pattern). A column, row or batch pattern is said only when it is structural (see
    :func:`_structural`); otherwise a few wrong entries are listed by index. ``labels`` ("step", [1, 38, ...]) name
    the entries of a 1-D result (10.1's sampled steps)."""
    for label, region in regions.items():
        try:
            inside = torch.broadcast_to(region, wrong.shape)
        except RuntimeError:
            continue
        if inside.any() and not (wrong & ~inside).any():
            return f"only in {label}"
    if wrong.dim() == 0:
        return ""
    if wrong.dim() == 1:
        if wrong.shape[0] < 2 or wrong.all():
            return ""
        if labels is not None:
            word, names = labels
            return f"only at {_plural(wrong, word, word + 's')} {_indices(wrong, names)}"
        return f"only at {_plural(wrong, 'index', 'indices')} {_indices(wrong)}"
    if wrong.shape[-1] >= 2:
        columns, structural = _structural(wrong.reshape(-1, wrong.shape[-1]), 1)
        if structural:
            if wrong.shape[-1] >= 4 and columns[1::2].all() and not columns[0::2].any():
                return "only in the odd columns (last axis)"
            if wrong.shape[-1] >= 4 and columns[0::2].all() and not columns[1::2].any():
                return "only in the even columns (last axis)"
            return f"only in {_plural(columns, 'column', 'columns')} {_indices(columns)} (last axis)"
    if wrong.shape[-2] >= 2:
        rows, structural = _structural(wrong, -2)
        if structural:
            return f"only in {_plural(rows, 'row', 'rows')} {_indices(rows)} (axis -2)"
    if wrong.dim() >= 3 and wrong.shape[0] >= 2:
        batch, structural = _structural(wrong, 0)
        if structural:
            return f"only in {_plural(batch, 'batch entry', 'batch entries')} {_indices(batch)} (axis 0)"
    if 0 < int(wrong.sum()) <= 3:
        at = [str(tuple(index)) for index in wrong.nonzero().tolist()]
        return f"only at {_plural(wrong, 'index', 'indices')} {_and(at)}"
    return ""


def _at(where: tuple, case: _Case) -> str:
    """'at index (1, 0)', or 'at step 38' where the case names its entries."""
    if case.labels is not None and len(where) == 1:
        word, names = case.labels
        return f"at {word} {names[where[0]]}"
    return f"at index {where}"


def _value(t: torch.Tensor, where: tuple) -> str:
    item = t[where].item()
    return f"{item:.4f}" if isinstance(item, float) else str(item)


def _close(x: torch.Tensor, y: torch.Tensor, wrong: torch.Tensor, relative: bool) -> bool:
    """Whether the wrong entries are only a little off, as rounding or a slightly different constant would make
    them: within 1% of each entry's own value for a ``relative`` case, otherwise within 0.01 and within 1% of the
    largest expected value (so a tensor of small values is not "close" to one off by 100%)."""
    error = (x.double() - y.double()).abs()[wrong]
    if relative:
        return bool((error <= 1e-2 * y.double().abs()[wrong]).all())
    largest = error.max().item()
    return largest < 1e-2 and largest <= 1e-2 * y.double().abs().max().item()


def _difference(
    actual: list, expected: list, names, case: _Case, exact_dtype: str | None = None
) -> tuple[list[str], set[str]]:
    """A short account of how ``actual`` differs from ``expected``, and the kinds of difference found."""
    lines, kinds = [], set()
    for index, (x, y) in enumerate(zip(actual, expected, strict=True)):
        label = names[index] if names else "result"
        if x.shape != y.shape:
            kinds.add("shape")
            note = ""
            if [size for size in x.shape if size != 1] == [size for size in y.shape if size != 1]:
                note = " (the same apart from axes of size 1: an unsqueeze or indexing too many or too few?)"
            elif sorted(x.shape) == sorted(y.shape):
                note = " (the same sizes in another order: a transpose is missing or extra?)"
            elif x.numel() == y.numel():
                note = " (the same number of entries, arranged differently)"
            lines.append(f"{label}: expected shape {tuple(y.shape)}, got {tuple(x.shape)}{note}")
            continue
        if _category(x) != _category(y):
            kinds.add("dtype")
            if _category(y) == "bool":
                if bool(((x == 0) | (x == 1)).all()):
                    kind = "a float" if x.is_floating_point() else "an integer"
                    lines.append(
                        f"{label}: {kind} 0/1 mask ({x.dtype}); return a boolean tensor (`.bool()` or a "
                        "comparison), as the series' masks are (True = may attend)."
                    )
                else:
                    lines.append(f"{label}: expected a boolean tensor, got dtype {x.dtype}.")
            elif _category(y) == "int":
                lines.append(
                    f"{label}: expected integer token ids (dtype {y.dtype}), got dtype {x.dtype}; build the result "
                    "from the tokens (e.g. torch.zeros_like(tokens)) so it keeps their integer dtype."
                )
            else:
                lines.append(f"{label}: expected a floating-point tensor (like {y.dtype}), got dtype {x.dtype}.")
            continue
        if exact_dtype and x.dtype != y.dtype:
            kinds.add("dtype")
            lines.append(
                f"{label}: dtype {x.dtype}, expected {y.dtype}, {exact_dtype} (the exercise asks for the same "
                "dtype); build the result from them (torch.full_like, new_full, torch.cat) so that it keeps their "
                "dtype, rather than from a new tensor of the default dtype or with a cast."
            )
        wrong = _wrong_entries(x, y)
        if not wrong.any():
            continue
        kinds.add("values")
        k, total = int(wrong.sum()), wrong.numel()
        pattern = _pattern(wrong, case.regions, case.labels)
        if k == total:
            count = "shape right, its one entry differs" if total == 1 else f"shape right, all {total} entries differ"
        else:
            count = f"{k} of {total} entries differ"
        count += f", {pattern}" if pattern and k != total else ""
        if _category(y) == "float":
            nan = torch.isnan(x) & ~torch.isnan(y)
            if nan.any():
                kinds.add("nan")
                nan_pattern = _pattern(nan, case.regions, case.labels)
                lines.append(
                    f"{label}: contains NaN in {int(nan.sum())} of {total} entries"
                    f"{f', {nan_pattern}' if nan_pattern else ''}; expected none."
                )
                continue
            diff = (x.double() - y.double()).abs().nan_to_num(nan=math.inf).masked_fill(~wrong, -1.0)
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            largest = diff.max().item()
            line = (
                f"{label}: {count}; largest difference {largest:.4g} {_at(where, case)} "
                f"(expected {_value(y, where)}, got {_value(x, where)})"
            )
            if case.relative:  # a small absolute difference can be a large relative one (a tiny early rate)
                relative = (diff / y.double().abs()).nan_to_num(nan=math.inf).masked_fill(~wrong, -1.0)
                at = tuple(int(i) for i in torch.unravel_index(relative.argmax(), relative.shape))
                line += f"; largest relative difference {100 * relative.max().item():.3g}% {_at(at, case)}"
            if _close(x, y, wrong, case.relative):
                line += f"; close, but outside the tolerance (rtol={RTOL:g}, atol={ATOL:g})"
            if x.dtype != y.dtype:
                line += f"; your {label} is {x.dtype}, the reference {y.dtype}"
            lines.append(line)
        else:
            where = tuple(wrong.nonzero()[0].tolist())
            lines.append(
                f"{label}: {count}; first {_at(where, case)} (expected {_value(y, where)}, got {_value(x, where)})"
            )
    if names and len(names) > 1 and lines:
        bad = [
            names[i] for i, (x, y) in enumerate(zip(actual, expected, strict=True)) if not _same_one(x, y, exact_dtype)
        ]
        good = [name for name in names if name not in bad]
        if good:
            lines.append(f"{' and '.join(good)} match; {' and '.join(bad)} {'does' if len(bad) == 1 else 'do'} not.")
    return lines, kinds


def _match(mistakes: list[_Mistake], cases: list[_Case], answers: list[list], count: int) -> _Mistake | None:
    """The first mistake that reproduces the answer on every case, not just the failing one."""
    for mistake in mistakes:
        try:
            if all(
                _same(answer, _outputs(mistake.wrong(*_fresh(case.args)), count))
                for case, answer in zip(cases, answers, strict=True)
            ):
                return mistake
        except Exception:  # a variant that cannot run on some case reproduces nothing
            continue
    return None


def _as_mask(answers: list[list], expected: list[list]) -> list[list] | None:
    """The answers as boolean masks, when the reference returns masks and the answer is a 0/1 tensor."""
    converted = []
    for answer, reference in zip(answers, expected, strict=True):
        row = []
        for x, y in zip(answer, reference, strict=True):
            if _category(y) != "bool" or _category(x) == "bool":
                row.append(x)
            elif x.is_complex() or not bool(((x == 0) | (x == 1)).all()):
                return None
            else:
                row.append(x != 0)
        converted.append(row)
    return converted


_VIEW_ERROR = _ErrorHint(
    "view on a non-contiguous tensor",
    lambda error: isinstance(error, RuntimeError) and "view size is not compatible" in str(error),
    "`.view` cannot merge or split axes of a transposed tensor (it is no longer contiguous in memory): use "
    "`.reshape(...)` or `.flatten(...)`, which copy when they must, or `.contiguous().view(...)`.",
)


def _error_verdict(exercise, subject, error, error_hints) -> Verdict:
    where = _where_raised(error)
    details = [f"Raised in {where}."] if where else []
    message = f"{subject} raised {type(error).__name__}: {_short(error)}"
    for hint in (*error_hints, _VIEW_ERROR):
        if hint.matches(error):
            return Verdict(exercise, FAILED, message, hint.key, [*details, f"Likely mistake: {hint.diagnosis}"])
    return Verdict(exercise, FAILED, message, None, [*details, _TIERED_HINT])


def _run(exercise, answer, subject, args, codes, hints, error_hints):
    """Call the answer once; return ``(result, None)`` or ``(None, Verdict)`` for an error, a timeout or a stub.

    ``subject`` starts the verdict's message: 'case "n=4"', or 'MyMultiHeadAttention(12, 3)'."""
    try:
        with torch.random.fork_rng():  # the reader's code may draw random numbers; keep their state
            return _call_with_limit(answer, args), None
    except _Timeout:
        return None, Verdict(
            exercise,
            FAILED,
            f"{subject} did not finish within {TIME_LIMIT_S:g} s.",
            "time limit",
            [
                "Likely mistake: an endless loop. Check that every `while` loop's condition changes inside the loop "
                "(or use a `for` loop over a range). Each case runs in a fraction of a second when right."
            ],
        )
    except NotImplementedError as error:
        if 'missing the required "forward" function' in str(error):
            return None, Verdict(
                exercise,
                FAILED,
                f"{subject}: your module has no forward method.",
                "forward misspelled",
                [
                    "Likely mistake: the method is not spelled exactly `forward` (e.g. `forwad`), so nn.Module "
                    "falls back to its own forward, which raises NotImplementedError."
                ],
            )
        if _raised_by_stub(error, codes):
            return None, Verdict(exercise, NOT_ATTEMPTED, "not attempted yet.", details=[f"Hint: {hints.concept}"])
        where = _where_raised(error) or "a function your answer calls"
        return None, Verdict(
            exercise,
            FAILED,
            f"{subject} raised NotImplementedError in {where}.",
            "unfinished helper",
            [
                f"Your answer calls {where}, which is not written yet (it still raises NotImplementedError): "
                "finish that function first, or do its step inline."
            ],
        )
    except (Exception, SystemExit) as error:  # the reader's code raised: show it, do not crash the notebook
        return None, _error_verdict(exercise, subject, error, error_hints)


def _check(
    exercise: str,
    answer: Callable,
    reference: Callable,
    cases: list[_Case],
    mistakes: list[_Mistake],
    hints: _Hints,
    names: tuple[str, ...] | None = None,
    error_hints: tuple[_ErrorHint, ...] = (),
    codes: set | None = None,
    notes: tuple[str, ...] = (),
    inputs: tuple[str, ...] | None = None,
    in_place_why: str | None = None,
    exact_dtype: str | None = None,
) -> Verdict:
    """Run ``answer`` on every case (fresh inputs, time limit), compare it with ``reference`` and diagnose.

    ``hints`` are the exercise's hints: a stub gets the conceptual one; a failed attempt that no named mistake
    explains gets a placeholder that :func:`_record` fills with its tier's hint. ``notes`` are appended to a failed verdict (e.g. parameters the checker did
    not fill). ``names`` name the results, ``inputs`` the arguments (as the exercise's stub does): an argument the
    answer changed in place fails the answer, by that name, with ``in_place_why`` (what goes wrong, and the fix)
    after it, or a generic reason. ``exact_dtype`` (e.g. "the dtype of `targets`"): a result must have the
    reference's dtype, that one, not just its kind (floating, integer, boolean)."""
    if not callable(answer):
        return Verdict(
            exercise,
            FAILED,
            f"expected your function, got {_kind(answer)}.",
            "not a function",
            [
                "Pass the function itself, without calling it: e.g. check_attention(my_attention), not my_attention(...)."
            ],
        )
    changes: list[_InPlace] = []  # the inputs the answer changed in place, case by case
    args_by_case: dict[str, tuple] = {}

    def told(verdict: Verdict) -> Verdict:
        """The verdict, failed and with the argument named when the answer changed an input in place."""
        if not changes or verdict.status == NOT_ATTEMPTED:
            return verdict
        what, key, in_place = _in_place_text(changes, args_by_case, inputs, in_place_why)
        if verdict.passed:
            message = f"the returned values are right, but {what} changed."
            return Verdict(exercise, FAILED, message, key, [f"Likely mistake: {in_place}"])
        verdict.details.append(f"Also: {in_place}")
        return verdict

    codes = _answer_codes(answer) if codes is None else codes
    count = len(names) if names else 1
    answers = []
    for case in cases:
        subject = f'case "{case.name}"'
        case_hints = (*case.error_hints, *error_hints)
        args = _fresh(case.args)
        saved = _fresh(args)  # a second copy: what the inputs were before the call
        actual, verdict = _run(exercise, answer, subject, args, codes, hints, case_hints)
        if verdict is not None:
            return told(verdict)
        found = _changed_inputs(case.name, args, saved)
        if found:
            args_by_case[case.name] = args
            changes.extend(found)
        if actual is None:
            return told(
                Verdict(
                    exercise,
                    FAILED,
                    f'case "{case.name}": your answer returned None.',
                    "no return",
                    ["Did you forget `return`? A function that ends without a return statement gives None."],
                )
            )
        values, problem = _normalise(actual, names)
        if problem is not None:
            return told(
                Verdict(
                    exercise, FAILED, f'case "{case.name}" returned the wrong type.', "wrong return type", [problem]
                )
            )
        answers.append(values)
    try:
        verdict = _compare(exercise, reference, cases, answers, mistakes, names, count, notes, exact_dtype)
    except Exception as error:  # a result the comparison cannot handle must not crash the notebook
        verdict = Verdict(exercise, FAILED, f"could not compare your result ({type(error).__name__}: {_short(error)}).")
    return told(verdict)


def _compare(exercise, reference, cases, answers, mistakes, names, count, notes, exact_dtype) -> Verdict:
    expected = [_outputs(reference(*_fresh(case.args)), count) for case in cases]
    failed = [i for i in range(len(cases)) if not _same(answers[i], expected[i], exact_dtype)]
    if not failed:
        return Verdict(exercise, PASSED, f"all {len(cases)} cases passed.")
    first = failed[0]
    message = f'case "{cases[first].name}" failed ({len(failed)} of {len(cases)} cases).'
    details, kinds = _difference(answers[first], expected[first], names, cases[first], exact_dtype)
    if kinds == {"dtype"} and all(_same(a, e) for a, e in zip(answers, expected, strict=True)):
        return Verdict(exercise, FAILED, message, "wrong dtype", details)  # the values are right: the line says it all
    mistake = _match(mistakes, cases, answers, count)
    if mistake is not None:
        return Verdict(
            exercise, FAILED, message, mistake.key, [*details, f"Likely mistake: {mistake.diagnosis}", *notes]
        )
    masks = _as_mask(answers, expected) if "dtype" in kinds else None
    if masks is not None:
        if all(_same(m, e) for m, e in zip(masks, expected, strict=True)):
            return Verdict(exercise, FAILED, message, "float mask", details)  # the dtype line says it all
        mistake = _match(mistakes, cases, masks, count)
        if mistake is not None:
            details.append(f"Likely mistake, besides the dtype: {mistake.diagnosis}")
            return Verdict(exercise, FAILED, message, mistake.key, details)
    if kinds & {"shape", "values"}:
        details.append(_TIERED_HINT)
    return Verdict(exercise, FAILED, message, None, [*details, *notes])


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _qkv(seed: int, batch: tuple[int, ...], n: int, m: int, d_k: int, d_v: int):
    g = _generator(seed)
    return (
        torch.randn(*batch, n, d_k, generator=g),
        torch.randn(*batch, m, d_k, generator=g),
        torch.randn(*batch, m, d_v, generator=g),
    )


# --- notebook 01: scaled dot-product attention -----------------------------------------------


def _attention_variant(query, key, value, *, dim=-1, scale=None, softmax=True, scale_after=False):
    d_k = query.shape[-1]
    scale = math.sqrt(d_k) if scale is None else scale(d_k)
    scores = query @ key.transpose(-2, -1)
    if scale_after:
        weights = torch.softmax(scores, dim=dim) / scale
    else:
        weights = torch.softmax(scores / scale, dim=dim) if softmax else scores / scale
    return weights @ value, weights


SOFTMAX_AXIS = (
    "softmax over the wrong axis (dim=1 or dim=-2) instead of the key axis (dim=-1): on (batch, n, m) scores "
    "the columns of your weights sum to 1, the rows must. dim=-1 is right for any number of leading axes."
)
NO_SCALING = "the scores are not divided by sqrt(d_k) (§3.2.1, Eq. 1)."

ATTENTION_MISTAKES = [
    _Mistake("softmax over queries", lambda q, k, v: _attention_variant(q, k, v, dim=-2), SOFTMAX_AXIS),
    _Mistake("softmax over queries", lambda q, k, v: _attention_variant(q, k, v, dim=1), SOFTMAX_AXIS),
    _Mistake(
        "outputs swapped",
        lambda q, k, v: _attention_variant(q, k, v)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    _Mistake("no scaling", lambda q, k, v: _attention_variant(q, k, v, scale=lambda d_k: 1.0), NO_SCALING),
    _Mistake(
        "scaled by d_k",
        lambda q, k, v: _attention_variant(q, k, v, scale=lambda d_k: d_k),
        "the scores are divided by d_k instead of sqrt(d_k).",
    ),
    _Mistake(
        "scaled by sqrt(d_v)",
        lambda q, k, v: _attention_variant(q, k, v, scale=lambda d_k: math.sqrt(v.shape[-1])),
        "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k = query.shape[-1], not the "
        "values' width.",
    ),
    _Mistake(
        "no softmax",
        lambda q, k, v: _attention_variant(q, k, v, softmax=False),
        "the weights are the scaled scores themselves: apply torch.softmax(scores, dim=-1) so each query's weights "
        "are positive and sum to 1 over the keys.",
    ),
    _Mistake(
        "scaled after the softmax",
        lambda q, k, v: _attention_variant(q, k, v, scale_after=True),
        "the weights are divided by sqrt(d_k) after the softmax, so rows no longer sum to 1: divide the scores "
        "before the softmax, softmax(QK^T / sqrt(d_k)).",
    ),
    _Mistake(
        "softmax over dim=0",
        lambda q, k, v: _attention_variant(q, k, v, dim=0),
        "softmax(dim=0) normalises over the first axis: on unbatched (n, m) scores that is the query axis, and "
        "with a batch (or heads) in front it mixes different sequences. Each query's weights must sum to 1 over "
        "the keys, the last axis: dim=-1, right for any number of leading axes.",
    ),
]


def _raising_line(error: BaseException) -> str:
    """The source line of the innermost frame of the reader's own code ('' when unknown), spaces removed."""
    own = [tb for tb in _frames(error) if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY_DIRS)]
    if not own:
        return ""
    tb = own[-1]
    return "".join(linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).split())


_TRANSPOSE_1_2_ERROR = _ErrorHint(
    "transpose(1, 2) on unbatched input",
    lambda error: (
        isinstance(error, IndexError)
        and "Dimension out of range" in str(error)
        and "transpose(1,2)" in _raising_line(error)
    ),
    "transpose(1, 2) assumes a batch axis in front, and the first case has none (query and key are (n, d_k)): "
    "transpose(-2, -1) swaps the last two axes for any number of leading axes.",
)


def _own_source(error: BaseException) -> str:
    """The source of the innermost function of the reader's own code in the traceback ('' when unknown)."""
    own = [tb for tb in _frames(error) if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY_DIRS)]
    if not own:
        return ""
    try:
        return inspect.getsource(own[-1].tb_frame.f_code)
    except (OSError, TypeError):
        return _raising_line(error)


_DOT_T_ERROR = _ErrorHint(
    ".T on batched input",
    lambda error: isinstance(error, RuntimeError) and bool(re.search(r"\.T\b", _own_source(error))),
    "`.T` reverses all the axes of a tensor: it is the transpose only of a 2-D one. On a batched key "
    "(B, m, d_k) it gives (d_k, m, B), not (B, d_k, m), so the product fails from the first batched case on "
    "(PyTorch also warns that .T on other than 2 dimensions is deprecated). Swap only the last two axes, "
    "key.transpose(-2, -1) (or key.mT), which works for any number of leading axes.",
)

_ATTENTION_HINTS = _hints(
    "01.1",
    "Eq. 1 (§3.2.1): score every query against every key with a dot product, divide by sqrt(d_k), turn each "
    "query's scores into weights with a softmax over the keys (the last axis), and return the weighted average "
    "of the values together with the weights. Use only the last two axes, so any leading axes ride along. To see "
    "a difference, print weights.sum(-1): each query's weights sum to 1, over the keys.",
    "key.transpose(-2, -1) swaps the last two axes whatever comes before them (key.T reverses every axis of a "
    "batched key), so query @ key.transpose(-2, -1) is (..., n, m); torch.softmax(..., dim=-1) normalises each "
    "query's row; weights @ value is (..., n, d_v).",
    "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., n, m)\n"
    "weights = torch.softmax(scores, dim=-1)  # each query's weights sum to 1 over the keys\n"
    "return weights @ value, weights  # (..., n, d_v), (..., n, m)",
)


@_counted
def check_attention(attention: Callable) -> Verdict:
    """Exercise 01.1: ``attention(query, key, value) -> (output, weights)``, Eq. 1 without a mask."""
    cases = [
        _Case("3 queries, 5 keys, d_k=16", _qkv(1, (), 3, 5, 16, 4)),
        _Case("batch of 2, 4 queries, 4 keys, d_k=2", _qkv(0, (2,), 4, 4, 2, 3)),
        _Case("batch of 2 x 3 heads, 4 queries, 6 keys, d_k=8", _qkv(2, (2, 3), 4, 6, 8, 5)),
    ]
    return _check(
        "Exercise 01.1 attention",
        attention,
        scaled_dot_product_attention,
        cases,
        ATTENTION_MISTAKES,
        _ATTENTION_HINTS,
        names=("output", "weights"),
        error_hints=(_TRANSPOSE_1_2_ERROR, _DOT_T_ERROR),
        inputs=("query", "key", "value"),
    )


# --- notebook 02: masks ----------------------------------------------------------------------


def _padding_variant(lengths, max_len, *, invert=False, off_by_one=False, flat=False, last=False, greater=False):
    positions = torch.arange(max_len)
    lengths = torch.as_tensor(lengths)
    mask = positions <= lengths[:, None] if off_by_one else positions < lengths[:, None]
    if greater:  # positions > lengths: True at the padding except at j == length
        mask = positions > lengths[:, None]
    if invert:
        mask = ~mask
    if flat:
        return mask
    return mask.unsqueeze(-1) if last else mask.unsqueeze(1)


_LIST_ERROR = _ErrorHint(
    "lengths is a list",
    lambda error: isinstance(error, (TypeError, AttributeError)) and "list" in str(error),
    "`lengths` is a Python list, which has no tensor indexing (`lengths[:, None]`) and no tensor methods: "
    "convert it first, `lengths = torch.as_tensor(lengths)`.",
)


_LENGTHS_ROW_ERROR = _ErrorHint(
    "lengths not a column",
    lambda error: isinstance(error, RuntimeError) and "must match the size of tensor" in str(error),
    "the B lengths and the max_len positions were compared as two rows, which do not broadcast: lengths must be "
    "a column, torch.as_tensor(lengths)[:, None] of shape (B, 1), so that comparing it with the row "
    "torch.arange(max_len) gives (B, max_len).",
)


_PADDING_MASK_HINTS = _hints(
    "02.1",
    "key j of sequence b is real when j < lengths[b] (positions start at 0). Compare a row of positions "
    "0 .. max_len - 1 with a column of lengths: broadcasting gives (B, max_len); then add the query axis in the "
    "middle. `lengths` is a Python list: make it a tensor first, torch.as_tensor(lengths). To see a difference, "
    "print your mask for lengths [2, 0] and max_len 3: row 0 is True, True, False and row 1 all False.",
    "the pieces: torch.arange(max_len), a row (max_len,); torch.as_tensor(lengths)[:, None], a column (B, 1); a "
    "comparison of the two broadcasts to (B, max_len) (which comparison is the exercise); .unsqueeze(1) then "
    "gives (B, 1, max_len).",
    "positions = torch.arange(max_len)  # (max_len,)\n"
    "column = torch.as_tensor(lengths)[:, None]  # (B, 1)\n"
    "return (positions < column).unsqueeze(1)  # (B, max_len) -> (B, 1, max_len), True at the real keys",
)


@_counted
def check_padding_mask(make_padding_mask: Callable) -> Verdict:
    """Exercise 02.1: ``make_padding_mask(lengths, max_len) -> (B, 1, max_len)`` boolean, True at real keys.

    ``lengths`` is a Python list of ``B`` ints."""
    cases = [
        _Case("lengths [3, 1, 4], max_len 4", ([3, 1, 4], 4)),
        _Case("lengths [2, 5, 0], max_len 6", ([2, 5, 0], 6)),
    ]
    mistakes = [
        _Mistake(
            "mask inverted",
            lambda lengths, m: _padding_variant(lengths, m, invert=True),
            "the mask is True at the padding: in this series True means 'may attend' (that inverted meaning is "
            "nn.MultiheadAttention's key_padding_mask).",
        ),
        _Mistake(
            "mask inverted",
            lambda lengths, m: _padding_variant(lengths, m, greater=True),
            "the comparison points the wrong way, j > length: the mask is True at the padding (and misses j = "
            "length). Key j is real, True = may attend, when j < length.",
        ),
        _Mistake(
            "off by one",
            lambda lengths, m: _padding_variant(lengths, m, off_by_one=True),
            "position j is real when j < length, not j <= length (positions start at 0).",
        ),
        _Mistake(
            "no query axis",
            lambda lengths, m: _padding_variant(lengths, m, flat=True),
            "the values are right but the shape is (B, m); add the query axis with .unsqueeze(1) so the mask "
            "broadcasts against scores of shape (B, n, m).",
        ),
        _Mistake(
            "query axis last",
            lambda lengths, m: _padding_variant(lengths, m, last=True),
            "the values are right but the new axis is last, (B, m, 1): it must be in the middle, (B, 1, m), so the "
            "mask is the same for every query and varies over the keys. Use .unsqueeze(1).",
        ),
    ]
    return _check(
        "Exercise 02.1 padding mask",
        make_padding_mask,
        padding_mask,
        cases,
        mistakes,
        _PADDING_MASK_HINTS,
        error_hints=(_LIST_ERROR, _LENGTHS_ROW_ERROR),
        inputs=("lengths", "max_len"),
    )


def _masked_variant(
    query, key, value, mask, *, fill=None, invert=False, zero_empty=True, after=False, scale=True, dim=-1
):
    if invert:
        mask = ~mask
    scores = query @ key.transpose(-2, -1)
    if scale:
        scores = scores / math.sqrt(query.shape[-1])
    if after:  # softmax over every key, then masked weights set to 0 (no renormalisation)
        weights = torch.softmax(scores, dim=dim) * mask
        return weights @ value, weights
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min if fill is None else fill)
    weights = torch.softmax(scores, dim=dim)
    if zero_empty:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ value, weights


def _no_key_rows(query, key, mask) -> torch.Tensor:
    """(..., n, 1): True for the queries that may attend to no key."""
    shape = torch.broadcast_shapes((*query.shape[:-1], key.shape[-2]), mask.shape)
    return ~torch.broadcast_to(mask, shape).any(-1, keepdim=True)


def _masked_case(name, q, k, v, mask):
    regions = {"the rows of queries with no allowed key (fully masked)": _no_key_rows(q, k, mask)}
    return _Case(name, (q, k, v, mask), regions)


def _masked_cases():
    q, k, v = _qkv(3, (3,), 4, 5, 8, 6)
    q2, k2, v2 = _qkv(4, (2,), 5, 5, 4, 4)
    return [
        _masked_case("padding mask, lengths [5, 3, 2]", q, k, v, padding_mask([5, 3, 2], 5)),
        _masked_case("causal mask", q2, k2, v2, causal_mask(5)),
        _masked_case("a sequence of length 0 (every key masked)", q, k, v, padding_mask([4, 0, 5], 5)),
    ]


MASK_INVERTED = (
    "the mask's meaning is inverted: True means 'may attend', so fill the scores where the mask is False "
    "(masked_fill(~mask, ...)), not where it is True."
)

MASKED_ATTENTION_MISTAKES = [
    _Mistake(
        "outputs swapped",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask)[::-1],
        "the two results are returned in the wrong order: return (output, weights).",
    ),
    _Mistake("mask inverted", lambda q, k, v, mask: _masked_variant(q, k, v, mask, invert=True), MASK_INVERTED),
    *(  # inverted and, as in notebook 08's padded_attention, the masked weights not zeroed
        _Mistake(
            "mask inverted",
            lambda q, k, v, mask, fill=fill: _masked_variant(q, k, v, mask, invert=True, fill=fill, zero_empty=False),
            MASK_INVERTED + " (Then also zero the masked weights after the softmax, so a query with no allowed key "
            "gets zeros.)",
        )
        for fill in (None, -1e9, -math.inf)
    ),
    _Mistake(
        "-inf fill gives NaN",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-math.inf, zero_empty=False),
        "a query with no allowed key gets NaN: either a softmax over scores that are all -inf, or a "
        "renormalisation of masked weights that divides 0 by 0 (w / w.sum(-1, keepdim=True)). Fill the masked "
        "scores with torch.finfo(scores.dtype).min before the softmax, then zero the masked weights after it.",
    ),
    _Mistake(
        "uniform weights on a fully masked row",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, fill=-1e9, zero_empty=False),
        "masked scores filled with -1e9 (or finfo.min) and the masked weights not zeroed: a query with no allowed "
        "key gets uniform weights over the padding. Set the weights where ~mask to 0.0 after the softmax.",
    ),
    _Mistake(
        "mask applied after the softmax",
        lambda q, k, v, mask: _masked_variant(q, k, v, mask, after=True),
        "the softmax ran over every key and the masked weights were set to 0 afterwards (softmax(...) * mask), so "
        "the remaining weights no longer sum to 1: the masked keys still took their share. Fill the masked scores "
        "with torch.finfo(scores.dtype).min before the softmax, then zero the masked weights after it.",
    ),
    *(
        _Mistake(
            "masked scores filled with 0",
            lambda q, k, v, mask, zero=zero: _masked_variant(q, k, v, mask, fill=0.0, zero_empty=zero),
            "the masked scores were set to 0, an ordinary score (exp(0) = 1), so masked keys still take weight "
            "from the softmax. Fill with a very negative number, torch.finfo(scores.dtype).min.",
        )
        for zero in (True, False)
    ),
    _Mistake(
        "mask ignored",
        lambda q, k, v, mask: _attention_variant(q, k, v),
        "the mask has no effect: your results equal attention without a mask. Is the result of masked_fill "
        "assigned, scores = scores.masked_fill(~mask, ...)? masked_fill returns a new tensor (masked_fill_ is the "
        "in-place one).",
    ),
    _Mistake("no scaling", lambda q, k, v, mask: _masked_variant(q, k, v, mask, scale=False), NO_SCALING),
    _Mistake("softmax over queries", lambda q, k, v, mask: _masked_variant(q, k, v, mask, dim=-2), SOFTMAX_AXIS),
]


_BOOLEAN_INDEX_ERROR = _ErrorHint(
    "boolean indexing with a broadcast mask",
    lambda error: isinstance(error, IndexError) and "shape of the mask" in str(error),
    "boolean indexing (scores[~mask] = ...) does not broadcast: the mask must have exactly the scores' shape, and "
    "a padding mask is (B, 1, m) against scores of (B, n, m). Use scores.masked_fill(~mask, value), which "
    "broadcasts the mask.",
)


_MASKED_ATTENTION_HINTS = _hints(
    "02.2",
    "Eq. 1 with a mask (§3.2.3): before the softmax, make every score where the mask is False so negative that "
    "its weight comes out 0, and still finite; after the softmax, make sure a query with no allowed key ends "
    "with all-zero weights (so a zero output), neither NaN nor uniform weights over the padding. To see a "
    "difference, print weights.sum(-1): 1 for a query with an allowed key, 0 for a query with none.",
    "the tools: scores.masked_fill(~mask, value) broadcasts a (B, 1, m) or (n, m) mask over the scores; "
    "torch.finfo(scores.dtype).min is the most negative finite float (no NaN, unlike -inf, on a row with no "
    "allowed key); the same masked_fill with 0.0 on the weights zeroes what the softmax still gave the masked keys.",
    "scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., n, m)\n"
    "scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)  # finite: no NaN on a fully masked row\n"
    "weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)  # no allowed key: all zeros\n"
    "return weights @ value, weights",
)


@_counted
def check_masked_attention(masked_attention: Callable) -> Verdict:
    """Exercise 02.2: ``masked_attention(query, key, value, mask) -> (output, weights)``, True = may attend."""
    return _check(
        "Exercise 02.2 masked attention",
        masked_attention,
        scaled_dot_product_attention,
        _masked_cases(),
        MASKED_ATTENTION_MISTAKES,
        _MASKED_ATTENTION_HINTS,
        names=("output", "weights"),
        error_hints=(_BOOLEAN_INDEX_ERROR, _DOT_T_ERROR),
        inputs=("query", "key", "value", "mask"),
    )


# --- notebook 03: heads ----------------------------------------------------------------------


def _split_reference(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, num_heads, d_model // num_heads).transpose(1, 2)  # (B, h, n, d_k)


def _split_without_transpose(x, num_heads):
    B, n, d_model = x.shape
    return x.reshape(B, num_heads, n, d_model // num_heads)


def _split_interleaved(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, d_model // num_heads, num_heads).permute(0, 3, 1, 2)


def _split_not_moved(x, num_heads):
    B, n, d_model = x.shape
    return x.view(B, n, num_heads, d_model // num_heads)


def _heads_input(seed: int, B: int, n: int, d_model: int):
    return torch.randn(B, n, d_model, generator=_generator(seed))


SPLIT_MISTAKES = [
    _Mistake(
        "view without transpose",
        _split_without_transpose,
        "reshaped straight to (B, h, n, d_k) with view/reshape and no transpose: each 'head' now holds pieces of "
        "different positions. View as (B, n, h, d_k) first, then .transpose(1, 2).",
    ),
    _Mistake(
        "features interleaved",
        _split_interleaved,
        "head i takes every h-th feature instead of the contiguous block i*d_k .. (i+1)*d_k - 1: view as "
        "(B, n, h, d_k), not (B, n, d_k, h).",
    ),
    _Mistake(
        "unflatten without transpose",
        _split_not_moved,
        "the features have their head axis, but it is still after the positions: (B, n, h, d_k). Move it in front "
        "with .transpose(1, 2) to get (B, h, n, d_k).",
    ),
    _Mistake(
        "transposed the wrong axes",
        lambda x, h: _split_not_moved(x, h).transpose(2, 3),
        "after the view to (B, n, h, d_k), transpose(2, 3) swapped heads and features, giving (B, n, d_k, h): the "
        "positions stay at axis 1 and the heads end last. Swap axes 1 and 2, .transpose(1, 2), for (B, h, n, d_k).",
    ),
    _Mistake(
        "permuted the wrong axes",
        lambda x, h: _split_not_moved(x, h).permute(0, 2, 3, 1),
        "after the view to (B, n, h, d_k), permute(0, 2, 3, 1) gives (B, h, d_k, n): the heads are in front, but "
        "the positions end last, behind the features. permute(0, 2, 1, 3) (the same as transpose(1, 2)) gives "
        "(B, h, n, d_k).",
    ),
]


_SPLIT_HINTS = _hints(
    "03.1",
    "head i takes the contiguous block of d_k = d_model // num_heads features i*d_k .. (i+1)*d_k - 1 "
    "(§3.2.2). First give the features their own head axis, then move the head axis in front of the "
    "positions, so each head is its own (n, d_k) matrix: (B, h, n, d_k). To see a difference, split a tensor "
    "whose features are numbered 0 .. d_model - 1 (like notebook 03's `tagged`): head 0 must hold features "
    "0 .. d_k - 1 of every position.",
    "which shape comes first? (B, n, h, d_k): the last axis split in two (view or unflatten); then which two axes "
    "to swap (transpose) to reach (B, h, n, d_k)?",
    "B, n, d_model = x.shape\n"
    "d_k = d_model // num_heads\n"
    "return x.view(B, n, num_heads, d_k).transpose(1, 2)  # (B, n, d_model) -> (B, n, h, d_k) -> (B, h, n, d_k)",
)


@_counted
def check_split_heads(split_heads: Callable) -> Verdict:
    """Exercise 03.1: ``split_heads(x (B, n, d_model), num_heads) -> (B, h, n, d_k)``."""
    cases = [
        _Case("B=2, n=3, d_model=8, 2 heads", (_heads_input(5, 2, 3, 8), 2)),
        _Case("B=1, n=5, d_model=12, 3 heads", (_heads_input(6, 1, 5, 12), 3)),
    ]
    return _check(
        "Exercise 03.1 split heads",
        split_heads,
        _split_reference,
        cases,
        SPLIT_MISTAKES,
        _SPLIT_HINTS,
        inputs=("x", "num_heads"),
    )


def _combine_reference(x):
    B, h, n, d_k = x.shape
    return x.transpose(1, 2).reshape(B, n, h * d_k)


_COMBINE_HINTS = _hints(
    "03.2",
    "the inverse of splitting, and the paper's Concat (§3.2.2): bring the positions back in front of the heads, "
    "(B, n, h, d_k), then merge the last two axes so head 0's d_k features come first, then head 1's. "
    "`flatten` or `reshape` can do the merge.",
    "(B, h, n, d_k) -> (B, n, h, d_k) swaps axes 1 and 2 (transpose); then .flatten(2), or .reshape with "
    "h * d_k, merges the last two (.view fails after a transpose, which is not contiguous).",
    "B, h, n, d_k = x.shape\n"
    "return x.transpose(1, 2).reshape(B, n, h * d_k)  # (B, h, n, d_k) -> (B, n, h, d_k) -> (B, n, h * d_k)",
)


@_counted
def check_combine_heads(combine_heads: Callable) -> Verdict:
    """Exercise 03.2: ``combine_heads(x (B, h, n, d_k)) -> (B, n, h * d_k)``, the inverse of splitting."""
    g = _generator(7)
    cases = [
        _Case("B=2, 2 heads, n=3, d_k=4", (torch.randn(2, 2, 3, 4, generator=g),)),
        _Case("B=1, 3 heads, n=5, d_k=2", (torch.randn(1, 3, 5, 2, generator=g),)),
    ]
    mistakes = [
        _Mistake(
            "view without transpose",
            lambda x: x.reshape(x.shape[0], x.shape[2], -1),
            "reshaped (B, h, n, d_k) straight to (B, n, h*d_k) without moving the head axis: positions and "
            "heads get mixed. Transpose to (B, n, h, d_k) first.",
        ),
        _Mistake(
            "heads in the wrong order",
            lambda x: _combine_reference(x.flip(1)),
            "the heads are concatenated in reverse order: head 0 must fill features 0 .. d_k - 1.",
        ),
        _Mistake(
            "features interleaved",
            lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1),
            "the heads' features are interleaved (feature-major) instead of concatenated head after head: "
            "permute(0, 2, 3, 1) gives (B, n, d_k, h), with the heads last, so merging the last two axes takes "
            "feature 0 of every head first. transpose(1, 2) gives (B, n, h, d_k), which then flattens in the right "
            "order.",
        ),
        *(
            _Mistake(
                "transposed the wrong axes",
                wrong,
                "transpose(2, 3) swapped positions and features inside each head, giving (B, h, d_k, n): the heads "
                "stay at axis 1 and the positions end last, so merging mixes positions. Swap axes 1 and 2, "
                ".transpose(1, 2), for (B, n, h, d_k), then merge the last two.",
            )
            for wrong in (
                lambda x: x.transpose(2, 3).reshape(x.shape[0], x.shape[2], -1),
                lambda x: x.transpose(2, 3).flatten(2),
                lambda x: x.transpose(2, 3),
            )
        ),
        _Mistake(
            "features interleaved",
            lambda x: x.permute(0, 2, 3, 1),
            "permute(0, 2, 3, 1) gives (B, n, d_k, h): the positions are back at axis 1, but the heads end last, "
            "behind the features. Use transpose(1, 2) for (B, n, h, d_k), then merge the last two axes, "
            ".flatten(2).",
        ),
        _Mistake(
            "flatten without transpose",
            lambda x: x.flatten(2),
            "the last two axes of (B, h, n, d_k) were merged, giving (B, h, n*d_k): the head axis must first move "
            "behind the positions, .transpose(1, 2) to (B, n, h, d_k), and then .flatten(2) merges h and d_k.",
        ),
        _Mistake(
            "not merged",
            lambda x: x.transpose(1, 2),
            "the axes are in the right order, (B, n, h, d_k), but h and d_k are not merged yet: .flatten(2) (or "
            ".reshape(B, n, h * d_k)).",
        ),
    ]
    return _check(
        "Exercise 03.2 combine heads",
        combine_heads,
        _combine_reference,
        cases,
        mistakes,
        _COMBINE_HINTS,
        inputs=("x",),
    )


def _mha_variant(
    reference: MultiHeadAttention,
    *,
    scale_d_model=False,
    no_transpose=False,
    no_w_o=False,
    key_for_value=False,
    value_for_key=False,
    mean_weights=False,
):
    """A deliberately wrong copy of ``reference``'s forward pass (self- or cross-attention)."""

    def forward(query, key, value):
        B, n, d_model = query.shape
        m, h, d_k = key.shape[1], reference.num_heads, reference.d_k

        def split(x, length):
            if no_transpose:
                return x.reshape(B, h, length, d_k)
            return x.view(B, length, h, d_k).transpose(1, 2)

        q = split(reference.w_q(query), n)
        k = split(reference.w_k(value if value_for_key else key), m)
        v = split(reference.w_v(key if key_for_value else value), m)
        scale = math.sqrt(d_model) if scale_d_model else math.sqrt(d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)
        heads = weights @ v
        out = heads.reshape(B, n, d_model) if no_transpose else heads.transpose(1, 2).reshape(B, n, d_model)
        return (out if no_w_o else reference.w_o(out)), (weights.mean(1) if mean_weights else weights)

    return forward


_LAYERS = ("w_q", "w_k", "w_v", "w_o")


def _parameter_problems(answer: nn.Module, reference: nn.Module) -> tuple[list[str], str | None, list[str]]:
    """What stops the reference's weights from going into ``answer``, said from the student's side.

    Returns ``(problems, mistake_key, extra_parameter_names)``."""
    own = dict(answer.named_parameters())
    problems, absent = [], []
    for layer in _LAYERS:
        names = [f"{layer}.weight", f"{layer}.bias"]
        missing = [name for name in names if name not in own]
        if len(missing) == 2:
            problems.append(f"Your module has no parameter named {layer} (no layer `self.{layer}`).")
            absent.append(layer)
            continue
        if missing == [f"{layer}.bias"]:
            problems.append(
                f"Your module has no parameter named {layer}.bias: create the layer with a bias (the default)."
            )
        for name in names:
            if name in own and own[name].shape != reference.get_parameter(name).shape:
                problems.append(
                    f"Your {name} has shape {tuple(own[name].shape)}; expected {tuple(reference.get_parameter(name).shape)}, "
                    "as in nn.Linear(d_model, d_model)."
                )
    key = "no output projection" if absent == ["w_o"] else ("layer names" if absent else "layer shapes")
    extra = [name for name in own if name not in dict(reference.named_parameters())]
    return problems, key if problems else None, extra


_MHA_HINTS = _hints(
    "03.3",
    "§3.2.2: project query, key and value with w_q, w_k, w_v (queries from `query`, keys from `key`, values "
    "from `value`); split each into h heads of d_k = d_model / h features; run Eq. 1 in every head at once, "
    "scaled by sqrt(d_k) of one head; concatenate the heads back to d_model features; project with w_o.",
    "each projection is (B, length, d_model), with length n for the queries and m = key.shape[1] for the keys "
    "and values; split it as in 03.1 to (B, h, length, d_k); scaled_dot_product_attention from helpers.attention "
    "runs Eq. 1 in every head at once; merge the heads as in 03.2 before w_o.",
    "class MyMultiHeadAttention(nn.Module):\n"
    "    def __init__(self, d_model, num_heads):\n"
    "        super().__init__()\n"
    "        self.num_heads, self.d_k = num_heads, d_model // num_heads\n"
    "        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)\n"
    "\n"
    "    def forward(self, query, key, value):\n"
    "        B, n, d_model = query.shape\n"
    "\n"
    "        def split(x):  # (B, length, d_model) -> (B, h, length, d_k)\n"
    "            return x.view(B, x.shape[1], self.num_heads, self.d_k).transpose(1, 2)\n"
    "\n"
    "        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))\n"
    "        out, weights = scaled_dot_product_attention(q, k, v)  # from helpers.attention\n"
    "        return self.w_o(out.transpose(1, 2).reshape(B, n, d_model)), weights",
)


@_counted
def check_multi_head_attention(module_class: type) -> Verdict:
    """Exercise 03.3: a class ``module_class(d_model, num_heads)`` with ``nn.Linear`` layers ``w_q, w_k, w_v, w_o``
    whose ``forward(query, key, value)`` returns ``(output (B, n, d_model), weights (B, h, n, m))``.

    The checker builds ``module_class(12, 3)``, copies the weights of ``MultiHeadAttention(12, 3)`` into it by
    parameter name (extra buffers or parameters are left alone), puts it in ``eval()`` mode (so dropout, if any,
    is off) and compares it on self-attention and on cross-attention with different key and value tensors. An
    instance passed instead of the class is accepted (a copy of it is checked)."""
    exercise = "Exercise 03.3 multi-head attention"
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(8)
        reference = MultiHeadAttention(12, 3)
    notes: list[str] = []
    if isinstance(module_class, nn.Module):
        try:
            answer = copy.deepcopy(module_class)
        except Exception:
            return Verdict(
                exercise,
                FAILED,
                "pass the class, not an instance.",
                "instance instead of class",
                ["e.g. check_multi_head_attention(MyMultiHeadAttention), without (d_model, num_heads)."],
            )
        notes.append("(You passed an instance; the checker used a copy of it. Passing the class is enough.)")
    elif isinstance(module_class, type):
        name = getattr(module_class, "__name__", "your class")
        codes = _answer_codes(module_class.__init__)
        answer, verdict = _run(exercise, module_class, f"{name}(12, 3)", (12, 3), codes, _MHA_HINTS, ())
        if verdict is not None:
            return verdict
        if not isinstance(answer, nn.Module):
            return Verdict(
                exercise,
                FAILED,
                f"{name}(12, 3) is not an nn.Module.",
                "not a module",
                ["Subclass nn.Module, class MyMultiHeadAttention(nn.Module), and call super().__init__() first."],
            )
    else:
        return Verdict(
            exercise,
            FAILED,
            f"expected your class, got {_kind(module_class)}.",
            "instance instead of class",
            ["Pass the class, not an instance or a function: check_multi_head_attention(MyMultiHeadAttention)."],
        )
    problems, key, extra = _parameter_problems(answer, reference)
    if problems:
        expected_names = ", ".join(name for name, _ in reference.named_parameters())
        details = [*problems, f"The checker copies {expected_names}, each from an nn.Linear(12, 12), by name."]
        if key == "no output projection":
            details.append(
                "W^O (§3.2.2) projects the concatenated heads back: create self.w_o = nn.Linear(d_model, d_model) "
                "and apply it last."
            )
        own = [name for name, _ in answer.named_parameters()]
        if own:
            details.append(f"Your module's parameters: {', '.join(own)}.")
        return Verdict(exercise, FAILED, "could not copy the reference weights into your module.", key, details)
    reference_parameters = {name: p for name, p in reference.named_parameters()}
    try:
        answer.load_state_dict(reference_parameters, strict=False)  # extra buffers and parameters are left alone
    except Exception as error:
        return Verdict(exercise, FAILED, f"could not copy the reference weights into your module ({_short(error)}).")
    answer.eval()  # dropout off: the comparison is deterministic
    if extra:
        notes.append(f"Your module also has parameters the checker does not fill: {', '.join(extra)}.")
    g = _generator(9)
    x, memory = torch.randn(2, 4, 12, generator=g), torch.randn(2, 6, 12, generator=g)
    value = torch.randn(2, 6, 12, generator=g)  # not the keys: projecting values from keys must show
    cross_error = _ErrorHint(
        "fails on cross-attention",
        lambda error: True,
        "your module runs on self-attention but raises on cross-attention, where query, key and value are three "
        "different tensors with n=4 and m=6 positions: project the keys from `key` and the values from `value`, and "
        "use m = key.shape[1] wherever the keys' length is meant (not n = query.shape[1]).",
    )
    cases = [
        _Case("self-attention, B=2, n=4", (x, x, x)),
        _Case("cross-attention, n=4, m=6", (x, memory, value), error_hints=(cross_error,)),
    ]
    mistakes = [
        _Mistake(
            "outputs swapped",
            lambda query, key, value: reference(query, key, value)[::-1],
            "the two results are returned in the wrong order: return (output, weights).",
        ),
        _Mistake(
            "scaled by sqrt(d_model)",
            _mha_variant(reference, scale_d_model=True),
            "scores divided by sqrt(d_model) instead of sqrt(d_k) of each head: the weights come out too flat.",
        ),
        _Mistake(
            "view without transpose",
            _mha_variant(reference, no_transpose=True),
            "heads split with view/reshape straight to (B, h, n, d_k), no transpose: the output shape is right but "
            "each head mixes positions.",
        ),
        _Mistake(
            "no output projection",
            _mha_variant(reference, no_w_o=True),
            "the heads are concatenated but w_o is never applied: W^O (§3.2.2) projects the concatenation, "
            "return self.w_o(concat), weights.",
        ),
        _Mistake(
            "values projected from the keys",
            _mha_variant(reference, key_for_value=True),
            "the values are computed from `key` (self.w_v(key)): in cross-attention key and value are different "
            "tensors; project the values from `value`.",
        ),
        _Mistake(
            "keys projected from the values",
            _mha_variant(reference, value_for_key=True),
            "the keys are computed from `value` (self.w_k(value)): in cross-attention key and value are different "
            "tensors; project the keys from `key`.",
        ),
        _Mistake(
            "weights averaged over heads",
            _mha_variant(reference, mean_weights=True),
            "the weights are averaged over the heads, (B, n, m): return one weight matrix per head, (B, h, n, m).",
        ),
    ]
    with torch.no_grad():
        return _check(
            exercise,
            answer,
            reference,
            cases,
            mistakes,
            _MHA_HINTS,
            names=("output", "weights"),
            notes=tuple(notes),
            inputs=("query", "key", "value"),
        )


# --- notebook 04: causal masks ---------------------------------------------------------------


_CAUSAL_HINTS = _hints(
    "04.1",
    "row i is a query and column j a key; query i may see the keys j <= i, never a later one (§3.2.3). Which "
    "triangle of an (n, n) boolean matrix is that, and is the diagonal in it? To see a difference, print your "
    "mask for n = 4: row 0 has one True, row 3 four.",
    "start from torch.ones(n, n, dtype=torch.bool) and keep one triangle, .tril() or .triu() (each keeps the "
    "diagonal unless told otherwise); or compare a column of query positions with a row of key positions.",
    "return torch.ones(n, n, dtype=torch.bool).tril()  # True where key j <= query i, the diagonal included",
)


@_counted
def check_causal_mask(make_causal_mask: Callable) -> Verdict:
    """Exercise 04.1: ``make_causal_mask(n) -> (n, n)`` boolean, True where query i may attend to key j <= i."""
    cases = [_Case("n=1", (1,)), _Case("n=4", (4,)), _Case("n=7", (7,))]
    mistakes = [
        _Mistake(
            "future instead of past",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(diagonal=1),
            "this is triu(..., diagonal=1), the mask of the *future*: passed where True means 'may attend', every "
            "query attends only to later keys. Use tril (the lower triangle, diagonal included).",
        ),
        _Mistake(
            "diagonal excluded",
            lambda n: torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1),
            "the diagonal is excluded: a query must be allowed to attend to its own position (and query 0 would "
            "have no key at all).",
        ),
        _Mistake(
            "upper triangle",
            lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
            "the upper triangle (keys j >= i) is allowed: rows are queries, so the allowed keys j <= i form the "
            "lower triangle.",
        ),
    ]
    return _check(
        "Exercise 04.1 causal mask",
        make_causal_mask,
        causal_mask,
        cases,
        mistakes,
        _CAUSAL_HINTS,
        inputs=("n",),
    )


# --- notebook 05: positional encoding --------------------------------------------------------


def _pe_variant(max_len, d_model, *, swap=False, exponent_dim=False, per_dimension=0, start=0, doubled=False):
    position = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    if per_dimension:  # every dimension j its own exponent j / d_model (or 2j / d_model, per_dimension=2)
        angle = position / 10000.0 ** (per_dimension * torch.arange(d_model, dtype=torch.float64) / d_model)
        pe = torch.empty(max_len, d_model, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(angle[:, 0::2]), torch.cos(angle[:, 1::2])
        return pe.float()
    dims = torch.arange(0, d_model, 2, dtype=torch.float64)
    exponent = (dims / 2) / d_model if exponent_dim else (2 * dims if doubled else dims) / d_model
    angle = position / 10000.0**exponent
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.cos(angle) if swap else torch.sin(angle)
    pe[:, 1::2] = torch.sin(angle) if swap else torch.cos(angle)
    return pe.float()


_PE_HINTS = _hints(
    "05.1",
    "§3.5: the dimensions come in pairs (2i, 2i + 1) that share one frequency, 1 / 10000^(2i / d_model); the even "
    "one holds the sine of position × frequency, the odd one the cosine. Positions are 0 .. max_len - 1. To see "
    "a difference, print your first two rows: row 0 is 0, 1, 0, 1, ..., and in row 1 the columns 2i and 2i + 1 "
    "are the sine and the cosine of one angle (their squares sum to 1).",
    "broadcasting builds the table: a column of positions (max_len, 1) against a row of the even column indices "
    "(d_model / 2,), torch.arange(0, d_model, 2), which already are the paper's 2i; the sines go into pe[:, 0::2], "
    "the cosines of the same angles into pe[:, 1::2].",
    "position = torch.arange(max_len, dtype=torch.float32)[:, None]  # (max_len, 1)\n"
    "two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # the even columns, 2i = 0, 2, 4, ...\n"
    "angle = position / 10000 ** (two_i / d_model)  # (max_len, d_model / 2)\n"
    "pe = torch.zeros(max_len, d_model)\n"
    "pe[:, 0::2], pe[:, 1::2] = torch.sin(angle), torch.cos(angle)\n"
    "return pe",
)


@_counted
def check_positional_encoding(make_positional_encoding: Callable) -> Verdict:
    """Exercise 05.1: ``make_positional_encoding(max_len, d_model) -> (max_len, d_model)``, §3.5.

    Compared with ``rtol=1e-4, atol=1e-5``; any floating dtype is accepted."""
    cases = [_Case("max_len=6, d_model=4", (6, 4)), _Case("max_len=50, d_model=16", (50, 16))]
    mistakes = [
        _Mistake(
            "sin and cos swapped",
            lambda max_len, d_model: _pe_variant(max_len, d_model, swap=True),
            "sin and cos are swapped: even dimensions 2i take the sine, odd dimensions 2i+1 the cosine (§3.5).",
        ),
        _Mistake(
            "exponent uses i instead of 2i",
            lambda max_len, d_model: _pe_variant(max_len, d_model, exponent_dim=True),
            "the exponent is i / d_model; the paper's is 2i / d_model, where 2i is the even dimension index.",
        ),
        _Mistake(
            "exponent per dimension",
            lambda max_len, d_model: _pe_variant(max_len, d_model, per_dimension=1),
            "each dimension j got its own exponent j / d_model, so the cosine in dimension 2i + 1 has a different "
            "frequency from the sine in 2i. The pair shares one frequency, 1 / 10000^(2i / d_model): use the even "
            "index 2i for both.",
        ),
        _Mistake(
            "2 counted twice",
            lambda max_len, d_model: _pe_variant(max_len, d_model, per_dimension=2),
            "the exponent is 2j / d_model with j the column index, so the 2 is counted twice: in the paper's "
            "2i / d_model, 2i already is the (even) column index. Column 2i and column 2i + 1 share the frequency "
            "1 / 10000^(2i / d_model): with j the column, that is j - j % 2, not 2j.",
        ),
        _Mistake(
            "2 counted twice",
            lambda max_len, d_model: _pe_variant(max_len, d_model, doubled=True),
            "the exponent is 2i / d_model with i already the even column index (0, 2, 4, ...), so the 2 is counted "
            "twice: torch.arange(0, d_model, 2), or a loop over range(0, d_model, 2), already gives the paper's 2i. "
            "Use it as it is, 10000^(2i / d_model) with 2i = 0, 2, 4, ...",
        ),
        _Mistake(
            "positions start at 1",
            lambda max_len, d_model: _pe_variant(max_len, d_model, start=1),
            "the positions run 1 .. max_len; they start at 0 (row 0 is sin 0 = 0, cos 0 = 1): torch.arange(max_len).",
        ),
        _Mistake(
            "sines and cosines in halves",
            lambda max_len, d_model: torch.cat(
                [_pe_variant(max_len, d_model)[:, 0::2], _pe_variant(max_len, d_model)[:, 1::2]], dim=-1
            ),
            "all sines come first and all cosines after (torch.cat); the paper interleaves them: sine in dimension "
            "2i, cosine of the same frequency in dimension 2i + 1 (pe[:, 0::2] and pe[:, 1::2]).",
        ),
    ]
    return _check(
        "Exercise 05.1 positional encoding",
        make_positional_encoding,
        positional_encoding,
        cases,
        mistakes,
        _PE_HINTS,
        inputs=("max_len", "d_model"),
    )


# --- notebook 06: the encoder block ----------------------------------------------------------


class _SelfAttention(nn.Module):
    """``attention(x, mask)``: the block's multi-head self-attention, its output only."""

    def __init__(self, attention: MultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, x, mask=None):
        return self.attention(x, x, x, mask)[0]


def _block_parts(block: EncoderBlock):
    return _SelfAttention(block.self_attn), block.feed_forward, block.norm1, block.norm2


def _post_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = norm1(x + attention(x, mask))
    return norm2(x + feed_forward(x))


def _pre_norm(x, mask, attention, feed_forward, norm1, norm2):
    x = x + attention(norm1(x), mask)
    return x + feed_forward(norm2(x))


def _norm_inside(x, mask, a, f, n1, n2):
    x = x + n1(a(x, mask))
    return x + n2(f(x))


def _residual_from_normalised(x, mask, a, f, n1, n2):
    h = n1(x)
    x = h + a(h, mask)
    h = n2(x)
    return h + f(h)


def _block_mistakes(norm_first: bool, reference: Callable) -> list[_Mistake]:
    same_norm = [
        _Mistake(
            "same norm twice",
            lambda x, mask, a, f, n1, n2, pick=pick: reference(x, mask, a, f, pick(n1, n2), pick(n1, n2)),
            "the same LayerNorm is used for both sub-layers: norm1 goes with the attention sub-layer, norm2 with the "
            "feed-forward one (each has its own gain and bias).",
        )
        for pick in (lambda n1, n2: n1, lambda n1, n2: n2)
    ]
    norm_inside = _Mistake(
        "norm inside the residual",
        _norm_inside,
        "x + LayerNorm(Sublayer(x)): the norm is applied to the sub-layer's output only. "
        + (
            "Pre-norm normalises the sub-layer's input, x + Sublayer(LayerNorm(x))."
            if norm_first
            else "Post-norm normalises the sum, LayerNorm(x + Sublayer(x)) (§3.1)."
        ),
    )
    mistakes = [
        _Mistake(
            "post-norm and pre-norm swapped",
            _post_norm if norm_first else _pre_norm,
            "this is the pre-norm block, x + Sublayer(LayerNorm(x)); the paper's post-norm is LayerNorm(x + Sublayer(x))."
            if not norm_first
            else "this is the post-norm block, LayerNorm(x + Sublayer(x)); pre-norm is x + Sublayer(LayerNorm(x)).",
        ),
        _Mistake(
            "mask ignored",
            lambda x, mask, *parts: reference(x, None, *parts),
            "the mask is not passed on to attention(x, mask), so padded keys still receive attention.",
        ),
        _Mistake(
            "norm1 and norm2 swapped",
            lambda x, mask, a, f, n1, n2: reference(x, mask, a, f, n2, n1),
            "norm1 belongs to the attention sub-layer and norm2 to the feed-forward one; yours are swapped.",
        ),
        _Mistake(
            "no residual",
            (lambda x, mask, a, f, n1, n2: n2(f(n1(a(x, mask)))))
            if not norm_first
            else (lambda x, mask, a, f, n1, n2: f(n2(a(n1(x), mask)))),
            "the residual connections are missing: each sub-layer's input must be added back (x + ...).",
        ),
        _Mistake(
            "sub-layers in the wrong order",
            lambda x, mask, a, f, n1, n2: reference(x, mask, lambda y, mask: f(y), lambda y: a(y, mask), n1, n2),
            "the feed-forward sub-layer comes first: in the encoder layer (§3.1) self-attention comes first (with "
            "norm1), then the feed-forward network (with norm2).",
        ),
        *same_norm,
        norm_inside,
        _Mistake(
            "second sub-layer reads the block's input",
            (lambda x, mask, a, f, n1, n2: n2(x + f(n1(x + a(x, mask)))))
            if not norm_first
            else (lambda x, mask, a, f, n1, n2: x + a(n1(x), mask) + f(n2(x))),
            "the second sub-layer reads the block's input x instead of the first sub-layer's result: "
            + (
                "the feed-forward sub-layer must take y = norm1(x + attention(x, mask)) and add y back, "
                "norm2(y + feed_forward(y))."
                if not norm_first
                else "the feed-forward sub-layer must normalise y = x + attention(norm1(x), mask), "
                "y + feed_forward(norm2(y))."
            ),
        ),
    ]
    if norm_first:
        mistakes.append(
            _Mistake(
                "residual from the normalised x",
                _residual_from_normalised,
                "the residual adds the normalised x, LayerNorm(x) + Sublayer(LayerNorm(x)): pre-norm keeps the "
                "un-normalised x on the residual path, x + Sublayer(LayerNorm(x)). Normalise only the sub-layer's "
                "input.",
            )
        )
        for final in (
            lambda x, n1, n2: n1(x),
            lambda x, n1, n2: n2(x),
            lambda x, n1, n2: F.layer_norm(x, x.shape[-1:]),
        ):
            mistakes.append(
                _Mistake(
                    "final LayerNorm in the block",
                    lambda x, mask, a, f, n1, n2, final=final: final(_pre_norm(x, mask, a, f, n1, n2), n1, n2),
                    "the block ends with a LayerNorm: in pre-norm the final LayerNorm belongs to the stack, once "
                    "after the last layer, not to each block. Return x + feed_forward(norm2(x)) as it is.",
                )
            )
    return mistakes


_POST_NORM_HINTS = _hints(
    "06.1",
    "§3.1: each sub-layer is wrapped as LayerNorm(x + Sublayer(x)): add the sub-layer's input to its output "
    "(the residual), then normalise the sum. Attention (with the mask) and norm1 first, then the "
    "feed-forward network and norm2.",
    "one line per sub-layer, each normalising a sum: attention(x, mask) with norm1, then feed_forward with norm2; "
    "the second line reads the result of the first, not the block's input.",
    "x = norm1(x + attention(x, mask))\nreturn norm2(x + feed_forward(x))",
)
_PRE_NORM_HINTS = _hints(
    "06.2",
    "pre-norm (section 5): normalise each sub-layer's input, not the sum: x + Sublayer(LayerNorm(x)). The "
    "residual path carries the un-normalised x. norm1 goes before the attention (with the mask), norm2 "
    "before the feed-forward network; the block ends with the second sum, no norm after it.",
    "one line per sub-layer, each adding to x: the attention reads norm1 of x (with the mask), the feed-forward "
    "network norm2 of the new x; no norm is applied to the sums.",
    "x = x + attention(norm1(x), mask)\nreturn x + feed_forward(norm2(x))",
)


@_counted
def check_encoder_block(encoder_block: Callable, norm_first: bool = False) -> Verdict:
    """Exercise 06.1/06.2: ``encoder_block(x, mask, attention, feed_forward, norm1, norm2) -> (B, n, d_model)``.

    ``attention(x, mask)`` is multi-head self-attention's output; the other
    three are modules (from an ``EncoderBlock`` in ``eval()`` mode). With
    ``norm_first=False`` the answer must be the paper's post-norm layer (§3.1),
    with ``True`` the pre-norm one.
    """
    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(10)
        block = EncoderBlock(16, 4, 32, norm_first=norm_first).eval()
        with torch.no_grad():  # distinct gains and biases, so swapping norm1 and norm2 shows
            for norm in (block.norm1, block.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.5)
    parts = _block_parts(block)
    g = _generator(11)
    cases = [
        _Case("B=2, n=5, no mask", (torch.randn(2, 5, 16, generator=g), None, *parts)),
        _Case("B=2, n=5, padding mask", (torch.randn(2, 5, 16, generator=g), padding_mask([5, 3], 5), *parts)),
    ]
    reference = _pre_norm if norm_first else _post_norm
    name = "Exercise 06.2 pre-norm block" if norm_first else "Exercise 06.1 post-norm block"
    with torch.no_grad():
        return _check(
            name,
            encoder_block,
            reference,
            cases,
            _block_mistakes(norm_first, reference),
            _PRE_NORM_HINTS if norm_first else _POST_NORM_HINTS,
            inputs=("x", "mask", "attention", "feed_forward", "norm1", "norm2"),
        )


# --- notebook 07: task targets ---------------------------------------------------------------


def _reverse_variant(tokens, lengths, *, shift=0, pad=True):
    """Reverse targets reading token len - 1 - i + shift (clamped into the row), PAD written or not."""
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(tokens.shape[1])
    source = (lengths[:, None] - 1 - positions + shift).clamp(0, tokens.shape[1] - 1)
    targets = tokens.gather(1, source)
    return targets.masked_fill(positions >= lengths[:, None], tasks.PAD) if pad else targets


OFF_BY_ONE_REVERSE = (
    "position i takes token len - 1 - i (for i = 0 that is len - 1, the last real token; positions start at 0), "
    "not len - i or len - 2 - i."
)

_NEGATIVE_INDEX = re.compile(r"index -\d+ is out of bounds|id=-\d+")


def _out_of_row(error: BaseException) -> bool:
    text = str(error)
    return isinstance(error, IndexError) or "out of bounds" in text or "out of range" in text


_REVERSE_HINTS = _hints(
    "07.1",
    "reverse each row within its own length (flipping the whole row is right only without padding): find, for "
    "every position, the index of the token it takes, read the tokens at those indices, then overwrite the "
    "padded positions with PAD.",
    "position i of row b reads token len_b - 1 - i: a (B, n) tensor of indices from a column of lengths and a "
    "row of positions; tokens.gather(1, indices) reads them once the negative indices at the padding are clamped "
    "to 0; masked_fill then writes PAD where i >= len_b.",
    "positions = torch.arange(tokens.shape[1])  # (n,)\n"
    "source = (lengths[:, None] - 1 - positions).clamp(min=0)  # (B, n): len - 1 - i, 0 at the padding\n"
    "targets = tokens.gather(1, source)\n"
    "return targets.masked_fill(positions >= lengths[:, None], 0)  # PAD = 0 at the padded positions",
)


@_counted
def check_reverse_targets(reverse_targets: Callable) -> Verdict:
    """Exercise 07.1: ``reverse_targets(tokens (B, n), lengths (B,)) -> targets (B, n)``.

    Each sequence is reversed within its own length; padded positions get ``PAD`` (0).
    """
    g = _generator(12)
    tokens = torch.randint(1, 9, (4, 6), generator=g)
    lengths = torch.tensor([6, 4, 1, 3])
    padded_positions = torch.arange(6) >= lengths[:, None]
    padded = tokens.masked_fill(padded_positions, 0)
    regions = {"the padded positions": padded_positions, "the real positions (not the padding)": ~padded_positions}
    off_by_one = _ErrorHint(
        "off by one", _out_of_row, "an index ran past the end of a row, an off-by-one: " + OFF_BY_ONE_REVERSE
    )
    # The first case has no padding, so len - 1 - i stays in 0 .. n - 1 there: an answer that gets through it and
    # then reads index -1 on the padded case has the right formula, and only the padded positions are out of range.
    negative_at_the_padding = _ErrorHint(
        "negative indices at the padding",
        lambda error: _out_of_row(error) and bool(_NEGATIVE_INDEX.search(str(error))),
        "not an off-by-one: len - 1 - i is right at the real positions, but at the padded ones (i >= len) it is "
        "below 0, and gather accepts no negative index (plain indexing, tokens[b, -1], would wrap it round to the "
        "end of the row instead). Clamp the indices into the row before gather, (lengths[:, None] - 1 - "
        "i).clamp(min=0), since the padded positions are overwritten with PAD afterwards anyway; or gather only "
        "the real positions.",
    )
    cases = [
        _Case(
            "4 sequences of length 6",
            (torch.randint(1, 9, (4, 6), generator=g), torch.full((4,), 6)),
            error_hints=(off_by_one,),
        ),
        _Case(
            "lengths [6, 4, 1, 3], right-padded with 0",
            (padded, lengths),
            regions,
            error_hints=(negative_at_the_padding, off_by_one),
        ),
    ]
    mistakes = [
        _Mistake(
            "whole row flipped",
            lambda t, lengths: t.flip(1),
            "the whole padded row is flipped, so the padding moves to the front and every real token lands "
            "n - len places too far right. Reverse each sequence within its own length: position i takes "
            "token len - 1 - i.",
        ),
        _Mistake(
            "padding not PAD",
            lambda t, lengths: _reverse_variant(t, lengths, pad=False),
            "the real positions are right, but the padded positions must hold PAD (0) so the loss can ignore them.",
        ),
        *(
            _Mistake(
                "off by one",
                lambda t, lengths, s=s: _reverse_variant(t, lengths, shift=s),
                "an off-by-one in the source index: " + OFF_BY_ONE_REVERSE,
            )
            for s in (1, -1)
        ),
    ]
    return _check(
        "Exercise 07.1 reverse targets",
        reverse_targets,
        tasks.reverse_targets,
        cases,
        mistakes,
        _REVERSE_HINTS,
        inputs=("tokens", "lengths"),
    )


# --- notebook 09: the whole Transformer ------------------------------------------------------


def _shift_variant(targets, bos_id, *, how="right"):
    bos = torch.full_like(targets[:, :1], bos_id)
    if how == "left":
        return torch.cat([targets[:, 1:], torch.zeros_like(bos)], dim=1)
    if how == "left, bos last":
        return torch.cat([targets[:, 1:], bos], dim=1)
    if how == "rolled left, bos first":  # torch.roll(targets, -1), then bos_id written into position 0
        return torch.cat([bos, targets.roll(-1, dims=1)[:, 1:]], dim=1)
    if how == "roll":
        return targets.roll(1, dims=1)
    if how == "rolled left":  # torch.roll(targets, -1, dims=1): the first token wraps round to the end
        return targets.roll(-1, dims=1)
    if how == "rolled left flattened":  # torch.roll(targets, -1) without dims
        return targets.roll(-1)
    if how == "roll flattened":  # torch.roll(targets, 1) without dims rolls the flattened tensor
        return targets.roll(1)
    if how == "overwrite":
        return torch.cat([bos, targets[:, 1:]], dim=1)
    if how == "longer":
        return torch.cat([bos, targets], dim=1)
    if how == "no bos":
        return torch.cat([torch.zeros_like(bos), targets[:, :-1]], dim=1)
    if how == "bos 1":
        return torch.cat([torch.ones_like(bos), targets[:, :-1]], dim=1)
    if how == "identity":  # <bos> prepended, then the first position dropped instead of the last
        return targets.clone()
    if how == "no eos":  # <eos> (id 2 in the checker's cases) replaced by <pad> before the shift
        targets = torch.where(targets == 2, torch.zeros_like(targets), targets)
    return torch.cat([bos, targets[:, :-1]], dim=1)


def _shift_cases() -> list[_Case]:
    g = _generator(13)
    full = torch.cat([torch.randint(5, 20, (2, 4), generator=g), torch.full((2, 1), 2)], dim=1)  # ... <eos>=2
    padded = torch.tensor([[7, 8, 9, 2, 0, 0], [11, 12, 13, 14, 15, 2], [6, 2, 0, 0, 0, 0]])
    return [
        _Case("B=2, n=5, bos_id=1", (full, 1)),
        _Case("B=3, n=6, right-padded with 0, bos_id=3", (padded, 3)),
    ]


_SHIFTED_LEFT = (
    "the targets are shifted left (targets[:, 1:]): position i then holds the token it must predict, "
    "i + 1 steps ahead of what it may know. Shift right: <bos> first, then targets[:, :-1]."
)


def _shift_mistakes() -> list[_Mistake]:
    return [
        *(
            _Mistake("shifted left", lambda t, b, how=how: _shift_variant(t, b, how=how), _SHIFTED_LEFT)
            for how in ("left", "left, bos last", "rolled left, bos first", "rolled left", "rolled left flattened")
        ),
        _Mistake(
            "rolled",
            lambda t, b: _shift_variant(t, b, how="roll"),
            "torch.roll moves the last token (<eos> or <pad>) to the front instead of inserting <bos>: put bos_id "
            "first and drop the last position.",
        ),
        _Mistake(
            "rolled",
            lambda t, b: _shift_variant(t, b, how="roll flattened"),
            "torch.roll(targets, 1) without dims rolls the flattened tensor, so position 0 of each row gets the "
            "last token of the row before (and no <bos>). Give the axis, dims=1, and then write bos_id into "
            "position 0; or build the result with torch.cat: <bos> first, then targets[:, :-1].",
        ),
        _Mistake(
            "first token overwritten",
            lambda t, b: _shift_variant(t, b, how="overwrite"),
            "bos_id overwrites the first target token, and nothing moves: every other position then sees the token "
            "it must predict. Insert <bos> in front and drop the *last* position.",
        ),
        _Mistake(
            "last position kept",
            lambda t, b: _shift_variant(t, b, how="longer"),
            "the result is one position longer than the targets: <bos> goes in front, and the last position must go, "
            "so that the decoder's input and the targets have the same length n.",
        ),
        _Mistake(
            "no <bos>",
            lambda t, b: _shift_variant(t, b, how="no bos"),
            "position 0 holds 0 (<pad>) instead of bos_id: the decoder's first input is the begin-of-sequence token.",
        ),
        _Mistake(
            "bos hard-coded",
            lambda t, b: _shift_variant(t, b, how="bos 1"),
            "position 0 holds 1 whatever bos_id is: use the bos_id argument.",
        ),
        _Mistake(
            "result equals the targets",
            lambda t, b: _shift_variant(t, b, how="identity"),
            "the result equals the targets: each position would see the token it must predict. After putting "
            "<bos> in front, drop the *last* position, not the first.",
        ),
        _Mistake(
            "<eos> replaced by <pad>",
            lambda t, b: _shift_variant(t, b, how="no eos"),
            "`<eos>` replaced by `<pad>` (0): the shift moves every token as it is. Only the last position is "
            "dropped; the <eos> of a shorter sequence stays in the input.",
        ),
    ]


_SHIFT_HINTS = _hints(
    "09.1",
    "teacher forcing (§3.1): position i of the decoder's input must hold target token i - 1, so that the "
    "prediction at position i, which sees positions <= i only, is a prediction of target token i. What goes "
    "into position 0, and which target position no longer fits?",
    "join two pieces along the positions, torch.cat(..., dim=1): a (B, 1) column of bos_id with the targets' "
    "dtype (torch.full_like), and the targets with one position dropped (which one, the first or the last?).",
    "bos = torch.full_like(targets[:, :1], bos_id)  # (B, 1), the targets' dtype\n"
    "return torch.cat([bos, targets[:, :-1]], dim=1)  # (B, n): <bos>, then targets 0 .. n - 2",
)


@_counted
def check_shift_right(shift_right: Callable) -> Verdict:
    """Exercise 09.1: ``shift_right(targets (B, n), bos_id) -> decoder input (B, n)`` (§3.1, teacher forcing).

    The result must have the targets' dtype, and the targets must come back unchanged."""
    from helpers.transformer import shift_right as reference

    return _check(
        "Exercise 09.1 shift right",
        shift_right,
        reference,
        _shift_cases(),
        _shift_mistakes(),
        _SHIFT_HINTS,
        inputs=("targets", "bos_id"),
        in_place_why="the loss would then compare predictions with shifted tokens. Build a new tensor (e.g. torch.cat).",
        exact_dtype="the dtype of `targets`",
    )


def _decoder_block_variant(
    x,
    memory,
    self_mask,
    memory_mask,
    sa,
    ca,
    f,
    n1,
    n2,
    n3,
    *,
    order="self",
    stale=False,
    masks=(True, True),
    norms=(0, 1, 2),
    pre=False,
    residual=True,
    inverted=(False, False),
    last_norm=True,
    transposed=False,
):
    """The post-norm decoder layer (§3.1), or one classic mistake of it.

    ``residual``: True (LayerNorm(x + Sublayer(x))), False (none), "after" (LayerNorm(Sublayer(x)) + x) or
    "input" (every residual taken from the block's input); ``inverted``: masks in PyTorch's True = ignore;
    ``transposed``: the causal mask's transpose (the future visible, the past hidden)."""
    norm = [(n1, n2, n3)[i] for i in norms]
    self_mask = self_mask.transpose(-2, -1) if transposed else self_mask
    s_mask = (~self_mask if inverted[0] else self_mask) if masks[0] else None
    m_mask = (~memory_mask if inverted[1] else memory_mask) if masks[1] else None
    first = x

    def self_sub(y):
        return sa(y, s_mask)

    def cross_sub(y):
        return ca(first if stale else y, memory, m_mask)

    subs = [self_sub, cross_sub] if order == "self" else [cross_sub, self_sub]
    for i, sub in enumerate([*subs, f]):
        if pre:
            x = x + sub(norm[i](x))
        elif i == 2 and not last_norm:
            x = x + sub(x)
        elif residual == "after":
            x = norm[i](sub(x)) + x
        elif residual == "input":
            x = norm[i](first + sub(x))
        else:
            x = norm[i](x + sub(x) if residual else sub(x))
    return x


class _CrossAttention(nn.Module):
    """``cross_attention(queries, keys_and_values, mask)``: the block's cross-attention, its output only."""

    def __init__(self, attention: MultiHeadAttention):
        super().__init__()
        self.attention = attention

    def forward(self, queries, keys_and_values, mask=None):
        return self.attention(queries, keys_and_values, keys_and_values, mask)[0]


def _shape_text(*dims) -> str:
    return "(" + ", ".join(str(d) for d in dims) + ")"


def _decoder_cases() -> list[_Case]:
    """Two cases, each with the parts of one ``DecoderBlock(16, 4, 32)`` in ``eval()`` mode, its three LayerNorms
    given distinct random gains and biases (so that swapping two shows)."""
    from helpers.decoder import DecoderBlock

    with torch.random.fork_rng():  # leave the reader's random state alone
        torch.manual_seed(14)
        block = DecoderBlock(16, 4, 32).eval()
        with torch.no_grad():  # distinct gains and biases, so swapping two norms shows
            for norm in (block.norm1, block.norm2, block.norm3):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0.0, 0.5)
    parts = (_SelfAttention(block.self_attn), _CrossAttention(block.cross_attn), block.feed_forward)
    parts = (*parts, block.norm1, block.norm2, block.norm3)
    g = _generator(15)
    cases = []
    for B, n, m, lengths in ((2, 5, 7, [7, 4]), (3, 6, 4, [4, 1, 3])):
        queries_from_memory = _ErrorHint(
            "queries from memory",
            lambda e, B=B, n=n, m=m: (
                f"attention scores of shape {_shape_text(B, m, n)}" in str(e)
                or f"mask of shape {_shape_text(n, n)} does not broadcast to the attention scores of shape "
                f"{_shape_text(B, m, n)}"
                in str(e)
            ),
            "the cross-attention takes its queries from the memory and its keys from x: cross_attention(queries, "
            "keys_and_values, mask) needs the decoder's x as queries and the encoder's memory as keys and values "
            "(§3.2.3), so the weights are (n target positions) x (m source tokens).",
        )
        masks_swapped = _ErrorHint(
            "masks swapped or keys from x",
            lambda e, B=B, n=n, m=m: (
                f"mask of shape {_shape_text(B, 1, m)} does not broadcast to the attention "
                f"scores of shape {_shape_text(B, n, n)}"
                in str(e)
                or f"mask of shape {_shape_text(n, n)} does not broadcast to the attention scores of shape "
                f"{_shape_text(B, n, m)}"
                in str(e)
            ),
            "a mask met the wrong attention: the causal self_mask (n x n) belongs to the self-attention, the source "
            "memory_mask (B, 1, m) to the cross-attention. (The same error appears when the cross-attention reads "
            "its keys and values from x instead of memory.)",
        )
        cases.append(
            _Case(
                f"B={B}, n={n} target positions, m={m} source positions, causal and padding masks",
                (
                    torch.randn(B, n, 16, generator=g),
                    torch.randn(B, m, 16, generator=g),
                    causal_mask(n),
                    padding_mask(lengths, m),
                    *parts,
                ),
                error_hints=(queries_from_memory, masks_swapped),
            )
        )
    return cases


_SUB_LAYERS = ("self-attention", "cross-attention", "feed-forward network")


def _norms_diagnosis(norms: tuple[int, ...]) -> str:
    """The words for a decoder block whose sub-layer i is normalised by norm ``norms[i] + 1``."""
    wrong = [f"norm{j + 1} after the {_SUB_LAYERS[i]}" for i, j in enumerate(norms) if j != i]
    twice = [f"norm{j + 1}" for j in sorted(set(norms)) if norms.count(j) > 1]
    used = f" ({_and(twice)} used more than once: each has its own gain and bias)" if twice else ""
    return (
        f"the LayerNorms are mixed up: yours has {_and(wrong)}{used}. norm1 goes with the self-attention, norm2 "
        "with the cross-attention, norm3 with the feed-forward network."
    )


def _decoder_mistakes() -> list[_Mistake]:
    v = _decoder_block_variant
    mistakes = [
        _Mistake(
            "cross-attention first",
            lambda *a: v(*a, order="cross"),
            "the cross-attention comes before the self-attention: §3.1 inserts the third sub-layer between the "
            "masked self-attention and the feed-forward network (self, cross, FFN, with norm1, norm2, norm3).",
        ),
        _Mistake(
            "pre-norm",
            lambda *a: v(*a, pre=True),
            "this is the pre-norm block, x + Sublayer(LayerNorm(x)); the paper's decoder is post-norm, "
            "LayerNorm(x + Sublayer(x)) (§3.1).",
        ),
        _Mistake(
            "causal mask ignored",
            lambda *a: v(*a, masks=(False, True)),
            "self_mask is not passed to the self-attention, so every target position sees the tokens after it: "
            "self_attention(x, self_mask).",
        ),
        _Mistake(
            "memory mask ignored",
            lambda *a: v(*a, masks=(True, False)),
            "memory_mask is not passed to the cross-attention, so padded source tokens receive attention: "
            "cross_attention(x, memory, memory_mask).",
        ),
        _Mistake(
            "both masks ignored",
            lambda *a: v(*a, masks=(False, False)),
            "neither mask is passed on: every target position sees the tokens after it, and padded source tokens "
            "receive attention. self_attention(x, self_mask), then cross_attention(x, memory, memory_mask).",
        ),
        _Mistake(
            "causal mask transposed",
            lambda *a: v(*a, transposed=True),
            "the causal mask is transposed (self_mask.T, or triu in place of tril): each target position sees the "
            "positions after it and none before. Pass self_mask as it is: row i, a query, may attend to the keys "
            "j <= i, the lower triangle.",
        ),
        _Mistake(
            "cross-attention reads the block's input",
            lambda *a: v(*a, stale=True),
            "the cross-attention's queries are the block's input x, not the output of the first sub-layer: each "
            "sub-layer reads the (normalised) result of the one before it.",
        ),
        _Mistake(
            "no residual",
            lambda *a: v(*a, residual=False),
            "the residual connections are missing: each sub-layer's input must be added back before the norm, "
            "LayerNorm(x + Sublayer(x)).",
        ),
        *(
            _Mistake(
                "masks inverted",
                lambda *a, inverted=inverted: v(*a, inverted=inverted),
                "the masks are inverted: the series' masks mean True = may attend; `~mask` is PyTorch's convention "
                "(section 4). Pass self_mask and memory_mask as they are.",
            )
            for inverted in ((True, True), (True, False), (False, True))
        ),
        _Mistake(
            "no norm3",
            lambda *a: v(*a, last_norm=False),
            "the feed-forward sub-layer needs its Add & Norm too: norm3(x + feed_forward(x)).",
        ),
        _Mistake(
            "residual added after the norm",
            lambda *a: v(*a, residual="after"),
            "the residual is added after the norm, LayerNorm(Sublayer(x)) + x; the paper's post-norm block adds "
            "first and normalises the sum, LayerNorm(x + Sublayer(x)) (§3.1).",
        ),
        _Mistake(
            "residuals from the block's input",
            lambda *a: v(*a, residual="input"),
            "every residual adds the block's input x; each sub-layer must add back its own input, the output of "
            "the sub-layer before it: x = norm1(x + ...), then x = norm2(x + ...) with the new x, and so on.",
        ),
        *(  # every other assignment of the three norms to the three sub-layers, a norm used twice included
            _Mistake("norms swapped", lambda *a, norms=norms: v(*a, norms=norms), _norms_diagnosis(norms))
            for norms in itertools.product(range(3), repeat=3)
            if norms != (0, 1, 2)
        ),
    ]
    return mistakes


_DECODER_HINTS = _hints(
    "09.2",
    "§3.1: three sub-layers, each wrapped as LayerNorm(x + Sublayer(x)): masked self-attention over x "
    "(with self_mask) and norm1; then cross-attention with queries from the decoder and keys and values "
    "from memory (with memory_mask) and norm2; then the feed-forward network and norm3.",
    "the post-norm encoder block of 06.1 with a third line between its two: self_attention(x, self_mask) with "
    "norm1; cross_attention(queries, keys_and_values, memory_mask), the queries from the decoder's x and the keys "
    "and values from memory, with norm2; feed_forward with norm3. Each line reads the x of the line before.",
    "x = norm1(x + self_attention(x, self_mask))\n"
    "x = norm2(x + cross_attention(x, memory, memory_mask))\n"
    "return norm3(x + feed_forward(x))",
)


@_counted
def check_decoder_block(decoder_block: Callable) -> Verdict:
    """Exercise 09.2: the paper's post-norm decoder layer (§3.1) from its parts.

    ``decoder_block(x, memory, self_mask, memory_mask, self_attention, cross_attention, feed_forward, norm1, norm2,
    norm3) -> (B, n, d_model)`` with ``self_attention(x, mask)`` and ``cross_attention(queries, keys_and_values,
    mask)`` returning multi-head attention's output (from a ``DecoderBlock`` in ``eval()`` mode).
    """
    with torch.no_grad():
        return _check(
            "Exercise 09.2 decoder block",
            decoder_block,
            _decoder_block_variant,
            _decoder_cases(),
            _decoder_mistakes(),
            _DECODER_HINTS,
            inputs=(
                "x",
                "memory",
                "self_mask",
                "memory_mask",
                "self_attention",
                "cross_attention",
                "feed_forward",
                "norm1",
                "norm2",
                "norm3",
            ),
        )


# --- notebook 10: training and decoding ------------------------------------------------------


def _rate_variant(steps, d_model, warmup_steps, *, how="right"):
    steps = steps.double()
    if how == "max":
        return d_model**-0.5 * torch.maximum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "no d_model":
        return torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "sqrt d_model":
        return d_model**0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)
    if how == "warmup exponent":
        return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-0.5)
    if how == "no warm-up":
        return d_model**-0.5 * steps**-0.5
    if how == "from 0":
        return _rate_variant(steps - 1, d_model, warmup_steps).nan_to_num(posinf=0.0)
    if how == "one ahead":
        return _rate_variant(steps + 1, d_model, warmup_steps)
    return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)


def _in_peak_units(rate: Callable) -> Callable:
    """``rate`` divided by Eq. 3's peak ``(d_model * warmup_steps) ** -0.5``: values near 1, so the absolute part of
    the tolerance (ATOL) no longer dominates and every comparison is, in effect, relative (rates are ~1e-3)."""

    def scaled(steps, d_model, warmup_steps):
        result = rate(steps, d_model, warmup_steps)
        return result * (d_model * warmup_steps) ** 0.5 if isinstance(result, torch.Tensor) else result

    return scaled


def _rate_cases() -> list[_Case]:
    """Rates span more than three orders of magnitude: the cases are ``relative`` ("close" means within 1% of
    each rate)."""
    sampled, every = torch.arange(1, 30001, 37, dtype=torch.float64), torch.arange(1, 601, dtype=torch.float64)
    return [
        _Case(
            "steps 1..30000, d_model=512, warmup_steps=4000",
            (sampled, 512, 4000),
            relative=True,
            labels=("step", [int(step) for step in sampled.tolist()]),
        ),
        _Case(
            "steps 1..600, d_model=16, warmup_steps=50",
            (every, 16, 50),
            relative=True,
            labels=("step", [int(step) for step in every.tolist()]),
        ),
    ]


def _rate_mistakes() -> list[_Mistake]:
    """The classic mistakes of Eq. 3, in units of the peak rate (as the checker compares)."""
    mistakes = [
        _Mistake(
            "max for min",
            lambda s, d, w: _rate_variant(s, d, w, how="max"),
            "max takes the larger of the two terms, so the rate starts at its largest and never warms up: Eq. 3 takes "
            "the smaller one, min(step^-0.5, step * warmup_steps^-1.5).",
        ),
        _Mistake(
            "no d_model factor",
            lambda s, d, w: _rate_variant(s, d, w, how="no d_model"),
            "the shape is right but the scale is not: Eq. 3 multiplies by d_model^-0.5.",
        ),
        _Mistake(
            "d_model^+0.5",
            lambda s, d, w: _rate_variant(s, d, w, how="sqrt d_model"),
            "the rate is multiplied by sqrt(d_model) instead of divided: the factor is d_model^-0.5, smaller for wider "
            "models.",
        ),
        _Mistake(
            "warm-up exponent",
            lambda s, d, w: _rate_variant(s, d, w, how="warmup exponent"),
            "the warm-up term uses warmup_steps^-0.5: it is step * warmup_steps^-1.5, so that both terms meet at "
            "step = warmup_steps.",
        ),
        _Mistake(
            "no warm-up",
            lambda s, d, w: _rate_variant(s, d, w, how="no warm-up"),
            "only the decay term is there: during the first warmup_steps steps the rate must grow linearly, "
            "step * warmup_steps^-1.5.",
        ),
        _Mistake(
            "steps from 0",
            lambda s, d, w: _rate_variant(s, d, w, how="from 0"),
            "the steps are shifted by one: the steps you are given count from 1 already (LambdaLR's shift is "
            "outside this function).",
        ),
        _Mistake(
            "steps + 1",
            lambda s, d, w: _rate_variant(s, d, w, how="one ahead"),
            "the steps are shifted by one, one step ahead: step 1 gets the rate of step 2, twice too large, and the "
            "peak comes at step warmup_steps - 1. The steps you are given are already the step numbers, counting "
            "from 1 (LambdaLR's shift from 0 is outside this function): use them as they are.",
        ),
    ]
    return [_Mistake(m.key, _in_peak_units(m.wrong), m.diagnosis) for m in mistakes]


_RATE_HINTS = _hints(
    "10.1",
    "Eq. 3 (§5.3) is the smaller of two curves, a straight line that rises through the warm-up and an inverse "
    "square root that decays after it, both scaled by one factor that depends on the model's width.",
    "compute the two curves of Eq. 3 as whole tensors (steps**-0.5 and the warm-up line) and take their "
    "elementwise minimum with torch.minimum, not Python's min; check the factor in front.",
    "return d_model**-0.5 * torch.minimum(steps**-0.5, steps * warmup_steps**-1.5)  # Eq. 3, step by step",
)


@_counted
def check_rate(rate: Callable) -> Verdict:
    """Exercise 10.1: ``rate(steps (S,) float64, d_model, warmup_steps) -> learning rates (S,)``, Eq. 3 (§5.3).

    Answers are compared in units of the peak rate ``(d_model * warmup_steps) ** -0.5``, so the tolerance is
    relative (about 1e-4) at every step, late small rates included."""
    return _check(
        "Exercise 10.1 the learning rate of Eq. 3",
        _in_peak_units(rate) if callable(rate) else rate,
        _in_peak_units(_rate_variant),
        _rate_cases(),
        _rate_mistakes(),
        _RATE_HINTS,
        codes=_answer_codes(rate) if callable(rate) else set(),
        notes=(
            "The values above are learning rates divided by the peak (d_model * warmup_steps)^-1/2; the first case "
            "samples every 37th step, the second every step.",
        ),
        inputs=("steps", "d_model", "warmup_steps"),
    )


def _score_variant(sum_log_p, lengths, alpha, *, how="right"):
    lengths = lengths.to(sum_log_p.dtype)
    if how == "none":
        return sum_log_p.clone()
    if how == "times":
        return sum_log_p * ((5 + lengths) / 6) ** alpha
    if how == "no eos":
        return sum_log_p / ((4 + lengths) / 6) ** alpha
    if how == "no alpha":
        return sum_log_p / ((5 + lengths) / 6)
    if how == "mean":
        return sum_log_p / lengths
    if how == "precedence":  # (5 + |Y|) / 6 ** alpha: the power binds tighter than the division
        return sum_log_p / ((5 + lengths) / 6**alpha)
    if how == "length^alpha":
        return sum_log_p / lengths**alpha
    return sum_log_p / ((5 + lengths) / 6) ** alpha


def _score_cases() -> list[_Case]:
    g = _generator(14)
    lengths = torch.tensor([1, 2, 3, 5, 8, 13])
    return [
        _Case("6 hypotheses, alpha=0.6", (-(torch.rand(6, generator=g, dtype=torch.float64) * 8 + 0.1), lengths, 0.6)),
        _Case(
            "6 hypotheses, alpha=1.5",
            (-(torch.rand(6, generator=g, dtype=torch.float64) * 8 + 0.1), lengths.flip(0), 1.5),
        ),
    ]


def _score_mistakes() -> list[_Mistake]:
    mistakes = [
        _Mistake(
            "no penalty",
            lambda s, n, a: _score_variant(s, n, a, how="none"),
            "the scores are the plain sums of log-probabilities: divide each by lp(Y) = ((5 + |Y|) / 6) ** alpha.",
        ),
        _Mistake(
            "multiplied",
            lambda s, n, a: _score_variant(s, n, a, how="times"),
            "the sums are multiplied by "
            "lp(Y): divide instead, so that longer hypotheses' (more negative) sums shrink towards 0.",
        ),
        _Mistake(
            "<eos> not counted",
            lambda s, n, a: _score_variant(s, n, a, how="no eos"),
            "|Y| is one too small: the lengths you are given already count every generated token, <eos> included.",
        ),
        _Mistake(
            "alpha ignored",
            lambda s, n, a: _score_variant(s, n, a, how="no alpha"),
            "the penalty is not raised to the power alpha: lp(Y) = ((5 + |Y|) / 6) ** alpha.",
        ),
        _Mistake(
            "mean log p",
            lambda s, n, a: _score_variant(s, n, a, how="mean"),
            "dividing by the length gives "
            "the mean log-probability, a different normalisation: the paper uses GNMT's ((5 + |Y|) / 6) ** alpha.",
        ),
        _Mistake(
            "length ** alpha",
            lambda s, n, a: _score_variant(s, n, a, how="length^alpha"),
            "|Y| ** alpha is a simpler penalty; GNMT's (the paper's, §6.1) is ((5 + |Y|) / 6) ** alpha.",
        ),
        _Mistake(
            "precedence",
            lambda s, n, a: _score_variant(s, n, a, how="precedence"),
            "the power binds tighter than the division: (5 + |Y|) / 6 ** alpha divides by 6 ** alpha alone. GNMT's "
            "lp(Y) is ((5 + |Y|) / 6) ** alpha, with the parentheses.",
        ),
    ]
    return mistakes


_SCORE_HINTS = _hints(
    "10.2",
    "§6.1 ranks finished hypotheses by their total log-probability divided by a penalty that grows with the "
    "number of generated tokens (Wu et al., 2016): how does it use the length, the constant 5 and alpha?",
    "divide each sum by lp(Y), computed elementwise from the tensor of lengths; check the constants 5 and 6 "
    "and where alpha goes in GNMT's formula.",
    "lp = ((5 + lengths) / 6) ** alpha  # GNMT's length penalty; |Y| counts <eos>\nreturn sum_log_p / lp",
)


@_counted
def check_length_penalty(score: Callable) -> Verdict:
    """Exercise 10.2: ``score(sum_log_p (K,), lengths (K,) int, alpha) -> scores (K,)``, GNMT's penalty (§6.1)."""
    return _check(
        "Exercise 10.2 the length penalty",
        score,
        _score_variant,
        _score_cases(),
        _score_mistakes(),
        _SCORE_HINTS,
        inputs=("sum_log_p", "lengths", "alpha"),
    )


# --- notebook 11: efficient attention ---------------------------------------------------------


def _zero_if_minus_inf(t: torch.Tensor) -> torch.Tensor:
    return t.masked_fill(t == -math.inf, 0.0)


def _online_variant(
    running_max, running_sum, block, *, old="rescaled", terms="new max", safe=True, returns="new max", rows=True
):
    """Exercise 11.1's update, or one classic mistake of it.

    ``old``: the old sum "rescaled" by exp(old_max - new_max), "kept" as it is, "inverted" (exp(new_max - old_max))
    or "dropped"; ``terms``: the block's entries as exp(entry - "new max"), exp(entry - "block max"), exp(entry)
    ("unshifted") or "raw"; ``safe``: a max of -inf is replaced by 0 before it is subtracted (else -inf - -inf =
    NaN); ``returns``: the "new max", the "old max" or the "stand-in max" (0 where the new max is -inf); ``rows``:
    False takes one max over the whole block, all rows together (``block.max()``)."""
    guard = _zero_if_minus_inf if safe else (lambda t: t)
    block_max = block.amax(dim=-1) if rows else block.max().expand(block.shape[:-1])
    new_max = torch.maximum(running_max, block_max)
    if old == "rescaled":
        carried = running_sum * torch.exp(running_max - guard(new_max))
    elif old == "inverted":
        carried = running_sum * torch.exp(guard(new_max) - running_max)
    elif old == "kept":
        carried = running_sum
    else:
        carried = torch.zeros_like(running_sum)
    if terms == "new max":
        added = torch.exp(block - guard(new_max)[..., None]).sum(dim=-1)
    elif terms == "block max":
        added = torch.exp(block - guard(block_max)[..., None]).sum(dim=-1)
    elif terms == "unshifted":
        added = torch.exp(block).sum(dim=-1)
    else:
        added = block.sum(dim=-1)
    if returns == "stand-in max":
        return _zero_if_minus_inf(new_max), carried + added
    return (new_max if returns == "new max" else running_max), carried + added


def _folded(update: Callable) -> Callable:
    """``update`` called once, or, when a ``block_size`` is given, folded over the row block by block from the
    given state (the way the notebook streams a long row). A result that cannot be folded further is returned as
    it is, so that the verdict names what is wrong with it."""

    def run(running_max, running_sum, block, block_size=None):
        if block_size is None:
            return update(running_max, running_sum, block)
        state = (running_max, running_sum)
        for start in range(0, block.shape[-1], block_size):
            result = update(*state, block[..., start : start + block_size])
            foldable = isinstance(result, (tuple, list)) and len(result) == 2
            if not foldable or not all(isinstance(r, torch.Tensor) and r.shape == running_max.shape for r in result):
                return result
            state = tuple(result)
        return state

    return run


def _online_cases() -> list[_Case]:
    g = _generator(21)
    inf = math.inf

    def state_after(entries):  # the running (max, sum) after some entries, from the reference
        from helpers.efficient import online_softmax_update

        start = torch.full(entries.shape[:-1], -inf), torch.zeros(entries.shape[:-1])
        return online_softmax_update(*start, entries)

    earlier = torch.randn(4, 7, generator=g) * 2
    below = state_after(torch.randn(3, 5, generator=g) + 4.0)  # running max about 5 and more
    above = state_after(torch.randn(3, 5, generator=g) - 4.0)
    large_max, large_sum = state_after(torch.randn(3, 6, generator=g) * 3 + torch.tensor([[500.0], [-500.0], [480.0]]))
    masked_max, masked_sum = state_after(torch.tensor([[-inf, -inf, -inf], [0.5, -1.0, 2.0], [-inf, -inf, -inf]]))
    masked_block = torch.tensor([[-inf, -inf, -inf, -inf], [-inf, -inf, -inf, -inf], [1.0, -inf, 3.0, 0.0]])
    long_row = torch.randn(3, 1000, generator=g) * 4
    long_row[2, ::3] = -inf  # a padding-like row with masked entries in every block
    return [
        _Case(
            "a first block: from (-inf, 0), 3 rows of 6 entries",
            (torch.full((3,), -inf), torch.zeros(3), torch.randn(3, 6, generator=g) * 2),
        ),
        _Case("4 rows, a block of 5 after 7 entries", (*state_after(earlier), torch.randn(4, 5, generator=g) * 2)),
        _Case("the block's max below the running max", (*below, torch.randn(3, 4, generator=g) - 1.0)),
        _Case("the block's max above the running max", (*above, torch.randn(3, 4, generator=g) + 1.0)),
        _Case(
            "large entries, about +-500 (exp(500) overflows to inf)",
            (large_max, large_sum, torch.randn(3, 5, generator=g) * 3 + torch.tensor([[505.0], [-495.0], [470.0]])),
        ),
        _Case(
            "masked entries: row 0 all -inf so far and in this block, row 1 an all -inf block, row 2 a first "
            "real block",
            (masked_max, masked_sum, masked_block),
            regions={"row 0, which has seen only -inf entries": torch.tensor([True, False, False])},
        ),
        _Case(
            "3 long rows of 1000 entries folded in blocks of 64 from (-inf, 0): max + log(sum) must equal "
            "torch.logsumexp of the row",
            (torch.full((3,), -inf), torch.zeros(3), long_row, 64),
        ),
    ]


_MINUS_INF_NAN = (
    "a row that has seen only -inf entries (masked) gets NaN: its max is still -inf, and subtracting -inf from -inf "
    "gives NaN. Where the new max is -inf, subtract a finite stand-in (0) instead: every term is then exp(-inf) = 0, "
    "and the row stays at (-inf, 0)."
)


def _online_mistakes() -> list[_Mistake]:
    def mistake(key: str, diagnosis: str, guarded: bool = True, **how) -> list[_Mistake]:
        """The mistake as written with the -inf guard, and as written without it (then NaN on a masked row too);
        ``guarded=False`` where the guard makes no difference."""
        first = _Mistake(key, _folded(functools.partial(_online_variant, **how)), diagnosis)
        if not guarded:
            return [first]
        naive = _folded(functools.partial(_online_variant, safe=False, **how))
        return [first, _Mistake(key, naive, f"{diagnosis} Also, {_MINUS_INF_NAN}")]

    return [
        _Mistake(
            "-inf - -inf gives NaN",
            _folded(functools.partial(_online_variant, safe=False)),
            _MINUS_INF_NAN,
        ),
        *mistake(
            "old sum not rescaled",
            "the old sum is added as it is: it was measured against the old max, so when the block brings a larger "
            "max it must first be multiplied by exp(old_max - new_max), a factor of at most 1.",
            old="kept",
        ),
        *mistake(
            "rescaled the wrong way",
            "the old sum is multiplied by exp(new_max - old_max), the inverse factor (>= 1): re-expressing terms "
            "measured against the old max against the larger new max makes them smaller, exp(old_max - new_max). "
            "(On a row that starts from max -inf the inverse factor is inf, and 0 * inf gives NaN.)",
            guarded=False,
            old="inverted",
        ),
        *mistake(
            "old sum dropped",
            "the new sum holds only the block's terms: the rows' earlier entries are lost. Carry the old sum over, "
            "rescaled by exp(old_max - new_max), and add the block's terms to it.",
            old="dropped",
        ),
        *mistake(
            "block not shifted",
            "the block's terms are exp(entry), not exp(entry - new_max): the sum is then no longer measured against "
            "the max, and exp of a large entry overflows (exp(500) is inf in float32). Subtract the new max first, "
            "so every term is at most 1.",
            terms="unshifted",
        ),
        *mistake(
            "shifted by the block's own max",
            "the block's terms are measured against the block's own max; the running sum is measured against the "
            "new max of the whole row so far (the larger of the old max and the block's), so both the rescaled old "
            "sum and the block's terms must use that one.",
            terms="block max",
        ),
        *mistake(
            "raw entries summed",
            "the block's entries are summed as they are: the normaliser is a sum of exponentials, exp(entry - "
            "new_max), one per entry.",
            terms="raw",
        ),
        *mistake(
            "raw entries summed",
            "the new sum is the plain sum of the block's entries: the normaliser is a sum of exponentials, "
            "exp(entry - new_max), over every entry so far (the old sum, rescaled, plus the block's terms).",
            guarded=False,
            old="dropped",
            terms="raw",
        ),
        *mistake(
            "one max for all rows",
            "the block's max is taken over the whole block, all rows together: each row has its own running max, so "
            "take the max of each row of the block (over its last axis) and compare it with that row's running max.",
            rows=False,
        ),
        *mistake(
            "returned the old max",
            "the max returned is the old one: return the new max, the one the new sum is measured against, so the "
            "next block starts from it.",
            returns="old max",
        ),
        _Mistake(
            "masked row's max not -inf",
            _folded(functools.partial(_online_variant, returns="stand-in max")),
            "a row that has seen only -inf entries comes back with max 0: the 0 is only a stand-in to subtract inside "
            "the update; the max you return stays -inf, so that the row reads (-inf, 0), nothing seen yet.",
        ),
    ]


_ONLINE_HINTS = _hints(
    "11.1",
    "the softmax's normaliser of a row is the sum of exp(entry - max). When a block arrives, the max can only "
    "grow: it becomes the larger of the old max and the block's largest entry. The old sum was measured against "
    "the old max, so re-express it against the new one (a factor of at most 1) before adding the block's own "
    "terms, measured against the new max too. A row that has seen only -inf entries (masked) stays (-inf, 0).",
    "the new max is torch.maximum of the running max and block.amax(dim=-1), (R,); the old sum's factor "
    "exp(running_max - new_max) and the block's terms exp(block - new_max[:, None]) (summed over the last axis) "
    "both need a finite stand-in where the new max is -inf (torch.where or masked_fill).",
    "new_max = torch.maximum(running_max, block.amax(dim=-1))  # (R,)\n"
    "shift = torch.where(new_max == -math.inf, torch.zeros_like(new_max), new_max)  # finite where -inf\n"
    "new_sum = running_sum * torch.exp(running_max - shift) + torch.exp(block - shift[:, None]).sum(dim=-1)\n"
    "return new_max, new_sum",
)


@_counted
def check_online_softmax_update(online_softmax_update: Callable) -> Verdict:
    """Exercise 11.1: ``online_softmax_update(running_max (R,), running_sum (R,), block (R, b)) -> (new_max, new_sum)``.

    One step of the online softmax (Milakov and Gimelshein, 2018): the running max and the running sum of
    ``exp(entry - max)`` of each row after the next ``b`` entries. Start from ``(-inf, 0)``; an all -inf block leaves
    ``(-inf, 0)`` without NaN. One hidden case folds long rows block by block."""
    from helpers.efficient import online_softmax_update as reference

    fn = online_softmax_update
    return _check(
        "Exercise 11.1 the online softmax update",
        _folded(fn) if callable(fn) else fn,
        _folded(reference),
        _online_cases(),
        _online_mistakes(),
        _ONLINE_HINTS,
        names=("new_max", "new_sum"),
        codes=_answer_codes(fn) if callable(fn) else set(),
        inputs=("running_max", "running_sum", "block", "block_size"),
    )


def _cached_variant(
    q_new,
    k_new,
    v_new,
    cache_k,
    cache_v,
    *,
    mask="lower right",
    attend_new=True,
    order="append",
    caches="new",
    scale=None,
    empty_rows="uniform",
):
    """Exercise 11.2's cached attention, or one classic mistake of it.

    ``mask``: "lower right" (query i sees keys j <= t + i), "top left" (j <= i, like is_causal=True), "own key
    excluded" (j < t + i), "inverted" (the lower-right mask's complement, nn.MultiheadAttention's convention) or None;
    ``attend_new``: the new keys take part in the attention; ``order``: new positions "append"ed or "prepend"ed;
    ``caches``: the "new" (extended) or the "old" caches returned; ``scale``: a function of (d_k, d_v);
    ``empty_rows``: a query the mask leaves no key gets "uniform" weights (scores filled with finfo.min) or a "zero"
    output (as F.scaled_dot_product_attention gives on the CPU)."""
    n, t = q_new.shape[-2], cache_k.shape[-2]
    keys = torch.cat([cache_k, k_new] if order == "append" else [k_new, cache_k], dim=-2)
    values = torch.cat([cache_v, v_new] if order == "append" else [v_new, cache_v], dim=-2)
    k, v = (keys, values) if attend_new else (cache_k, cache_v)
    d_k, d_v = q_new.shape[-1], v_new.shape[-1]
    scores = q_new @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k, d_v))
    has_key = torch.ones(n, 1, dtype=torch.bool)
    if mask is not None and attend_new:
        allowed = {
            "lower right": lambda: causal_mask(n, past=t),
            "top left": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(),
            "own key excluded": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(t - 1),
            "one key ahead": lambda: torch.ones(n, t + n, dtype=torch.bool).tril(t + 1),
            "inverted": lambda: ~causal_mask(n, past=t),
        }[mask]()
        scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
        has_key = allowed.any(-1, keepdim=True)
    out = torch.softmax(scores, dim=-1) @ v
    if empty_rows == "zero":
        out = out.masked_fill(~has_key, 0.0)
    return (out, keys, values) if caches == "new" else (out, cache_k, cache_v)


def _cached_reference(q_new, k_new, v_new, cache_k, cache_v):
    keys, values = torch.cat([cache_k, k_new], dim=-2), torch.cat([cache_v, v_new], dim=-2)
    mask = causal_mask(q_new.shape[-2], past=cache_k.shape[-2])
    return scaled_dot_product_attention(q_new, keys, values, mask)[0], keys, values


_WRONG_AXIS = re.compile(r"Sizes of tensors must match except in dimension (\d+)")

_CAT_AXIS_ERROR = _ErrorHint(
    "concatenated along the wrong axis",
    lambda error: bool((found := _WRONG_AXIS.search(str(error))) and found.group(1) != "2"),
    "the cache and the new positions were joined along another axis than the positions: keys and values are "
    "(B, h, positions, d), and the new positions go at the end of axis 2 (dim=-2); the batch, heads and feature "
    "axes keep their sizes.",
)

_STACK_ERROR = _ErrorHint(
    "stacked instead of concatenated",
    lambda error: "stack expects each tensor to be equal size" in str(error),
    "torch.stack puts equal-shaped tensors side by side along a new axis; the cache and the new positions have "
    "different numbers of positions and are to be joined along the existing positions axis (a concatenation).",
)


def _square_mask_error(n: int, t: int) -> _ErrorHint:
    def matches(error: BaseException) -> bool:
        text = str(error)
        return (
            f"mask of shape ({n}, {n}) does not broadcast" in text
            or f"size of tensor a ({t + n}) must match the size of tensor b ({n}) at non-singleton dimension 3" in text
            or f"size of tensor a ({n}) must match the size of tensor b ({t + n}) at non-singleton dimension 3" in text
        )

    return _ErrorHint(
        "square causal mask",
        matches,
        f"the causal mask is square, ({n}, {n}), but the {n} new queries score all {t + n} keys, the {t} cached ones "
        f"and the {n} new ones: the mask is ({n}, {t + n}), with query i allowed keys j <= {t} + i.",
    )


def _cached_cases() -> list[_Case]:
    g = _generator(22)

    def case(name, B, h, n, t, d_k, d_v):
        q, k, v = (torch.randn(B, h, n, d, generator=g) for d in (d_k, d_k, d_v))
        ck, cv = torch.randn(B, h, t, d_k, generator=g), torch.randn(B, h, t, d_v, generator=g)
        hints = (_square_mask_error(n, t),) if n > 1 and t > 0 else ()
        return _Case(name, (q, k, v, ck, cv), error_hints=hints)

    return [
        case("one new position, empty caches (t=0); B=2, h=2, d_k=d_v=8", 2, 2, 1, 0, 8, 8),
        case("one new position after t=5 cached; B=2, h=3, d_k=d_v=8", 2, 3, 1, 5, 8, 8),
        case("a chunk of 3 new positions after t=4 cached; B=1, h=2, d_k=d_v=4", 1, 2, 3, 4, 4, 4),
        case("2 new positions after t=3 cached, d_k=8, d_v=5; B=2, h=2", 2, 2, 2, 3, 8, 5),
    ]


_TOP_LEFT = (
    "the causal mask is aligned to the top left, as F.scaled_dot_product_attention(..., is_causal=True) (or a plain "
    "lower triangle of the (n_new, t + n_new) scores) aligns it: new query i then sees only keys 0 .. i, the oldest "
    "cached positions. The new queries are the last n_new positions of the sequence, so query i may see every "
    "cached key and the new ones up to its own position, keys j <= t + i: a triangle aligned to the bottom right "
    "(causal_mask(n_new, past=t), or torch.nn.attention.bias.causal_lower_right; one new query needs no mask)."
)


def _cached_mistakes() -> list[_Mistake]:
    v = _cached_variant
    prepended = (
        "the new keys and values are put in front of the cached ones. For a single new query the output is the same "
        "(attention does not depend on the order of its keys), but the caches are out of time order, and with "
        "several new queries the causal mask then hides the wrong keys. Append them at the end of the positions axis."
    )
    new_left_out = (
        "the new queries attend only to the cached keys: each new position must also see the new keys up to and "
        "including its own (a first step, with empty caches, would otherwise have nothing to attend to). Extend "
        "the caches first, then attend over all of them."
    )
    return [
        _Mistake("causal mask aligned top-left", lambda *a: v(*a, mask="top left"), _TOP_LEFT),
        _Mistake(  # no mask for one new query (right), is_causal=True for a chunk (top left): wrong after a cache
            "causal mask aligned top-left",
            lambda *a: v(*a, mask="top left" if a[0].shape[-2] > 1 else None),
            _TOP_LEFT,
        ),
        *(
            _Mistake(
                "own key excluded",
                lambda *a, empty=empty: v(*a, mask="own key excluded", empty_rows=empty),
                "each new query is kept from its own key: query i may attend to the t cached keys and the new ones "
                "up to and including its own position, keys j <= t + i (causal_mask(n_new, past=t)), not only "
                "j < t + i.",
            )
            for empty in ("uniform", "zero")
        ),
        _Mistake(
            "causal mask one key ahead",
            lambda *a: v(*a, mask="one key ahead"),
            "the causal mask is off by one the other way: each new query also sees the key after its own (j <= t + "
            "i + 1, as causal_mask(n_new, past=t + 1) or tril(diagonal=t + 1) give). Query i may see keys j <= t + i: "
            "causal_mask(n_new, past=t), with t = cache_k.shape[-2] the cached positions.",
        ),
        *(
            _Mistake(
                "causal mask inverted",
                lambda *a, empty=empty: v(*a, mask="inverted", empty_rows=empty),
                "the mask is inverted, True where a key is hidden (nn.MultiheadAttention's attn_mask convention): "
                "the series' masks, and a boolean attn_mask of F.scaled_dot_product_attention, mean True = may "
                "attend. Pass causal_mask(n_new, past=t) as it is.",
            )
            for empty in ("uniform", "zero")
        ),
        _Mistake(
            "no causal mask",
            lambda *a: v(*a, mask=None),
            "no causal mask: with several new positions at once, each new query also sees the new positions after "
            "it. Query i may see the t cached keys and the new keys up to and including its own position (keys "
            "j <= t + i); with a single new query no mask is needed.",
        ),
        _Mistake("new keys left out", lambda *a: v(*a, attend_new=False), new_left_out),
        _Mistake("new keys left out", lambda *a: v(*a, attend_new=False, caches="old"), new_left_out),
        _Mistake("new keys prepended", lambda *a: v(*a, order="prepend"), prepended),
        _Mistake("new keys prepended", lambda *a: v(*a, order="prepend", mask=None), prepended),
        _Mistake(
            "old caches returned",
            lambda *a: v(*a, caches="old"),
            "the output is right, but the caches returned are the ones you were given: return them extended by the "
            "new keys and values, so that the next step sees these positions too.",
        ),
        _Mistake(
            "caches swapped",
            lambda *a: (lambda out, keys, values: (out, values, keys))(*v(*a)),
            "the two caches come back in the wrong order: return (output, cache_k, cache_v), the keys first.",
        ),
        _Mistake(
            "scaled by sqrt(d_v)",
            lambda *a: v(*a, scale=lambda d_k, d_v: math.sqrt(d_v)),
            "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k, not the values' width.",
        ),
        _Mistake("no scaling", lambda *a: v(*a, scale=lambda d_k, d_v: 1.0), NO_SCALING),
    ]


_CACHED_HINTS = _hints(
    "11.2",
    "the n_new new positions come after the t cached ones. Extend the cached keys and values with the new "
    "ones, in time order, and let each new query attend (Eq. 1, §3.2.1) to every cached key and to the new keys "
    "up to and including its own position, never to a later one. Return the output and the extended caches, "
    "which the next step starts from.",
    "the caches grow along the positions axis, dim=-2, the cached positions first (torch.cat); the mask of n_new "
    "queries against t + n_new keys is (n_new, t + n_new) and aligned to the bottom right, causal_mask(n_new, "
    "past=t) from helpers.masks (is_causal=True aligns it to the top left).",
    "keys = torch.cat([cache_k, k_new], dim=-2)  # (B, h, t + n_new, d_k)\n"
    "values = torch.cat([cache_v, v_new], dim=-2)  # (B, h, t + n_new, d_v)\n"
    "mask = causal_mask(q_new.shape[-2], past=cache_k.shape[-2])  # (n_new, t + n_new), from helpers.masks\n"
    "output, _ = scaled_dot_product_attention(q_new, keys, values, mask)  # from helpers.attention\n"
    "return output, keys, values",
)


@_counted
def check_cached_attention(cached_attention: Callable) -> Verdict:
    """Exercise 11.2: ``cached_attention(q_new, k_new, v_new, cache_k, cache_v) -> (output, cache_k, cache_v)``.

    ``q_new, k_new (B, h, n_new, d_k)``, ``v_new (B, h, n_new, d_v)``, ``cache_k (B, h, t, d_k)``, ``cache_v (B, h,
    t, d_v)`` (``t`` may be 0). The new positions come after the cached ones: each new query attends (Eq. 1) to every
    cached key and to the new keys up to its own position; the caches come back with the new keys and values
    appended along the positions axis."""
    return _check(
        "Exercise 11.2 attention with a KV cache",
        cached_attention,
        _cached_reference,
        _cached_cases(),
        _cached_mistakes(),
        _CACHED_HINTS,
        names=("output", "cache_k", "cache_v"),
        error_hints=(_CAT_AXIS_ERROR, _STACK_ERROR),
        inputs=("q_new", "k_new", "v_new", "cache_k", "cache_v"),
    )


def _grouped_variant(q, k, v, *, how="right", scale=None, dim=-1):
    """Exercise 11.3's grouped-query attention, or one classic mistake of it (``how`` the key/value heads are
    given to the query heads: "right" (repeat_interleave), "tiled" (.repeat), "first" (head 0 only) or "mean";
    ``dim``: the softmax's axis)."""
    group = q.shape[1] // k.shape[1]
    if how == "tiled":
        k, v = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
    elif how == "first":
        k, v = k[:, :1], v[:, :1]
    elif how == "mean":
        k, v = k.mean(dim=1, keepdim=True), v.mean(dim=1, keepdim=True)
    else:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    d_k, d_v = q.shape[-1], v.shape[-1]
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale(d_k, d_v))
    return torch.softmax(scores, dim=dim) @ v


def _grouped_reference(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def _heads_not_matched(h: int, h_kv: int) -> _ErrorHint:
    def matches(error: BaseException) -> bool:
        text = str(error)
        return (
            f"size of tensor a ({h}) must match the size of tensor b ({h_kv}) at non-singleton dimension 1" in text
            or f"size of tensor a ({h_kv}) must match the size of tensor b ({h}) at non-singleton dimension 1" in text
            or f"has size {h_kv} for operand 1 which does not broadcast with previously seen size {h}" in text
            or "leading (batch) dimensions do not broadcast" in text
        )

    return _ErrorHint(
        "key/value heads not shared out",
        matches,
        f"the {h} query heads met the {h_kv} key/value heads as they are, and the two head axes do not broadcast: "
        f"first give every query head its key/value head (here each of the {h_kv} serves {h // h_kv} consecutive "
        "query heads).",
    )


def _grouped_cases() -> list[_Case]:
    g = _generator(23)
    cases = []
    for h, h_kv in ((8, 1), (8, 2), (8, 4), (8, 8), (6, 3)):
        q = torch.randn(2, h, 3, 8, generator=g)
        k, v = torch.randn(2, h_kv, 5, 8, generator=g), torch.randn(2, h_kv, 5, 6, generator=g)
        kind = "multi-query" if h_kv == 1 else "ordinary multi-head" if h_kv == h else "grouped"
        name = f"h={h} query heads, h_kv={h_kv} key/value head{'s' if h_kv > 1 else ''} ({kind}); B=2, n=3, m=5, d_k=8, d_v=6"
        group = h // h_kv
        regions = {  # "only in query heads 4-7, the group of key/value head 1"
            f"query heads {j * group}-{(j + 1) * group - 1}, the group of key/value head {j}": (
                (torch.arange(h) // group == j)[:, None, None]
            )
            for j in range(h_kv)
            if 1 < h_kv < h
        }
        cases.append(_Case(name, (q, k, v), regions, error_hints=(_heads_not_matched(h, h_kv),)))
    return cases


def _grouped_mistakes() -> list[_Mistake]:
    v = _grouped_variant
    return [
        _Mistake(
            "key/value heads tiled",
            lambda *a: v(*a, how="tiled"),
            "the key/value heads are tiled (as .repeat does), so query head i uses key/value head i % h_kv: with "
            "h=8 and h_kv=2, query heads 0, 2, 4, 6 share key/value head 0 and 1, 3, 5, 7 share head 1. The "
            "groups are consecutive: query heads 0-3 use key/value head 0 and 4-7 head 1, i // (h // h_kv) "
            "(each key/value head repeated next to itself, as repeat_interleave does).",
        ),
        _Mistake(
            "only the first key/value head",
            lambda *a: v(*a, how="first"),
            "every query head uses key/value head 0: query head i uses key/value head i // (h // h_kv), so "
            "each key/value head serves its own group of h // h_kv consecutive query heads.",
        ),
        _Mistake(
            "key/value heads averaged",
            lambda *a: v(*a, how="mean"),
            "the key/value heads are averaged into one: they are not mixed, each serves its own group of "
            "h // h_kv consecutive query heads (query head i uses key/value head i // (h // h_kv)).",
        ),
        _Mistake(
            "scaled by sqrt(d_v)",
            lambda *a: v(*a, scale=lambda d_k, d_v: math.sqrt(d_v)),
            "scaled by sqrt(d_v): the scale is the width of the queries and keys, d_k, not the values' width.",
        ),
        _Mistake("no scaling", lambda *a: v(*a, scale=lambda d_k, d_v: 1.0), NO_SCALING),
        _Mistake(
            "softmax over queries",
            lambda *a: v(*a, dim=-2),
            "the softmax runs over the query axis (dim=-2): each query's weights must be positive and sum to 1 "
            "over the keys, the last axis of the (n, m) scores: softmax(dim=-1).",
        ),
    ]


_GROUPED_HINTS = _hints(
    "11.3",
    "grouped-query attention (Ainslie et al., 2023): the h query heads form h_kv groups of h // h_kv "
    "consecutive heads, and each group shares one key/value head, so query head i uses key/value head "
    "i // (h // h_kv). Each query head then runs Eq. 1 (§3.2.1) as usual, with its own queries.",
    "give each query head its key/value head by repeating every key/value head h // h_kv times next to itself "
    "along the heads axis (repeat_interleave on dim=1; .repeat tiles them instead, the wrong groups), then Eq. 1 "
    "as in notebook 01.",
    "group = q.shape[1] // k.shape[1]  # h // h_kv query heads share each key/value head\n"
    "k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)  # (B, h, m, d)\n"
    "weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)  # (B, h, n, m)\n"
    "return weights @ v",
)


@_counted
def check_grouped_attention(grouped_attention: Callable) -> Verdict:
    """Exercise 11.3: ``grouped_attention(q (B, h, n, d_k), k (B, h_kv, m, d_k), v (B, h_kv, m, d_v)) -> (B, h, n, d_v)``.

    Grouped-query attention (Ainslie et al., 2023; h_kv = 1 is multi-query attention, Shazeer, 2019): query head
    ``i`` uses key/value head ``i // (h // h_kv)``, Eq. 1 without a mask, as
    ``F.scaled_dot_product_attention(q, k, v, enable_gqa=True)``."""
    return _check(
        "Exercise 11.3 grouped-query attention",
        grouped_attention,
        _grouped_reference,
        _grouped_cases(),
        _grouped_mistakes(),
        _GROUPED_HINTS,
        inputs=("q", "k", "v"),
    )
