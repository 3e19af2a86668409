"""One cache miss, end to end: trace the frame, build its guards, compile its graph with the
backend, generate the frame code, and return the CacheEntry that eval_frame appends.

An `Unsupported` construct is a graph break: the trace runs again up to the instruction that broke,
and the entry runs the graph so far, that instruction for real, then a resume function for the rest.
Where no resume function can be built, the entry runs the frame eagerly under the guards gathered up
to that point (so the same inputs do not trace again); user exceptions propagate to the caller.
"""

from __future__ import annotations

import logging
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

from pdyn.base import logs
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.guards.codegen import GuardCode, build
from pdyn.guards.guard_validation import validate_guards
from pdyn.guards.shape_guards import shape_guards
from pdyn.ops.effects import draws_random, writes_an_input, writes_under_grad, written_inputs
from pdyn.shapes import graph_meta, validation
from pdyn.shapes.trace_plan import TracePlan
from pdyn.sources import SizeSource
from pdyn.trace.breaks.resume import Optimize, break_frame_code, closure_at_call
from pdyn.trace.frame_codegen import EagerRerun, FrameCodegen, build_frame_function
from pdyn.trace.frame_effects import side_effects
from pdyn.trace.frame_trace import CLOSURE_KEY, EMPTY_CELL, new_output_graph, title_of, trace_frame
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.restart import MAX_RESTARTS, CompilingSite, RestartTrace, force_break, keep_true, try_false

__all__ = ["CLOSURE_KEY", "EMPTY_CELL", "CacheEntry", "closure_at_call", "compile_frame", "title_of"]

graph_log = logs.topic("graph")
guards_log = logs.topic("guards")
code_log = logs.topic("output_code")
breaks_log = logs.topic("graph_breaks")
dynamic_log = logs.topic("dynamic")

Backend = Callable[[torch.fx.GraphModule, list], Callable[..., Any]]


@dataclass
class CacheEntry:
    """A compiled frame: `guard.check(L, G) is None` means `run(L, G)` is correct for this call."""

    guard: GuardCode
    run: Callable[[dict[str, Any], dict[str, Any]], Any]
    graph_module: torch.fx.GraphModule | None
    frame_source: str
    number: int
    eager_reason: Unsupported | None = None
    break_reason: Unsupported | None = None     # the graph break this entry's code resumes after
    compile_seconds: float = 0.0
    pinned: dict[SizeSource, tuple[int, bool]] = field(default_factory=dict)   # sizes specialized, for the policy
    shape_decisions: list[str] = field(default_factory=list)   # specializations and assumed equalities
    extra: dict[str, Any] = field(default_factory=dict)


def compile_frame(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], backend: Backend,
                  config: Config, number: int, call_original: Callable[[dict[str, Any]], Any],
                  fullgraph: bool, plan: TracePlan | None = None,
                  optimize: Optimize | None = None) -> CacheEntry:
    """`optimize(fn, sizes)` wraps a resume function (or a function a break calls) with pdyn's
    hook; `sizes` maps the sizes it receives to this frame's (see `_parent_sizes`). Without it a
    graph break runs the frame eagerly."""
    start = time.perf_counter()
    title = f"{title_of(code)}, cache entry {number}"
    compiling_true: _BrokenTrace | None = None   # the trace before an is_compiling() site answered False
    for restarts in range(MAX_RESTARTS + 1):
        output = new_output_graph(code, plan, config)
        tx = InstructionTranslator(code, {}, f_globals, output, config)
        try:
            try:
                result = trace_frame(tx, f_locals)
                assert result is not None
                return _finish(output, result, backend, title, number, start, call_original)
            except Unsupported as e:
                if fullgraph:
                    raise
                site = try_false(output.ctx.compiling_sites) if compiling_true is None else None
                if site is not None and restarts < MAX_RESTARTS:
                    compiling_true = _BrokenTrace(e, output, site)
                    continue
                if compiling_true is not None and not compiling_true.done \
                        and _progress(e) <= _progress(compiling_true.e):
                    keep_true(compiling_true.site)   # False got no further: True's trace
                    e, output = compiling_true.e, compiling_true.output
                return _break_or_eager(e, output, code, f_locals, f_globals, backend, config, number, call_original,
                                       plan, optimize, title, start)
        except RestartTrace as restart:   # a later break needs a value made for real: break where it is made
            if fullgraph:
                raise Unsupported("restart", restart.reason) from None
            if compiling_true is not None and not compiling_true.done:   # the trial with is_compiling() False
                keep_true(compiling_true.site)   # leaves nothing behind: True's trace again, as without a trial
                compiling_true.done = True
                continue
            if restarts == MAX_RESTARTS or not force_break(restart):
                e = Unsupported("restart", f"{restart.reason}, and the trace cannot break there "
                                f"({'too many restarts' if restarts == MAX_RESTARTS else 'it already does'})")
                return _eager_entry(e, output, code, title, number, start, call_original, str(e))
    raise AssertionError("unreachable")


@dataclass
class _BrokenTrace:
    e: Unsupported
    output: OutputGraph
    site: CompilingSite
    done: bool = False   # the trial ended in a restart: True kept, no comparison


def _progress(e: Unsupported) -> int:
    """How far the frame's own code got before the break: its instructions traced."""
    return e.break_at.step if e.break_at is not None else 0


