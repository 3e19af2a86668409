"""Runs one generated program eagerly and under pdyn over its call sequence and classifies it.

The source is written to a real file and exec'd twice into fresh module namespaces (one for eager,
one for pdyn), so globals and side effects never mix. One `pdyn.optimize` serves every call. The
first call that differs stops the run. Statuses, worst first:

  timeout               the whole run took longer than its limit, in pdyn's part
  eager_timeout         eager itself ran past the limit: the program never ends (not a failure)
  crash                 pdyn raised where eager returned
  eager_error_mismatch  eager raised and pdyn returned, or raised another exception type
  wrong                 results, arguments after the call, or globals differ
  fallback              all equal, but pdyn warned it fell back to eager (internal error or a
                        Triton compile failure): counted, not a failure
  ok
  invalid               the source does not compile (only the reducer makes such programs)
"""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import logging
import os
import signal
import tempfile
import textwrap
import threading
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import pdyn
from tests.fuzz.compare import difference
from tests.fuzz.gradients import compare_backward, requiring_grad
from tests.fuzz.program import PRELUDE, Program, build_args

FAILURES = ("crash", "eager_error_mismatch", "wrong", "timeout")
FALLBACK_MARKS = ("pdyn: internal error", "running this graph with torch (")
_DIR: list[str] = []


class FuzzTimeout(BaseException):
    """Raised by the alarm; a BaseException so neither user code nor pdyn's handlers swallow it."""


@dataclass
class Outcome:
    """How one program fared: status, the first failing call, what differed, pdyn's fallback
    warnings, the calls on which eager raised, and pdyn's counters."""

    status: str
    call: int | None = None
    detail: str = ""
    trace: str = ""
    fallbacks: list[str] = field(default_factory=list)
    eager_raised: int = 0
    calls: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    phase: str = ""   # which side of a call runs now: "eager" or "pdyn"

    @property
    def failed(self) -> bool:
        return self.status in FAILURES

    def signature(self) -> str:
        """What must stay the same while reducing: the status and the kind of difference."""
        if self.status == "wrong":
            head = self.detail.split(": ", 1)[-1]
            return f"wrong:{head.split(' ', 1)[0]}"
        if self.status in ("crash", "eager_error_mismatch"):
            return f"{self.status}:{self.detail.split(':', 1)[0]}"
        return self.status


def run_program(program: Program, backend: str = "eager", timeout: float = 30.0) -> Outcome:
    return run_source(program.source(), program.calls, backend, timeout, program.grad)


def run_function(function_source: str, calls: list[tuple[Any, ...]], backend: str = "eager",
                 timeout: float = 60.0, grad: bool = False) -> Outcome:
    """`run_source` for just `def f(...)`: the standard prelude is put in front."""
    return run_source(PRELUDE + "\n\n" + function_source, calls, backend, timeout, grad)


def assert_matches_eager(function_source: str, calls: list[tuple[Any, ...]], backend: str = "eager",
                         grad: bool = False) -> None:
    """For reduced failures pasted into tests: every call equals eager (and its gradients, `grad`)."""
    outcome = run_function(textwrap.dedent(function_source).strip() + "\n", calls, backend, grad=grad)
    assert not outcome.failed, f"{outcome.status} at call {outcome.call}: {outcome.detail}\n{outcome.trace}"


def run_source(source: str, calls: list[tuple[Any, ...]], backend: str = "eager", timeout: float = 30.0,
               grad: bool = False) -> Outcome:
    """Every call eagerly and under pdyn; with `grad`, float tensor arguments require grad and
    each call's backward (gradients.py) is compared too."""
    path = _write(source)
    outcome = Outcome("ok", calls=len(calls))
    pdyn.reset()
    fallbacks: list[str] = []
    try:
        with _captured(fallbacks), _deadline(timeout):
            try:
                eager_ns, pdyn_ns = _load(source, path), _load(source, path)
            except Exception as e:  # noqa: BLE001  # a reducer's candidate may not compile
                outcome.status, outcome.detail = "invalid", f"{type(e).__name__}: {e}"
                return outcome
            optimized = pdyn.optimize(pdyn_ns["f"], backend=backend)
            for i, call in enumerate(calls):
                failure = _one_call(eager_ns, pdyn_ns, optimized, call, backend, outcome, grad)
                if failure is not None:
                    outcome.status, outcome.detail, outcome.call = failure[0], failure[1], i
                    break
    except FuzzTimeout:
        # a program eager never finishes (a loop that grows what it iterates) says nothing of pdyn
        outcome.status = "eager_timeout" if outcome.phase == "eager" else "timeout"
        outcome.detail = f"over {timeout:g} s"
    except Exception as e:  # noqa: BLE001  # NOTE: a bug of the harness, not of pdyn; counted apart
        outcome.status, outcome.detail = "harness_error", f"{type(e).__name__}: {e}"
        outcome.trace = traceback.format_exc()
    finally:
        outcome.stats = pdyn.stats()
        pdyn.reset()
        _forget(path)
    outcome.fallbacks = fallbacks
    if outcome.status == "ok" and fallbacks:
        outcome.status = "fallback"
    return outcome


