"""The checker engine: what every notebook's checker module (``course.exercises.nbNN``) is built from.

A checker module reads as a list: wrong variants of the reference, the :class:`Mistake` s they stand for,
:class:`ErrorHint` s for exceptions, the exercise's :class:`Hints` (:func:`register_hints`), a few seeded
:class:`Case` s, and the public ``check_*`` function, wrapped in :func:`counts_attempts`, which calls
:func:`run_checks` and returns its :class:`Verdict`.

- Building cases: :func:`seeded_generator`, :func:`random_qkv`.
- Checkers that run the answer themselves (03.3 builds the reader's module first): :func:`run_once`,
  :func:`answer_codes`, :func:`describe`, :func:`short_message`; diagnoses that read the answer's source:
  :func:`raising_line`, :func:`own_source`.
- Tests of checkers: :func:`agree` (a mistake must differ from the reference on some case), :func:`fresh_copy`,
  :func:`input_changed`, :func:`wrong_pattern`, :func:`near_miss`, :func:`registered_hints`.
- For the reader (re-exported by the package): :func:`solution`, :func:`reset_attempts`, :func:`set_time_limit`.

Names with a leading underscore are this module's own. The package's docstring (``course/exercises/__init__.py``)
says what a reader sees.
"""

from __future__ import annotations

import contextvars
import copy
import ctypes
import functools
import inspect
import json
import linecache
import math
import os
import re
import sys
import sysconfig
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted"

TIME_LIMIT_S = 10.0
"""Seconds one case of an answer may run before the checker stops it; change it with :func:`set_time_limit`."""

RTOL, ATOL = 1e-4, 1e-5  # float comparisons: |actual - expected| <= ATOL + RTOL * |expected|


@dataclass
class Verdict:
    """What a checker found, shown by a notebook cell as a short text.

    ``status`` is "passed", "failed" or "not attempted"; ``mistake`` names the recognised classic mistake (or
    ``None``); ``details`` are the lines under the message; ``attempt`` counts this exercise's attempts in this
    kernel, this one included (0 for "not attempted", which does not count).
    """

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


def set_time_limit(seconds: float) -> float:
    """Let one case of an answer run for ``seconds`` before the checker stops it; returns the previous limit.

    The default is 10 s; every case runs in a fraction of a second when the answer is right, so a longer limit
    only helps on a very slow machine. ``seconds`` must be a positive, finite number.
    """
    global TIME_LIMIT_S
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < math.inf:
        raise ValueError(f"set_time_limit needs a positive number of seconds, got {seconds!r}.")
    previous, TIME_LIMIT_S = TIME_LIMIT_S, float(seconds)
    return previous


@dataclass
class Mistake:
    """A classic mistake: a deliberately wrong version of the reference, and the diagnosis a verdict gives.

    ``key`` names the mistake (``Verdict.mistake``, "softmax over queries"); ``wrong`` takes the reference's
    arguments; ``diagnosis`` follows "Likely mistake: " and says what went wrong and how to fix it. A mistake is
    named only when ``wrong`` reproduces the answer on every case, so it must differ from the reference on one.
    """

    key: str
    wrong: Callable  # same signature as the reference
    diagnosis: str


@dataclass
class Case:
    """One seeded case: its ``name`` (shown in the verdict, 'case "n=4"') and the ``args`` of one call.

    ``regions`` label parts of the result ("the padded keys" -> a boolean tensor broadcastable to it), so that a
    verdict says "only in the padded keys"; ``error_hints`` apply to this case only; ``relative=True`` where the
    results span orders of magnitude (learning rates); ``labels`` name the entries of a 1-D result
    (``("step", [1, 38, ...])``: "at step 38").
    """

    name: str
    args: tuple
    # label -> boolean tensor broadcastable to the results: "only <label> differ" when the wrong entries lie inside
    regions: dict[str, torch.Tensor] = field(default_factory=dict)
    error_hints: tuple = ()  # ErrorHint's that apply to this case only
    # True where the results span orders of magnitude (learning rates): "close" then means a small error relative
    # to each entry, not a small absolute one
    relative: bool = False
    # ("step", [1, 38, ...]): what the entries of a 1-D result stand for, so that the verdict says "at step 38", not
    # "at index (1,)"
    labels: tuple[str, list] | None = None


