"""The frontend half of `pdyn.debug.bisect`, z3 or not: replay the trace of the entry that served the
call (the call's arguments with each dynamic size set to its value in that trace) with ShapeEnv steps
undone (shapes/steps.py), and run the call through the replayed entry. A binary search over the steps
of a phase (every kind but guards first, then guards) finds the first step whose undoing, with the
steps of its phase before it, makes the call right. A wrong shape rule is no ShapeEnv step: the
trace at the call's own sizes with the hint check on names it."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import sympy
import torch

from pdyn.backends import resolve
from pdyn.base.config import config as settings
from pdyn.hook.eval_frame import Frame
from pdyn.shapes import steps
from pdyn.shapes.steps import KINDS, Step, StepRecord
from pdyn.shapes.validation import ValidationFailure
from pdyn.sources import ItemSource, LocalSource, SizeSource, Source
from pdyn.debug.calls import clone, outcome, probe, same

PHASES = (frozenset(KINDS) - {"guard"}, frozenset({"guard"}))


@dataclass
class UndoFinding:
    step: Step
    alone: bool    # undoing the step alone is enough
    replays: int


class _CannotReplay(Exception):
    pass


def undo_bisect(frame: Frame, sizes: Mapping[SizeSource, int], args: tuple, kwargs: dict,
                expected: Any) -> tuple[UndoFinding | None, str]:
    """The step (None, and why, where the replay does not serve the call wrong or no undoing helps)."""
    try:
        replay = replay_arguments(frame.fn, args, kwargs, sizes)
    except _CannotReplay as e:
        return None, f"the served entry's trace cannot be replayed: {e}"
    replays = 0

    def fixed(record: StepRecord) -> bool:
        nonlocal replays
        replays += 1
        return same(expected, _replay(frame, replay, (args, kwargs), record))

    try:
        if fixed(StepRecord()):
            return None, "a replay of the served entry's trace gets this call right"
        for kinds in PHASES:
            top = StepRecord.undoing_all(kinds)
            if not fixed(top):
                continue
            lo, hi, at_hi = 0, len(top.in_kinds()), top   # undoing the first lo steps: wrong; hi: right
            while hi - lo > 1:
                mid = (lo + hi) // 2
                record = StepRecord(kinds, mid)
                if fixed(record):
                    hi, at_hi = mid, record
                else:
                    lo = mid
            step = at_hi.in_kinds()[hi - 1]
            return UndoFinding(step, fixed(StepRecord(keys=frozenset({step.key}))), replays), ""
        return None, f"undoing every ShapeEnv step ({replays} replays) leaves the call wrong"
    finally:
        sympy.core.cache.clear_cache()   # no expression built under a record outlives the bisection


def _replay(frame: Frame, replay: tuple[tuple, dict], call: tuple[tuple, dict], record: StepRecord) -> Any:
    """Trace the served entry's sizes under `record` (eager backend), then run the call through it."""
    run = probe(frame, resolve("eager"), history=frame.cache.history)
    sympy.core.cache.clear_cache()   # a cached construction would skip its rewrite step
    with settings.patch(translation_validation=False, check_hints=False):   # as pdyn runs by default
        with steps.recording(record):
            outcome(run, *replay)
        return outcome(run, *call)


def shape_rule_at_call(frame: Frame, args: tuple, kwargs: dict) -> ValidationFailure | None:
    """The call traced at its own sizes with the hint check on: a shape rule whose size, at these
    sizes, is not what the op produced."""
    run = probe(frame, resolve("eager"), history=frame.cache.history)
    try:
        with settings.patch(check_hints=True, translation_validation=False):
            run(clone(args), clone(kwargs))
    except ValidationFailure as e:
        return e
    except Exception:  # noqa: BLE001  # the user's own error replays too: no rule named
        pass
    return None


# -- the served entry's arguments -----------------------------------------------------------------


def replay_arguments(fn: Callable[..., Any], args: tuple, kwargs: dict,
                     sizes: Mapping[SizeSource, int]) -> tuple[tuple, dict]:
    """`args` and `kwargs` with every size in `sizes` set to its value there: a tensor is rebuilt
    with those sizes (its own values repeated), an int argument replaced."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    L = dict(bound.arguments)
    by_base: dict[Source, dict[int | None, int]] = {}
    for origin, value in sizes.items():
        by_base.setdefault(origin.base, {})[origin.dim] = value
    for base, dims in by_base.items():
        L = _replaced(L, base, lambda v, dims=dims: _resized(v, dims))
    for name, value in L.items():
        bound.arguments[name] = value
    return bound.args, bound.kwargs


def _replaced(L: dict[str, Any], source: Source, change: Callable[[Any], Any]) -> dict[str, Any]:
    if isinstance(source, LocalSource) and source.name in L:
        return {**L, source.name: change(L[source.name])}
    if isinstance(source, ItemSource):
        return _replaced(L, source.base, lambda c: _with_item(c, source.index, change))
    raise _CannotReplay(f"{source.expr()} is not an argument or an item of one")


def _with_item(container: Any, index: Any, change: Callable[[Any], Any]) -> Any:
    if isinstance(container, (list, tuple)) and type(container) in (list, tuple):
        items = list(container)
        items[index] = change(items[index])
        return type(container)(items)
    if type(container) is dict:
        return {**container, index: change(container[index])}
    raise _CannotReplay(f"a {type(container).__name__} argument")


def _resized(value: Any, dims: dict[int | None, int]) -> Any:
    if None in dims and type(value) is int:
        return dims[None]
    if not isinstance(value, torch.Tensor) or None in dims:
        raise _CannotReplay(f"a size of a {type(value).__name__}")
    shape = list(value.shape)
    for dim, size in dims.items():
        shape[dim] = size
    if shape == list(value.shape):
        return value
    flat = value.detach().reshape(-1)
    n = math.prod(shape)
    if flat.numel() == 0:
        out = torch.zeros(shape, dtype=value.dtype, device=value.device)
    else:
        out = flat.repeat(-(-n // flat.numel()))[:n].reshape(shape).clone()
    return out.requires_grad_(value.requires_grad) if value.is_leaf else out
