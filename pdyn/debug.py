"""`pdyn.debug.bisect`: for a call whose optimized result differs from eager, name what is wrong.

1. The entry that served the call: a fact its trace relied on that is false for this call's sizes
   is a guard the guard set lacks (a frontend fault in the guards).
2. The call traced afresh under translation validation (with z3 installed): z3 names the first
   invalid symbolic step (a simplification, a shape rule, a range refinement). A fresh trace that is
   wrong with the eager backend too, with every step valid, is a frontend fault of unknown step.
3. Otherwise the backend: each graph it compiled is run against torch, and for the wrong one a
   binary search over its nodes runs a prefix compiled and the rest with torch, naming the first
   node whose compiled prefix is wrong.
"""

from __future__ import annotations

import copy
import functools
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

from pdyn.backends import resolve
from pdyn.base.config import config as settings
from pdyn.base.errors import SourceLoc, UserError
from pdyn.hook.eval_frame import CodeCache, Frame, make_wrapper
from pdyn.shapes.shape_env import evaluate
from pdyn.shapes.validation import ValidationError

__all__ = ["BisectReport", "bisect"]


@dataclass
class BisectReport:
    """What `bisect` found. `fault`: "none", "guards", "frontend" or "backend"; `culprit`: the first
    wrong node, step or fact; `loc`: the user's line it comes from."""

    fault: str
    culprit: str
    loc: SourceLoc | None = None
    detail: str = ""
    node: torch.fx.Node | None = field(default=None, repr=False)
    error: Exception | None = field(default=None, repr=False)

    def __str__(self) -> str:
        head = {"none": "pdyn.debug.bisect: the optimized call returns what eager returns",
                "guards": "pdyn.debug.bisect: frontend fault in the guard set",
                "frontend": "pdyn.debug.bisect: frontend fault (wrong with the eager backend too)",
                "backend": "pdyn.debug.bisect: backend fault (right with the eager backend)"}[self.fault]
        lines = [head]
        if self.culprit:
            lines.append(f"  first wrong: {self.culprit}")
        if self.loc is not None:
            lines.append(self.loc.render())
        if self.detail:
            lines.append("  " + self.detail.replace("\n", "\n  "))
        return "\n".join(lines)


