"""`pdyn.debug.bisect`: for a call whose optimized result differs from eager, name what is wrong.

1. The frontend (the entry that served the call): its trace is replayed with ShapeEnv steps undone
   (debug/undo.py) until the one step whose undoing makes the call right is found; a fact that
   trace relied on which is false for this call's sizes is a guard the guard set lacks; a shape
   rule that is wrong at the call's sizes is named by the hint check. With z3 installed, the call
   is also traced under translation validation, and what z3 names is reported beside it.
2. Otherwise the backend: each graph it compiled is run against torch, and for the wrong one a
   binary search over its nodes (debug/nodes.py) names the first node whose compiled prefix is wrong.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch
import torch.fx

from pdyn.backends import resolve
from pdyn.base.config import config as settings
from pdyn.base.errors import UserError
from pdyn.debug.calls import clone, outcome, probe, same
from pdyn.debug.nodes import bisect_nodes, copy_graph
from pdyn.debug.report import BisectReport
from pdyn.debug.undo import shape_rule_at_call, undo_bisect
from pdyn.hook.eval_frame import Frame
from pdyn.shapes.shape_env import evaluate
from pdyn.shapes.validation import ValidationError, require_z3

__all__ = ["BisectReport", "bisect"]


def bisect(optimized_fn: Any, *args: Any, **kwargs: Any) -> BisectReport:
    """Compare `optimized_fn(*args, **kwargs)` with eager and name the first wrong step or node."""
    frame, prefix = _frame_of(optimized_fn)
    call_args = (*prefix, *args)
    expected = outcome(lambda a, k: frame.fn(*a, **k), call_args, kwargs)
    served: list[tuple[Any, dict[str, Any], dict[str, Any]]] = []
    got = _served_outcome(frame, served, lambda a, k: optimized_fn(*a[len(prefix):], **k), call_args, kwargs)
    if same(expected, got):
        return BisectReport("none", "")
    report = _frontend(frame, served[0] if served else None, call_args, kwargs, expected)
    if report is not None:
        return report
    if not same(expected, outcome(probe(frame, resolve("eager")), call_args, kwargs)):
        return BisectReport("frontend", "unknown step",
                            detail="no ShapeEnv step, guard or shape rule explains it, and translation validation "
                                   "found every symbolic step valid (or z3 is missing); the graph itself differs "
                                   "(see PDYN_LOGS=graph)")
    graphs: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def recording(gm: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        graphs.append((copy_graph(gm), clone(inputs)))   # a backend may rewrite `gm` in place
        return frame.backend(gm, inputs)

    outcome(probe(frame, recording), call_args, kwargs)
    for gm, inputs in graphs:
        report = bisect_nodes(gm, inputs, frame.backend)
        if report is not None:
            return report
    return BisectReport("backend", "no single graph differs from torch on its own",
                        detail="each compiled graph matches torch on this call's inputs; the fault is between graphs")


def _frame_of(fn: Any) -> tuple[Frame, tuple[Any, ...]]:
    """The Frame behind what `pdyn.optimize` returned, and the arguments bound before the user's."""
    prefix: tuple[Any, ...] = ()
    if isinstance(fn, torch.nn.Module):
        fn = fn.forward
    if isinstance(fn, functools.partial):
        raise UserError("pdyn.debug.bisect: pass the partial's function and all its arguments")
    if isinstance(fn, types.MethodType):
        fn, prefix = fn.__func__, (fn.__self__,)
    frame = getattr(fn, "_pdyn_frame", None)
    if frame is None:
        raise UserError(f"{fn!r} is not optimized by pdyn; pass what pdyn.optimize returned")
    return frame, prefix