def _break_or_eager(e: Unsupported, output: OutputGraph, code: types.CodeType, f_locals: dict[str, Any],
                    f_globals: dict[str, Any], backend: Backend, config: Config, number: int,
                    call_original: Callable[[dict[str, Any]], Any], plan: TracePlan | None,
                    optimize: Optimize | None, title: str, start: float) -> CacheEntry:
    """The entry of a trace that broke at `e`: the graph so far and resume functions, else eager."""
    why = "no resume function without pdyn's hook"
    if optimize is not None:
        try:
            broken = break_frame_code(e, code, f_locals, f_globals, config, plan, optimize)
            entry = _finish(broken.output, None, backend, title, number, time.perf_counter(), call_original,
                            broken.codegen, broken.tail)
        except Unsupported as failed:
            why = failed.message
        else:
            breaks_log.info("graph break in %s: %s", title_of(code), e)
            entry.break_reason = e
            entry.compile_seconds = time.perf_counter() - start
            return entry
    return _eager_entry(e, output, code, title, number, start, call_original, why)


def _eager_entry(e: Unsupported, output: OutputGraph, code: types.CodeType | None, title: str, number: int,
                 start: float, call_original: Callable[[dict[str, Any]], Any], why: str) -> CacheEntry:
    """The frame runs eagerly under the guards gathered up to the break (the same inputs do not trace again)."""
    breaks_log.info("running %s eagerly: %s\n  (no resume function: %s)", title if code is None else title_of(code),
                    e, why)
    guard = _build_guards(output, title)
    return CacheEntry(guard, lambda L, G: call_original(L), None, "# runs the original function eagerly\n",
                      number, eager_reason=e, compile_seconds=time.perf_counter() - start,
                      pinned=pinned_origins(output), shape_decisions=list(output.ctx.shape_env.events))


def _finish(output: OutputGraph, result: VariableTracker | None, backend: Backend, title: str, number: int,
            start: float, call_original: Callable[[dict[str, Any]], Any], codegen: FrameCodegen | None = None,
            tail: list[str] | None = None) -> CacheEntry:
    """The entry for a finished trace (`result` is the frame's return value), or with `tail` for a
    trace that stopped at a graph break (`codegen` then already holds the stack and locals)."""
    codegen = codegen or FrameCodegen()
    effects = side_effects(output, codegen)
    result_expr = codegen.reconstruct(result) if result is not None else ""
    graph = output.graph
    graph_inputs = output.ordered_inputs()
    has_ops = any(n.op not in ("placeholder", "output") for n in graph.nodes)
    compiled = gm = rerun = None
    if has_ops:
        graph.output(tuple(codegen.outputs))
        gm = torch.fx.GraphModule(torch.nn.Module(), graph, class_name="PdynGraph")
        graph_log.info("graph of %s:\n%s", title, gm.print_readable(print_output=False))
        graph_meta.finish(gm, output.ctx.shape_env, [source for source, _ in graph_inputs])
        compiled = backend(gm, [value for _, value in graph_inputs])
        for assumption in getattr(compiled, "assumptions", ()):  # what the backend assumed: guarded
            output.ctx.add_guard(assumption)
        draws = any(draws_random(node) for node in graph.nodes)
        if not writes_an_input(graph):
            rerun = EagerRerun(call_original, title, draws)
        elif effects and (written := written_inputs(graph)) is not None:
            if writes_under_grad(graph, torch.is_grad_enabled()):  # a rerun would record them twice
                return _eager_entry(Unsupported("autograd_write", "pdyn cannot rerun a graph that writes a "
                                                "tensor autograd tracks, where Python side effects wait "
                                                "after it"), output, None, title, number, start,
                                    call_original, "the graph's writes cannot be undone")
            rerun = EagerRerun(call_original, title, draws, restore=written)  # inputs saved first
    inputs = codegen.input_reads([source for source, _ in graph_inputs])
    run, frame_source = build_frame_function(codegen, result_expr, effects, inputs, compiled, title, tail, rerun)
    guard = _build_guards(output, title)
    guards_log.info("%s", guard.source)
    code_log.info("%s", frame_source)
    return CacheEntry(guard, run, gm, frame_source, number, compile_seconds=time.perf_counter() - start,
                      pinned=pinned_origins(output), shape_decisions=list(output.ctx.shape_env.events),
                      extra={"shape_facts": validation.trace_facts(output.ctx.shape_env),  # for pdyn.debug.bisect
                             "compiled": compiled})   # for the compile record (PDYN_TRACE_DIR)


def _build_guards(output: OutputGraph, title: str) -> GuardCode:
    """The trace's guards, then the size guards its ShapeEnv implies (symbols bound once)."""
    guards = shape_guards(output.ctx.shape_env)
    if output.ctx.shape_env.validator is not None:
        validate_guards(output.ctx.shape_env, guards)
    for guard in guards + output.ctx.distinct_object_guards():
        output.ctx.add_guard(guard)
    for event in output.ctx.shape_env.events:
        dynamic_log.info("%s: %s", title, event)
    return build(output.ctx.guards, title)


def pinned_origins(output: OutputGraph) -> dict[SizeSource, tuple[int, bool]]:
    """Each read dim (or int input) the trace specialized, with its value and whether a value read
    (not an equality that held) pinned it: the recompile policy's history."""
    env = output.ctx.shape_env
    return {origin: (spec.value, spec.by_value_read)
            for sym, spec in env.specialized.items() for origin in env.origins[sym]}


logging.getLogger("pdyn").addHandler(logging.NullHandler())
