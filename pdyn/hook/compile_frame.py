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

from pdyn.shapes import graph_meta
from pdyn.base import logs
from pdyn.trace.translator import InstructionTranslator
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.trace.frame_codegen import EagerRerun, FrameCodegen, build_frame_function
from pdyn.guards.codegen import GuardCode, build
from pdyn.hook.resume_entry import CLOSURE_KEY, EMPTY_CELL, Optimize, break_entry, closure_at_call, title_of
from pdyn.ops.effects import draws_random, writes_an_input, writes_under_grad, written_inputs
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.shapes.trace_plan import TracePlan
from pdyn.guards.guard_validation import validate_guards
from pdyn.guards.shape_guards import shape_guards
from pdyn.shapes import validation
from pdyn.sources import ItemSource, LocalSource, SizeSource
from pdyn.trace.variables.iterators.carried_iterators import replay_dict
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.cell import CellVariable, real_cell
from pdyn.trace.variables.containers.core import DictVariable, ListVariable
from pdyn.trace.variables.values.deleted import is_deleted, replay_delete
from pdyn.trace.variables.restart import MAX_RESTARTS, RestartTrace, force_break
from pdyn.trace.variables.objects.user_objects import UserObjectVariable

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
    for restarts in range(MAX_RESTARTS + 1):
        output = _output_graph(code, plan, config)
        tx = InstructionTranslator(code, {}, f_globals, output, config)
        try:
            try:
                result = _trace(tx, f_locals)
                assert result is not None
                return _finish(output, result, backend, title, number, start, call_original)
            except Unsupported as e:
                if fullgraph:
                    raise
                return _break_or_eager(e, output, code, f_locals, f_globals, backend, config, number, call_original,
                                       plan, optimize, title, start)
        except RestartTrace as restart:   # a later break needs a value made for real: break where it is made
            if fullgraph:
                raise Unsupported("restart", restart.reason) from None
            if restarts == MAX_RESTARTS or not force_break(restart):
                e = Unsupported("restart", f"{restart.reason}, and the trace cannot break there "
                                f"({'too many restarts' if restarts == MAX_RESTARTS else 'it already does'})")
                return _eager_entry(e, output, code, title, number, start, call_original, str(e))
    raise AssertionError("unreachable")


def _break_or_eager(e: Unsupported, output: OutputGraph, code: types.CodeType, f_locals: dict[str, Any],
                    f_globals: dict[str, Any], backend: Backend, config: Config, number: int,
                    call_original: Callable[[dict[str, Any]], Any], plan: TracePlan | None,
                    optimize: Optimize | None, title: str, start: float) -> CacheEntry:
    """The entry of a trace that broke at `e`: the graph so far and resume functions, else eager."""
    why = "no resume function without pdyn's hook"
    if optimize is not None:
        retrace = lambda stop_at: _retrace(code, f_locals, f_globals, config, plan, stop_at)  # noqa: E731
        finish = lambda output, codegen, tail: _finish(  # noqa: E731
            output, None, backend, title, number, time.perf_counter(), call_original, codegen, tail)
        entry, why = break_entry(e, code, retrace, finish, optimize)
        if entry is not None:
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


def _trace(tx: InstructionTranslator, f_locals: dict[str, Any]) -> VariableTracker | None:
    """Wrap the frame's locals and run the root translator (None where it stopped at `stop_at`)."""
    code = tx.code
    tx.locals = {name: tx.wrap(value, LocalSource(name)) for name, value in f_locals.items()
                 if name not in code.co_freevars and name != CLOSURE_KEY}
    tx.cells = {name: CellVariable(tx.locals.pop(name, None)) for name in code.co_cellvars}
    closure = f_locals.get(CLOSURE_KEY, ())
    for i, name in enumerate(code.co_freevars):   # the frame's real cells: stores replay through L
        tx.cells[name] = real_cell(tx, closure[i], ItemSource(LocalSource(CLOSURE_KEY), i),
                                   lambda v, name=name: tx.wrap(v, LocalSource(name)))
    return tx.run()