@dataclass
class ErrorHint:
    """A diagnosis for an exception the answer raised: when ``matches(error)``, the verdict names ``key``.

    ``diagnosis`` follows "Likely mistake: ", as a :class:`Mistake`'s does. Every checker also knows ``.view`` on
    a transposed tensor.
    """

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
class Hints:
    """An exercise's three tiers of hints, from the one that gives least away to the solution.

    - ``concept``: what to compute, over which axis, by which equation, and what to print to see a difference (for
      a stub, and for the first failed attempt that no named mistake explains);
    - ``code``: which functions and shapes, not assembled into the answer (the second such attempt);
    - ``solution``: a reference solution, one line of code a line (the third, or :func:`solution` at any time).
    """

    concept: str
    code: str
    solution: str


GRADED_VARIABLE = "ATTENTION_GRADED"
GRADED_MARKER = Path(__file__).with_name("GRADED")
"""The file that turns graded mode on where the variable is not set (``python -m course.student_copy`` writes it)."""

_SWITCHED_OFF = (
    "Solutions are switched off: graded mode is on (ATTENTION_GRADED=1, or a student copy's "
    "course/exercises/GRADED file). The hints still come; your teacher goes through the solutions later."
)


def graded() -> bool:
    """Whether graded mode is on: no checker shows solution code, and :func:`solution` says it is switched off.

    ``ATTENTION_GRADED=1`` turns it on and ``ATTENTION_GRADED=0`` off; unset (or empty), it is on where the file
    :data:`GRADED_MARKER` exists (a student copy)."""
    value = os.environ.get(GRADED_VARIABLE, "").strip()
    if value in ("1", "0"):
        return value == "1"
    if value:
        raise ValueError(f"{GRADED_VARIABLE} must be 1 (graded mode on) or 0 (off), got {value!r}")
    return GRADED_MARKER.exists()


_REGISTRY: dict[str, Hints] = {}  # exercise id ("01.1") -> its hints

_ATTEMPTS: dict[str, list[bool | None]] = {}
"""Each exercise's attempts in this kernel, in order: True for a pass, False for a failure no named mistake explains
(it climbs the hint tiers), None for a failure whose mistake the checker named (its diagnosis is the help, and it
does not use up a tier): ``{"01.1": [False, None, False, True]}``. A stub ("not attempted") does not count."""


def register_hints(exercise_id: str, concept: str, code: str, solution: str) -> Hints:
    """Register an exercise's three tiers of hints (see :class:`Hints`) under its id, "01.1", and return them.

    :func:`solution` finds them by that id, and a verdict's tiered hint comes from them.
    """
    hints = _REGISTRY[exercise_id] = Hints(concept, code, solution)
    return hints


def registered_hints() -> dict[str, Hints]:
    """Every checked exercise's hints, by exercise id ("01.1"): a copy, for tests and tools."""
    return dict(_REGISTRY)


def _exercise_id(exercise: str) -> str:
    """ "01.1" from "Exercise 01.1 attention" (or from "01.1" itself)."""
    found = re.search(r"\d\d\.\d", exercise)
    return found.group(0) if found else exercise


def solution(exercise: str) -> _Code:
    """A reference solution of a checked exercise, ``solution("01.1")``, as code: the body of the exercise's
    function (or its class, for 03.3). Other ways to write it pass as well. In graded mode (:func:`graded`) it says
    that solutions are switched off instead."""
    key = _exercise_id(str(exercise))
    if key not in _REGISTRY:
        raise ValueError(f"no checked exercise {exercise!r}; the checked ones are {', '.join(sorted(_REGISTRY))}.")
    if graded():
        return _Code(_SWITCHED_OFF)
    return _Code(_REGISTRY[key].solution)


def reset_attempts(exercise: str | None = None) -> None:
    """Forget the attempts counted for one exercise (``reset_attempts("01.1")``) or, with no argument, for all of
    them: the next failed attempt gets the conceptual hint again."""
    if exercise is None:
        _ATTEMPTS.clear()
    else:
        _ATTEMPTS.pop(_exercise_id(exercise), None)


_TIERED_HINT = "\x00tiered hint"  # a placeholder among a verdict's details: _record puts this attempt's hint there