def _one_call(eager_ns: dict[str, Any], pdyn_ns: dict[str, Any], optimized: Callable[..., Any],
              call: tuple[Any, ...], backend: str, outcome: Outcome, grad: bool = False) -> tuple[str, str] | None:
    eager_args, pdyn_args = build_args(call), build_args(call)
    if grad:
        eager_args, pdyn_args = requiring_grad(eager_args), requiring_grad(pdyn_args)
    outcome.phase = "eager"
    expected, expected_exc, _ = _invoke(eager_ns["f"], eager_args)
    outcome.phase = "pdyn"
    actual, actual_exc, trace = _invoke(optimized, pdyn_args)
    outcome.eager_raised += expected_exc is not None
    if expected_exc is None and actual_exc is not None:
        outcome.trace = trace
        return "crash", f"{type(actual_exc).__name__}: {_first_line(actual_exc)}"
    if expected_exc is not None and (actual_exc is None or type(actual_exc) is not type(expected_exc)):
        outcome.trace = trace
        got = "returned" if actual_exc is None else f"raised {type(actual_exc).__name__}: {_first_line(actual_exc)}"
        eager = f"{type(expected_exc).__name__}: eager raised ({_first_line(expected_exc)})"
        return "eager_error_mismatch", f"{eager}, pdyn {got}"
    found = None if expected_exc is not None else difference(actual, expected, "result", backend)
    found = found or difference(pdyn_args, eager_args, "arguments after the call", backend)
    found = found or difference(_globals(pdyn_ns), _globals(eager_ns), "globals", backend)
    if found is None and grad and expected_exc is None:
        return compare_backward(actual, expected, pdyn_args, eager_args, backend, outcome)
    return None if found is None else ("wrong", found)


def _invoke(fn: Callable[..., Any], args: list[Any]) -> tuple[Any, Exception | None, str]:
    try:
        return fn(*args), None, ""
    except Exception as e:  # noqa: BLE001  # NOTE: any exception is a result to compare
        return None, e, traceback.format_exc(limit=-8)


def _globals(ns: dict[str, Any]) -> dict[str, Any]:
    return {"COUNTER": ns["COUNTER"], "LOG": ns["LOG"], "SINK": ns["SINK"].getvalue()}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


# -- the module file, warnings and the deadline --------------------------------------------------------------


def _write(source: str) -> str:
    """A real file per distinct source, so pdyn's source locations and linecache find the lines."""
    if not _DIR:
        _DIR.append(tempfile.mkdtemp(prefix="pdyn_fuzz_"))
    name = hashlib.sha1(source.encode()).hexdigest()[:16]
    path = os.path.join(_DIR[0], f"prog_{name}.py")
    with open(path, "w") as out:
        out.write(source)
    return path


def _forget(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
    linecache.checkcache(path)


def _load(source: str, path: str) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "pdyn_fuzz_program", "__file__": path}
    exec(compile(source, path, "exec"), ns)
    return ns


class _Collect(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if any(mark in message for mark in FALLBACK_MARKS):
            self.into.append(message)


@contextlib.contextmanager
def _captured(fallbacks: list[str]) -> Iterator[None]:
    """pdyn's fallback warnings (warnings and log records) into `fallbacks`, off the terminal."""
    logger = logging.getLogger("pdyn")
    handler, propagate = _Collect(fallbacks), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
    fallbacks.extend(str(w.message) for w in caught if any(m in str(w.message) for m in FALLBACK_MARKS))


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise FuzzTimeout()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