def _retrace(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], config: Config,
             plan: TracePlan | None, stop_at: int) -> InstructionTranslator:
    """The same trace again, stopped before root step `stop_at` (the one that broke)."""
    tx = InstructionTranslator(code, {}, f_globals, _output_graph(code, plan, config), config)
    tx.stop_at = stop_at
    if _trace(tx, f_locals) is not None:
        raise Unsupported("retrace", "the trace did not reach its graph break again")
    return tx


def _output_graph(code: types.CodeType, plan: TracePlan | None, config: Config) -> OutputGraph:
    """A new trace's graph, with translation validation and the hint check as `config` says."""
    output = OutputGraph(code.co_name, TraceContext(plan))
    output.check_hints = config.check_hints
    if config.translation_validation:
        output.ctx.shape_env.validator = validation.Validator()
    return output


def _finish(output: OutputGraph, result: VariableTracker | None, backend: Backend, title: str, number: int,
            start: float, call_original: Callable[[dict[str, Any]], Any], codegen: FrameCodegen | None = None,
            tail: list[str] | None = None) -> CacheEntry:
    """The entry for a finished trace (`result` is the frame's return value), or with `tail` for a
    trace that stopped at a graph break (`codegen` then already holds the stack and locals)."""
    codegen = codegen or FrameCodegen()
    effects = _side_effects(output, codegen)
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


def _side_effects(output: OutputGraph, codegen: FrameCodegen) -> list[str]:
    """Statements that replay the trace's side effects in the order the program first made them;
    every value they store is computed (into e0, e1, ...) before any of them runs."""
    effects = output.ctx.side_effects
    statements: list[str] = []
    for i, (kind, key) in enumerate(effects.order):
        value = f"e{i}"
        if kind == "container":
            vt = effects.containers[key]
            target = codegen.source_expr(vt.source)  # type: ignore[arg-type]
            if isinstance(vt, ListVariable):
                codegen.lines.append(f"{value} = [{', '.join(codegen.reconstruct(v) for v in vt.items)}]")
                statements.append(f"{target}[:] = {value}")
            elif isinstance(vt, DictVariable):
                items = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in vt.items.items())
                codegen.lines.append(f"{value} = {{{items}}}")
                statements.append(f"{codegen.constant(replay_dict, 'replay_dict')}({target}, {value})")
        elif kind == "attr":
            obj, stored = effects.attrs[key]
            if is_deleted(stored):  # `del obj.name` was the last change
                raw = isinstance(obj, UserObjectVariable)
                statements.append(f"{codegen.constant(replay_delete, 'replay_delete')}"
                                  f"({codegen.reconstruct(obj)}, {key[1]!r}, {raw})")
                continue
            codegen.lines.append(f"{value} = {codegen.reconstruct(stored)}")
            # a user object's own `__setattr__` already ran in the trace: replay the raw store
            setter = codegen.constant(object.__setattr__, "object_setattr") \
                if isinstance(obj, UserObjectVariable) else "setattr"
            statements.append(f"{setter}({codegen.reconstruct(obj)}, {key[1]!r}, {value})")
        elif kind == "cell":
            cell, stored = effects.cells[key]
            target = codegen.source_expr(cell.source)  # type: ignore[arg-type]
            if is_deleted(stored):  # `del x` of a closure variable was the last change
                statements.append(f"{codegen.constant(replay_delete, 'replay_delete')}({target}, 'cell_contents', True)")
                continue
            codegen.lines.append(f"{value} = {codegen.reconstruct(stored)}")
            statements.append(f"{target}.cell_contents = {value}")
        elif kind == "call":
            fn, args, kwargs = effects.calls[key]
            parts = [codegen.reconstruct(a) for a in args] + [f"{k}={codegen.reconstruct(v)}" for k, v in kwargs.items()]
            statements.append(f"{codegen.reconstruct(fn)}({', '.join(parts)})")
        else:
            codegen.lines.append(f"{value} = {codegen.reconstruct(effects.globals[key])}")
            statements.append(f"G[{key!r}] = {value}")
    return statements


logging.getLogger("pdyn").addHandler(logging.NullHandler())