def _tiered(hints: Hints, failures: int, exercise_id: str) -> list[str]:
    """The hint for the ``failures``-th failed attempt at an exercise that no named mistake explains (failures the
    checker named do not count: the first unexplained one always gets the conceptual hint). In graded mode no tier
    shows the solution."""
    ask = f'course.exercises.solution("{exercise_id}")'
    if graded():
        if failures <= 1:
            return [f"Hint: {hints.concept}", f"(Failed attempt 1 at {exercise_id}: a second adds a hint in code.)"]
        return [
            f"Hint in code: {hints.code}",
            f"(Failed attempt {failures} at {exercise_id}: graded mode is on, so no solution is shown.)",
        ]
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
    history.append(True if verdict.passed else (False if _TIERED_HINT in verdict.details else None))
    verdict.attempt = len(history)
    if verdict.passed and len(history) > 1:
        verdict.message = f"{verdict.message.rstrip('.')} (attempt {len(history)})."
    if _TIERED_HINT in verdict.details:
        at = verdict.details.index(_TIERED_HINT)
        hints = _REGISTRY.get(exercise_id)
        verdict.details[at : at + 1] = _tiered(hints, history.count(False), exercise_id) if hints else []
    return verdict


def counts_attempts(checker: Callable) -> Callable:
    """Wrap a ``check_*`` function so that it counts the reader's attempts and fills in the tiered hint.

    Every public checker is wrapped once: ``check_attention = counts_attempts(_check_attention)``, or as a
    decorator. A stub does not count; a pass is counted and shown as "(attempt 3)".
    """

    @functools.wraps(checker)
    def counted(*args, **kwargs) -> Verdict:
        return _report(_record(checker(*args, **kwargs)))

    return counted


GRADEBOOK_VARIABLE = "ATTENTION_GRADEBOOK"
"""Where ``python -m course.grade`` collects verdicts: the file this variable names gets one JSON line a verdict."""


def _report(verdict: Verdict) -> Verdict:
    """Append the verdict to the gradebook file, when ``python -m course.grade`` runs this kernel."""
    if path := os.environ.get(GRADEBOOK_VARIABLE):
        line = {"exercise": verdict.exercise_id, "status": verdict.status, "mistake": verdict.mistake}
        line["message"] = verdict.message
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")
    return verdict


# --- running the reader's code: fresh inputs, a time limit, where an error was raised ----------


class _Timeout(BaseException):
    """Raised inside the reader's code when a case runs past the time limit (not an ``Exception``,
    so a bare ``except Exception`` in the answer cannot swallow it), and in the checker, where ``still_running``
    says that the answer swallowed it anyway (a bare ``except:``) and still runs."""

    still_running = False


def fresh_copy(x, memo: dict | None = None):
    """A copy of a case's inputs, so that neither the answer nor the reference can change the case.

    Tensors are cloned, modules deep-copied, lists and tuples rebuilt, anything else (functions, ints) shared. The
    same tensor passed twice stays one tensor (self-attention's x, x, x).
    """
    memo = {} if memo is None else memo
    if id(x) in memo:
        return memo[id(x)]
    if isinstance(x, torch.Tensor):
        result = x.detach().clone()
    elif isinstance(x, nn.Module):
        result = copy.deepcopy(x)
    elif isinstance(x, list):
        result = [fresh_copy(item, memo) for item in x]
    elif isinstance(x, tuple):
        result = tuple(fresh_copy(item, memo) for item in x)
    else:
        return x
    memo[id(x)] = result
    return result