def bisect(optimized_fn: Any, *args: Any, **kwargs: Any) -> BisectReport:
    """Compare `optimized_fn(*args, **kwargs)` with eager and name the first wrong step or node."""
    frame, prefix = _frame_of(optimized_fn)
    call_args = (*prefix, *args)
    expected = _outcome(lambda a, k: frame.fn(*a, **k), call_args, kwargs)
    served: list[tuple[Any, dict[str, Any], dict[str, Any]]] = []
    got = _served_outcome(frame, served, lambda a, k: optimized_fn(*a[len(prefix):], **k), call_args, kwargs)
    if _same(expected, got):
        return BisectReport("none", "")
    if served:
        report = _check_facts(*served[0])
        if report is not None:
            return report
    step = _validated_step(frame, call_args, kwargs)
    if step is not None:
        return step
    if not _same(expected, _outcome(_probe(frame, resolve("eager")), call_args, kwargs)):
        return BisectReport("frontend", "unknown step",
                            detail="translation validation found every symbolic step valid (or z3 is missing); "
                                   "the graph itself differs (see PDYN_LOGS=graph)")
    graphs: list[tuple[torch.fx.GraphModule, list[Any]]] = []

    def recording(gm: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        graphs.append((_copy_graph(gm), _clone(inputs)))   # a backend may rewrite `gm` in place
        return frame.backend(gm, inputs)

    _outcome(_probe(frame, recording), call_args, kwargs)
    for gm, inputs in graphs:
        report = _bisect_nodes(gm, inputs, frame.backend)
        if report is not None:
            return report
    return BisectReport("backend", "no single graph differs from torch on its own",
                        detail="each compiled graph matches torch on this call's inputs; the fault is between graphs")


# -- calls ----------------------------------------------------------------------------------------


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


def _probe(frame: Frame, backend: Callable[..., Any], dynamic: bool | None = None) -> Callable[..., Any]:
    """`frame`'s function optimized afresh with `backend`, in a cache of its own."""
    dynamic = frame.dynamic if dynamic is None else dynamic
    wrapper = make_wrapper(Frame(frame.fn, backend, settings, frame.fullgraph, CodeCache(frame.code), dynamic))
    return lambda a, k: wrapper(*a, **k)


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value if isinstance(value, (torch.nn.Module, types.FunctionType)) else copy.copy(value)


def _outcome(call: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, Any]:
    torch.manual_seed(0)
    try:
        return "value", call(_clone(args), _clone(kwargs))
    except Exception as e:  # noqa: BLE001  # the exception is what is compared
        return "raised", type(e)


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
        return _outcome(call, args, kwargs)
    finally:
        checks[:] = saved


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and len(a) == 2 and a[0] in ("value", "raised") and isinstance(b, tuple):
        return a[0] == b[0] and (a[1] is b[1] if a[0] == "raised" else _same(a[1], b[1]))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape \
                or a.dtype != b.dtype:
            return False
        return bool(torch.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)) if a.is_floating_point() \
            else bool(torch.equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


# -- frontend -------------------------------------------------------------------------------------


def _check_facts(entry: Any, L: dict[str, Any], G: dict[str, Any]) -> BisectReport | None:
    """A fact the served entry's trace relied on that is false for this call: a missing guard."""
    facts, origins = entry.extra.get("shape_facts", ([], {}))
    values: dict[Any, int] = {}
    for sym, origin in origins.items():
        try:
            values[sym] = int(origin.read(L, G))
        except Exception:  # noqa: BLE001  # a source this call cannot read: the fact is skipped
            continue
    for fact in facts:
        if not fact.expr.free_symbols <= values.keys():
            continue
        if not evaluate(fact.expr, values):
            sizes = ", ".join(f"{origins[s]} = {values[s]}" for s in sorted(fact.expr.free_symbols, key=str))
            return BisectReport("guards", f"the fact {fact.expr} ({fact.why}), which no guard checks", fact.loc,
                                detail=f"cache entry {entry.number} was traced assuming it; this call has {sizes}")
    return None


def _validated_step(frame: Frame, args: tuple, kwargs: dict) -> BisectReport | None:
    """Replay the trace under translation validation: z3 names the first invalid step (None: every
    step is valid, or z3 is missing)."""
    try:
        with settings.patch(translation_validation=True):
            for dynamic in (True, frame.dynamic):   # symbolic sizes first: z3 then checks every size
                _probe(frame, resolve("eager"), dynamic)(_clone(args), _clone(kwargs))
    except ValidationError as e:
        sizes = ", ".join(f"{k} = {v}" for k, v in e.counterexample.items())
        return BisectReport("frontend", f"{e.step}: {e.before} -> {e.after}", e.loc,
                            detail=f"sizes where it is wrong: {sizes}", error=e)
    except Exception:  # noqa: BLE001  # z3 missing, or the user's own error replays too: no step named
        pass
    return None


# -- backend --------------------------------------------------------------------------------------


def _bisect_nodes(gm: torch.fx.GraphModule, inputs: list[Any], backend: Callable[..., Any]) -> BisectReport | None:
    """The first node whose compiled prefix (the rest run by torch) gives a wrong graph output; None
    where the compiled graph agrees with torch."""
    reference = _run(lambda xs: gm(*xs), inputs)
    ops = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]

    def wrong(k: int) -> bool:
        return not _same(reference, _run(lambda xs: _prefix_run(gm, ops[:k], backend, xs), inputs))

    if not wrong(len(ops)):
        return None
    lo, hi = 0, len(ops)   # wrong(lo) is False (all torch), wrong(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wrong(mid):
            hi = mid
        else:
            lo = mid
    node = ops[hi - 1]
    target = getattr(node.target, "__name__", str(node.target))
    return BisectReport("backend", f"node {node.name} ({target}) of the graph", node.meta.get("loc"),
                        detail=f"the compiled graph is right through {ops[lo - 1].name if lo else 'its inputs'} "
                               f"and wrong once {node.name} is compiled too", node=node)


def _copy_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    copied = torch.fx.GraphModule(gm, graph, class_name=type(gm).__name__)
    copied.meta = dict(gm.meta)
    return copied


def _run(call: Callable[[list[Any]], Any], inputs: list[Any]) -> tuple[str, Any]:
    return _outcome(lambda a, k: call(list(a)), tuple(inputs), {})


def _prefix_run(gm: torch.fx.GraphModule, prefix: list[torch.fx.Node], backend: Callable[..., Any],
                inputs: list[Any]) -> Any:
    """Compile the graph's first nodes (their values used later are its outputs), run them, and
    run the rest with torch."""
    if not prefix:
        return gm(*inputs)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for n in placeholders + prefix:
        env[n] = graph.node_copy(n, lambda x: env[x])
    inside = set(prefix)
    live = [n for n in prefix if any(user not in inside for user in n.users)] or [prefix[-1]]
    out = graph.output(tuple(env[n] for n in live))
    out.meta = {}
    sub = torch.fx.GraphModule(gm, graph, class_name="PdynPrefix")
    sub.meta = dict(gm.meta)
    values = backend(sub, list(inputs))(*inputs)
    initial = {**dict(zip(placeholders, inputs)), **dict(zip(live, values))}
    return torch.fx.Interpreter(gm).run(*inputs, initial_env=initial)