def _served_outcome(frame: Frame, served: list, call: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, Any]:
    """The optimized call's outcome, noting the entry whose guard held (with its L and G)."""
    checks = frame.cache.checks
    saved = list(checks)

    def noting(entry: Any, run: Callable[..., Any]) -> Callable[..., Any]:
        def run_noted(L: dict[str, Any], G: dict[str, Any]) -> Any:
            served.append((entry, L, G))
            return run(L, G)
        return run_noted

    checks[:] = [(check, noting(entry, run)) for entry, (check, run) in zip(frame.cache.entries, saved)]
    try:
        return outcome(call, args, kwargs)
    finally:
        checks[:] = saved


# -- frontend -------------------------------------------------------------------------------------


def _frontend(frame: Frame, served: tuple | None, args: tuple, kwargs: dict, expected: Any) -> BisectReport | None:
    """The step-undo bisection, the served entry's facts, the hint check and z3, combined: the
    missing guard or wrong shape rule where one is named, else the step, else what z3 names."""
    facts = served[0].extra.get("shape_facts") if served is not None else None
    found, why_not = undo_bisect(frame, facts.sizes, args, kwargs, expected) if facts is not None \
        else (None, "no compiled entry served the call")
    validated = _validated_step(frame, args, kwargs)
    report = _check_facts(*served) if served is not None else None
    if report is None and (found is None or found.step.kind == "guard"):
        rule = shape_rule_at_call(frame, args, kwargs)
        if rule is not None:
            report = BisectReport("frontend", str(rule), rule.loc, error=rule,
                                  detail="a shape rule is not a ShapeEnv step: no step is wrong, the size it "
                                         "computes is")
    if report is None and found is not None:
        step = found.step
        report = BisectReport("guards" if step.kind == "guard" else "frontend",
                              f"the {step.kind} {step.before} -> {step.after}", step.loc)
    if report is None:
        if validated is not None:
            validated.detail += f"\nno step found by undoing: {why_not}"
        return validated
    if found is not None:
        report.step, report.step_alone = found.step, found.alone
    elif why_not:
        report.detail += ("\n" if report.detail else "") + f"no step found by undoing: {why_not}"
    if validated is not None:
        report.z3 = validated
    return report


def _check_facts(entry: Any, L: dict[str, Any], G: dict[str, Any]) -> BisectReport | None:
    """A fact the served entry's trace relied on that is false for this call: a missing guard."""
    record = entry.extra.get("shape_facts")
    if record is None:
        return None
    values: dict[Any, int] = {}
    for sym, origin in record.origins.items():
        try:
            values[sym] = int(origin.read(L, G))
        except Exception:  # noqa: BLE001  # a source this call cannot read: the fact is skipped
            continue
    for fact in record.facts:
        if not fact.expr.free_symbols <= values.keys():
            continue
        if not evaluate(fact.expr, values):
            sizes = ", ".join(f"{record.origins[s]} = {values[s]}" for s in sorted(fact.expr.free_symbols, key=str))
            return BisectReport("guards", f"the fact {fact.expr} ({fact.why}), which no guard checks", fact.loc,
                                detail=f"cache entry {entry.number} was traced assuming it; this call has {sizes}")
    return None


def _validated_step(frame: Frame, args: tuple, kwargs: dict) -> BisectReport | None:
    """Replay the trace under translation validation: z3 names the first invalid step (None: every
    step is valid, or z3 is missing)."""
    try:
        require_z3()
    except UserError:
        return None   # the step-undo bisection works without it
    try:
        with settings.patch(translation_validation=True):
            for dynamic in (True, frame.dynamic):   # symbolic sizes first: z3 then checks every size
                probe(frame, resolve("eager"), dynamic)(clone(args), clone(kwargs))
    except ValidationError as e:
        sizes = ", ".join(f"{k} = {v}" for k, v in e.counterexample.items())
        return BisectReport("frontend", f"{e.step}: {e.before} -> {e.after}", e.loc,
                            detail=f"sizes where it is wrong: {sizes}", error=e)
    except Exception:  # noqa: BLE001  # z3 missing, or the user's own error replays too: no step named
        pass
    return None