def input_changed(after, before) -> bool:
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
        return mine.keys() != theirs.keys() or any(input_changed(mine[name], theirs[name]) for name in theirs)
    if isinstance(before, (list, tuple)):
        return (
            type(after) is not type(before)
            or len(after) != len(before)
            or any(input_changed(a, b) for a, b in zip(after, before, strict=True))
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
        if isinstance(after, (torch.Tensor, nn.Module, list, tuple)) and input_changed(after, before):
            aliases = tuple(j for j, other in enumerate(args) if other is after and j != index)
            found.append(_InPlace(case, index, aliases))
    return found


def _argument(names: tuple[str, ...] | None, index: int) -> str:
    return f"`{names[index]}`" if names and index < len(names) else f"argument {index + 1}"


def join_and(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c': items joined as a sentence lists them."""
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
            label += f" (the same tensor as {join_and([_argument(names, j) for j in change.aliases])} in this case)"
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
    what = join_and(labels)
    return what, f"{join_and(plain)} changed in place", f"your function changed {what} in place; {why or default_why}"


GRACE_S = 1.0
"""Seconds past the time limit that the checker keeps stopping an answer before it gives its verdict anyway."""


def _send(thread_id: int, exception: type[BaseException]) -> None:
    """Raise ``exception`` in the thread ``thread_id`` at its next check for pending work (a loop's jump, a call).

    Never called with NULL to take one back: on Python 3.11 that leaves the interpreter's flag for pending
    exceptions set, and every thread then stops at every check for the rest of the session (slow, and PyTorch's
    profiler never starts). A sent exception is instead let arrive and caught (:meth:`_Answer.run`).
    """
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exception))


class _Answer(threading.Thread):
    """One call of the reader's answer, in a daemon thread of its own, so that the checker can stop waiting for it.

    The checker waits for ``returned``. Past the time limit it raises ``_Timeout`` in the answer (:meth:`stop`)
    until the answer returns or the grace period ends, then sets ``done_sending``; the thread lets a ``_Timeout``
    still pending arrive, catches it and ends. An answer that swallows every ``_Timeout`` keeps running, unwaited for.
    """

    def __init__(self, fn: Callable, args: tuple):
        super().__init__(name="exercise-checker", daemon=True)
        self.fn, self.args = fn, args
        self.context = contextvars.copy_context()  # the caller's context: ipykernel's output cell, numpy's errstate
        self.grad_enabled = torch.is_grad_enabled()  # grad mode is per thread: carry the caller's over
        self.value, self.error = None, None
        self.returned = threading.Event()
        self.done_sending = False

    def run(self) -> None:
        try:
            try:
                self.value = self.context.run(self.call)
            except BaseException as error:  # handed back to the caller
                self.error = error
        except BaseException:  # a _Timeout sent just as the answer ended: the caller has stopped waiting
            pass
        while True:
            try:
                self.returned.set()
                while not self.done_sending:  # the caller may still send a _Timeout: let it arrive here
                    time.sleep(0.005)
                for _ in range(100):  # one sent but not yet raised arrives at this loop's first jump back
                    pass
                return
            except BaseException:
                continue

    def call(self):
        with torch.set_grad_enabled(self.grad_enabled):
            return self.fn(*self.args)

    def stop(self, exception: type[BaseException], grace: float) -> bool:
        """Raise ``exception`` in the answer every 20 ms until it returns or ``grace`` seconds pass; True if it did."""
        deadline = time.monotonic() + grace
        while not self.returned.is_set() and time.monotonic() < deadline:
            _send(self.ident, exception)
            self.returned.wait(0.02)
        return self.returned.is_set()


def _call_with_limit(fn: Callable, args: tuple):
    """``fn(*args)`` under the time limit, in a thread of its own (:class:`_Answer`), on every platform.

    Past the limit the case has failed, whatever the answer returns later: ``_Timeout`` is raised here, with
    ``still_running`` set when the answer swallowed every ``_Timeout`` sent into it for ``GRACE_S`` seconds (the
    checker then stops waiting and the answer keeps its thread). No signal, so the same code runs on Windows.
    """
    limit = TIME_LIMIT_S
    if not limit:
        return fn(*args)
    answer = _Answer(fn, args)
    answer.start()
    deadline = time.monotonic() + limit
    try:
        # Short waits, so that an interrupt (Jupyter's stop button, Ctrl-C) reaches this thread on every platform.
        while not answer.returned.wait(min(0.05, max(deadline - time.monotonic(), 0.0))):
            if time.monotonic() >= deadline:
                timeout = _Timeout()
                timeout.still_running = not answer.stop(_Timeout, GRACE_S)
                raise timeout
    except KeyboardInterrupt:
        answer.stop(KeyboardInterrupt, GRACE_S)
        raise
    finally:
        answer.done_sending = True
    if answer.error is not None:
        raise answer.error
    return answer.value


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    course_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # course/
    helpers_dir = os.path.join(os.path.dirname(course_dir), "helpers")  # the references the checkers call
    dirs = {os.path.dirname(torch.__file__), course_dir, helpers_dir}
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


def raising_line(error: BaseException) -> str:
    """The source line of the innermost frame of the reader's own code ('' when unknown), spaces removed."""
    own = [tb for tb in _frames(error) if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY_DIRS)]
    if not own:
        return ""
    tb = own[-1]
    return "".join(linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).split())


def own_source(error: BaseException) -> str:
    """The source of the innermost function of the reader's own code in the traceback ('' when unknown)."""
    own = [tb for tb in _frames(error) if not os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY_DIRS)]
    if not own:
        return ""
    try:
        return inspect.getsource(own[-1].tb_frame.f_code)
    except (OSError, TypeError):
        return raising_line(error)


def answer_codes(fn) -> set:
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


def busiest_line(fn: Callable, args: tuple) -> tuple[int, int]:
    """``(line, times)``: the line of the answer's own code (comprehensions included) that ran most often in one call
    ``fn(*args)``, and how often; ``(0, 0)`` when none ran. A Python loop over a tensor's elements shows as a line
    run once per element; a loop over the arguments, a handful of times. For exercises that ask for whole-tensor
    code; call it only on an answer that has passed (it runs the answer once more, traced, without a time limit)."""
    codes = answer_codes(fn)
    pending = list(codes)
    while pending:  # the code of comprehensions and nested functions, which Python 3.11 runs in frames of their own
        nested = [const for const in pending.pop().co_consts if isinstance(const, types.CodeType)]
        codes.update(nested)
        pending += nested
    counts: dict[int, int] = {}

    def count_lines(frame, event, arg):
        if event == "line":
            counts[frame.f_lineno] = counts.get(frame.f_lineno, 0) + 1
        return count_lines

    def on_call(frame, event, arg):
        return count_lines if frame.f_code in codes else None

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        with torch.no_grad():
            fn(*fresh_copy(args))
    finally:
        sys.settrace(previous)
    return max(counts.items(), key=lambda item: item[1], default=(0, 0))


_STUB_MESSAGE = re.compile(r"your code|todo|stub|exercise", re.IGNORECASE)


def _raised_by_stub(error: NotImplementedError, codes: set) -> bool:
    """True when the error marks an untouched stub: its message says so, or the answer's own body raised it with no
    message, as every stub does (``raise NotImplementedError``). A reader's own ``raise NotImplementedError("...")``
    with a message of theirs is their answer's verdict, not the stub's."""
    if _STUB_MESSAGE.search(str(error)):
        return True
    return _last_code(error) in codes and not error.args


def _last_code(error: BaseException):
    """The code object of the innermost frame of the traceback: where ``error`` was raised."""
    frames = list(_frames(error))
    return frames[-1].tb_frame.f_code if frames else None


def short_message(text: str, limit: int = 300) -> str:
    """The first ``limit`` characters of an error message, cut at a word boundary."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " ..."


def describe(x) -> str:
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
            got = "one tensor" if isinstance(value, torch.Tensor) else describe(value)
            return None, f"returned {got}; return {wanted}."
        values = list(value)  # a list of the right length is as good as a tuple
    else:
        if isinstance(value, (tuple, list)) and not (len(value) == 1 and isinstance(value[0], torch.Tensor)):
            return None, f"returned {describe(value)}; return {wanted}, not a {type(value).__name__}."
        values = list(value) if isinstance(value, (tuple, list)) else [value]
    result = []
    for index, item in enumerate(values):
        label = names[index] if names else "result"
        if not isinstance(item, torch.Tensor):
            extra = " (torch.as_tensor(...) converts it)" if type(item).__module__.startswith("numpy") else ""
            return None, f"{label}: returned {describe(item)}; return a torch tensor{extra}."
        try:
            result.append(item.detach().cpu())
        except Exception as error:  # e.g. a tensor on the meta device
            return None, (
                f"{label}: returned a tensor on device {item.device} that cannot be moved to the CPU "
                f"({short_message(error, 120)}); return a tensor on the CPU, like the inputs."
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


def _same_one(x, y, dtype_note: str | None = None) -> bool:
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.shape != y.shape:
        return False
    if _category(x) != _category(y) or (dtype_note and x.dtype != y.dtype):
        return False
    return not bool(_wrong_entries(x, y).any())


def _same(a: list, b: list, dtype_note: str | None = None) -> bool:
    """Results equal in structure, shape, dtype kind (or dtype, when exact) and values (NaN equal to NaN)."""
    return len(a) == len(b) and all(_same_one(x, y, dtype_note) for x, y in zip(a, b, strict=True))


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


def wrong_pattern(
    wrong: torch.Tensor, regions: dict[str, torch.Tensor] | None = None, labels: tuple[str, list] | None = None
) -> str:
    """Where the wrong entries (True in ``wrong``) are, in the words of a verdict ('' when there is no pattern).

    'only in the odd columns (last axis)', 'only at indices 0-3, 7': a column, row or batch pattern is said only
    when it is structural (see :func:`_structural`); otherwise a few wrong entries are listed by index. A case's
    ``regions`` come first ('only in the padded keys'); ``labels`` ("step", [1, 38, ...]) name the entries of a 1-D
    result (10.1's sampled steps).
    """
    regions = regions or {}
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
        return f"only at {_plural(wrong, 'index', 'indices')} {join_and(at)}"
    return ""


def _at(where: tuple, case: Case) -> str:
    """'at index (1, 0)', or 'at step 38' where the case names its entries."""
    if case.labels is not None and len(where) == 1:
        word, names = case.labels
        return f"at {word} {names[where[0]]}"
    return f"at index {where}"


def _value(t: torch.Tensor, where: tuple) -> str:
    item = t[where].item()
    return f"{item:.4f}" if isinstance(item, float) else str(item)


def near_miss(x: torch.Tensor, y: torch.Tensor, wrong: torch.Tensor, relative: bool) -> bool:
    """Whether the answer ``x`` misses ``y`` only a little at its ``wrong`` entries: "close, but outside the tolerance".

    As rounding or a slightly different constant would make them: within 1% of each entry's own value for a
    ``relative`` case, otherwise within 0.01 and within 1% of the largest expected value (so a tensor of small
    values is not "close" to one off by 100%).
    """
    error = (x.double() - y.double()).abs()[wrong]
    if relative:
        return bool((error <= 1e-2 * y.double().abs()[wrong]).all())
    largest = error.max().item()
    return largest < 1e-2 and largest <= 1e-2 * y.double().abs().max().item()


def _difference(
    actual: list, expected: list, names, case: Case, dtype_note: str | None = None
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
        if dtype_note and x.dtype != y.dtype:
            kinds.add("dtype")
            lines.append(
                f"{label}: dtype {x.dtype}, expected {y.dtype}, {dtype_note} (the exercise asks for the same "
                "dtype); build the result from them (torch.full_like, new_full, torch.cat) so that it keeps their "
                "dtype, rather than from a new tensor of the default dtype or with a cast."
            )
        wrong = _wrong_entries(x, y)
        if not wrong.any():
            continue
        kinds.add("values")
        k, total = int(wrong.sum()), wrong.numel()
        pattern = wrong_pattern(wrong, case.regions, case.labels)
        if k == total:
            count = "shape right, its one entry differs" if total == 1 else f"shape right, all {total} entries differ"
        else:
            count = f"{k} of {total} entries differ"
        count += f", {pattern}" if pattern and k != total else ""
        if _category(y) == "float":
            nan = torch.isnan(x) & ~torch.isnan(y)
            if nan.any():
                kinds.add("nan")
                nan_pattern = wrong_pattern(nan, case.regions, case.labels)
                lines.append(
                    f"{label}: contains NaN in {int(nan.sum())} of {total} entries"
                    f"{f', {nan_pattern}' if nan_pattern else ''}; expected none."
                )
                continue
            diff = (x.double() - y.double()).abs().nan_to_num(nan=math.inf, posinf=math.inf).masked_fill(~wrong, -1.0)
            where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
            largest = diff.max().item()
            line = (
                f"{label}: {count}; largest difference {largest:.4g} {_at(where, case)} "
                f"(expected {_value(y, where)}, got {_value(x, where)})"
            )
            if case.relative:  # a small absolute difference can be a large relative one (a tiny early rate)
                relative = (diff / y.double().abs()).nan_to_num(nan=math.inf, posinf=math.inf).masked_fill(~wrong, -1.0)
                at = tuple(int(i) for i in torch.unravel_index(relative.argmax(), relative.shape))
                line += f"; largest relative difference {100 * relative.max().item():.3g}% {_at(at, case)}"
            if near_miss(x, y, wrong, case.relative):
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
            names[i] for i, (x, y) in enumerate(zip(actual, expected, strict=True)) if not _same_one(x, y, dtype_note)
        ]
        good = [name for name in names if name not in bad]
        if good:
            lines.append(f"{' and '.join(good)} match; {' and '.join(bad)} {'does' if len(bad) == 1 else 'do'} not.")
    return lines, kinds


def agree(first: Callable, second: Callable, cases: list[Case], count: int = 1) -> bool:
    """True when ``first`` and ``second`` give equal results (to the checkers' tolerance) on every case.

    Each runs on fresh copies of a case's inputs; ``count`` is the number of results (2 for output and weights).
    A test of a checker asserts ``not agree(mistake.wrong, reference, cases)``: a mistake that agrees with the
    reference would name a right answer a mistake.
    """
    return all(
        _same(_outputs(first(*fresh_copy(case.args)), count), _outputs(second(*fresh_copy(case.args)), count))
        for case in cases
    )


def _match(mistakes: list[Mistake], cases: list[Case], answers: list[list], count: int) -> Mistake | None:
    """The first mistake that reproduces the answer on every case, not just the failing one."""
    for mistake in mistakes:
        try:
            if all(
                _same(answer, _outputs(mistake.wrong(*fresh_copy(case.args)), count))
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


_VIEW_ERROR = ErrorHint(
    "view on a non-contiguous tensor",
    lambda error: isinstance(error, RuntimeError) and "view size is not compatible" in str(error),
    "`.view` cannot merge or split axes of a transposed tensor (it is no longer contiguous in memory): use "
    "`.reshape(...)` or `.flatten(...)`, which copy when they must, or `.contiguous().view(...)`.",
)


def _error_verdict(exercise, subject, error, error_hints) -> Verdict:
    where = _where_raised(error)
    details = [f"Raised in {where}."] if where else []
    message = f"{subject} raised {type(error).__name__}: {short_message(error)}"
    for hint in (*error_hints, _VIEW_ERROR):
        if hint.matches(error):
            return Verdict(exercise, FAILED, message, hint.key, [*details, f"Likely mistake: {hint.diagnosis}"])
    return Verdict(exercise, FAILED, message, None, [*details, _TIERED_HINT])


def run_once(exercise, answer, subject, args, codes, hints, error_hints):
    """Call ``answer(*args)`` once, under the time limit; return ``(result, None)`` or ``(None, verdict)``.

    The verdict covers an error (diagnosed by ``error_hints``), a timeout and a stub (whose body, among ``codes``,
    raised ``NotImplementedError``: "not attempted yet", with ``hints.concept``). ``subject`` starts the verdict's
    message: 'case "n=4"', or 'MyMultiHeadAttention(12, 3)'.
    """
    try:
        with torch.random.fork_rng():  # the reader's code may draw random numbers; keep their state
            return _call_with_limit(answer, args), None
    except _Timeout as timeout:
        details = [
            "Likely mistake: an endless loop. Check that every `while` loop's condition changes inside the loop "
            "(or use a `for` loop over a range). Each case runs in a fraction of a second when right."
        ]
        if timeout.still_running:
            details.append(
                "Your answer caught the checker's stop (a bare `except:` catches it) and still runs in the "
                "background: restart the kernel to stop it, and catch `Exception` rather than everything."
            )
        return None, Verdict(
            exercise, FAILED, f"{subject} did not finish within {TIME_LIMIT_S:g} s.", "time limit", details
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
        if _last_code(error) in codes:
            return None, _error_verdict(exercise, subject, error, error_hints)  # the reader's own raise, as any error
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


def run_checks(
    exercise: str,
    answer: Callable,
    *,
    reference: Callable,
    cases: list[Case],
    mistakes: list[Mistake],
    hints: Hints,
    result_names: tuple[str, ...] | None = None,
    input_names: tuple[str, ...] | None = None,
    error_hints: tuple[ErrorHint, ...] = (),
    notes: tuple[str, ...] = (),
    in_place_why: str | None = None,
    exact_dtype: bool = False,
    dtype_name: str | None = None,
    answer_code: set | None = None,
) -> Verdict:
    """Run the reader's ``answer`` on every case, compare it with ``reference`` and return the diagnosed verdict.

    A checker calls it with its exercise's parts: ``exercise`` ("Exercise 01.1 attention") starts every verdict;
    ``reference`` is the right function, with the answer's signature; ``cases`` are the seeded :class:`Case` s;
    ``mistakes`` the :class:`Mistake` s to try when the answer is wrong, in order (the first that reproduces it on
    every case is named); ``hints`` the exercise's :class:`Hints` (from :func:`register_hints`).

    - ``result_names`` name the results when there are several, ``("output", "weights")``: the answer must return
      a tuple of that length, and the verdict names the one that differs. ``input_names`` name the arguments, as the
      exercise's stub does, so that an argument changed in place is named; ``in_place_why`` then says what goes
      wrong, and the fix (else a generic reason).
    - ``error_hints`` diagnose exceptions the answer may raise (besides each case's own); ``notes`` are appended
      to a failed verdict (e.g. parameters the checker did not fill).
    - ``exact_dtype=True``: a result must have the reference's dtype, not just its kind (floating, integer,
      boolean); ``dtype_name`` is the input whose dtype it keeps, named in the verdict ("targets").
    - ``answer_code``: the code objects whose ``NotImplementedError`` marks a stub, when the answer is not itself
      the stub (03.3 passes its class's ``forward``; by default, from :func:`answer_codes`).

    Each call runs on fresh copies of the case's inputs (:func:`fresh_copy`) under the time limit
    (:func:`set_time_limit`). Wrap the public checker in :func:`counts_attempts` so that attempts are counted and
    the hint of each tier is filled in.
    """
    names, inputs, codes = result_names, input_names, answer_code
    dtype_note = (f"the dtype of `{dtype_name}`" if dtype_name else "the dtype of the inputs") if exact_dtype else None
    if not callable(answer):
        return Verdict(
            exercise,
            FAILED,
            f"expected your function, got {describe(answer)}.",
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

    codes = answer_codes(answer) if codes is None else codes
    count = len(names) if names else 1
    answers = []
    for case in cases:
        subject = f'case "{case.name}"'
        case_hints = (*case.error_hints, *error_hints)
        args = fresh_copy(case.args)
        saved = fresh_copy(args)  # a second copy: what the inputs were before the call
        actual, verdict = run_once(exercise, answer, subject, args, codes, hints, case_hints)
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
        verdict = _compare(exercise, reference, cases, answers, mistakes, names, count, notes, dtype_note)
    except Exception as error:  # a result the comparison cannot handle must not crash the notebook
        verdict = Verdict(
            exercise, FAILED, f"could not compare your result ({type(error).__name__}: {short_message(error)})."
        )
    return told(verdict)


def _compare(exercise, reference, cases, answers, mistakes, names, count, notes, dtype_note) -> Verdict:
    expected = [_outputs(reference(*fresh_copy(case.args)), count) for case in cases]
    failed = [i for i in range(len(cases)) if not _same(answers[i], expected[i], dtype_note)]
    if not failed:
        return Verdict(exercise, PASSED, f"all {len(cases)} cases passed.")
    first = failed[0]
    message = f'case "{cases[first].name}" failed ({len(failed)} of {len(cases)} cases).'
    details, kinds = _difference(answers[first], expected[first], names, cases[first], dtype_note)
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


def seeded_generator(seed: int) -> torch.Generator:
    """A random generator of its own for a case's inputs, so that checking leaves the global seed alone."""
    return torch.Generator().manual_seed(seed)


def random_qkv(seed: int, batch: tuple[int, ...], n: int, m: int, d_k: int, d_v: int):
    """Seeded queries ``(*batch, n, d_k)``, keys ``(*batch, m, d_k)`` and values ``(*batch, m, d_v)``."""
    g = seeded_generator(seed)
    return (
        torch.randn(*batch, n, d_k, generator=g),
        torch.randn(*batch, m, d_k, generator=g),
        torch.randn(*batch, m, d_v, generator=g),
    )
