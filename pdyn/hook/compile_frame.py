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

import sympy
import torch
import torch.fx

from pdyn.shapes import graph_meta
from pdyn.base import logs
from pdyn.trace.translator import InstructionTranslator, decoded
from pdyn.bytecode.transform import (JUMPED, NEXT, RAISED, ResumePoint, break_effect, cell_names, is_jump, live_locals,
                                     original_of, resume_code, resume_index, step_code, why_not_resumable)
from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.trace.frame_codegen import EagerRerun, FrameCodegen, ResumeCodegen, build_frame_function
from pdyn.bytecode.instructions import Instruction
from pdyn.guards.codegen import GuardCode, build
from pdyn.hook.break_blocks import check_handled_exception, exit_hook, plain_call
from pdyn.ops.effects import draws_random, writes_an_input, written_inputs
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.context import TraceContext
from pdyn.shapes.trace_plan import TracePlan
from pdyn.guards.shape_guards import shape_guards
from pdyn.sources import LocalSource, SizeSource
from pdyn.trace.variables.base import NULL, VariableTracker
from pdyn.trace.variables.cell import CellVariable
from pdyn.trace.variables.containers import DictVariable, IteratorVariable, ListVariable
from pdyn.trace.variables.deleted import is_deleted, replay_delete
from pdyn.trace.variables.functions import UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.generator import GeneratorVariable
from pdyn.trace.variables.symint import SymIntVariable
from pdyn.trace.variables.tensor import TensorVariable
from pdyn.trace.variables.user_objects import UserObjectVariable

graph_log = logs.topic("graph")
guards_log = logs.topic("guards")
code_log = logs.topic("output_code")
breaks_log = logs.topic("graph_breaks")
dynamic_log = logs.topic("dynamic")

Backend = Callable[[torch.fx.GraphModule, list], Callable[..., Any]]
# (function, its sizes -> this frame's sizes) -> the function under pdyn's hook
Optimize = Callable[[types.FunctionType, dict[SizeSource, SizeSource]], Any]


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


# L's entry holding the frame's closure (its cells, in co_freevars order): a resume function shares them
CLOSURE_KEY = "pdyn closure"


class _EmptyCell:
    """L's value of a free variable whose cell is empty (a local of the parent not yet assigned)."""

    def __repr__(self) -> str:
        return "<empty cell>"


EMPTY_CELL = _EmptyCell()


def closure_at_call(fn: types.FunctionType) -> bool:
    """Whether `fn` is a resume function whose cells each call passes (the frame's, not fixed ones)."""
    return getattr(fn, "_pdyn_closure_at_call", False)


def title_of(code: types.CodeType) -> str:
    return f"{code.co_name}() at {code.co_filename}:{code.co_firstlineno}"


def compile_frame(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], backend: Backend,
                  config: Config, number: int, call_original: Callable[[dict[str, Any]], Any],
                  fullgraph: bool, plan: TracePlan | None = None,
                  optimize: Optimize | None = None) -> CacheEntry:
    """`optimize(fn, sizes)` wraps a resume function (or a function a break calls) with pdyn's
    hook; `sizes` maps the sizes it receives to this frame's (see `_parent_sizes`). Without it a
    graph break runs the frame eagerly."""
    start = time.perf_counter()
    title = f"{title_of(code)}, cache entry {number}"
    output = OutputGraph(code.co_name, TraceContext(plan))
    tx = InstructionTranslator(code, {}, f_globals, output, config)
    try:
        result = _trace(tx, f_locals)
        assert result is not None
        return _finish(output, result, backend, title, number, start, call_original)
    except Unsupported as e:
        if fullgraph:
            raise
        why = "no resume function without pdyn's hook"
        if optimize is not None:
            retrace = lambda stop_at: _retrace(code, f_locals, f_globals, config, plan, stop_at)  # noqa: E731
            entry, why = _break_entry(e, code, retrace, backend, optimize, title, number, call_original)
            if entry is not None:
                entry.compile_seconds = time.perf_counter() - start
                return entry
        breaks_log.info("running %s eagerly: %s\n  (no resume function: %s)", title_of(code), e, why)
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
    for name in code.co_freevars:
        value = f_locals[name]
        tx.cells[name] = CellVariable(None if value is EMPTY_CELL else tx.wrap(value, LocalSource(name)))
        tx.cells[name].source = LocalSource(name)
    return tx.run()


def _retrace(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], config: Config,
             plan: TracePlan | None, stop_at: int) -> InstructionTranslator:
    """The same trace again, stopped before root step `stop_at` (the one that broke)."""
    tx = InstructionTranslator(code, {}, f_globals, OutputGraph(code.co_name, TraceContext(plan)), config)
    tx.stop_at = stop_at
    if _trace(tx, f_locals) is not None:
        raise Unsupported("retrace", "the trace did not reach its graph break again")
    return tx


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
            rerun = EagerRerun(call_original, title, draws, restore=written)  # inputs saved first
    inputs = [codegen.source_expr(source) for source, _ in graph_inputs]
    run, frame_source = build_frame_function(codegen, result_expr, effects, inputs, compiled, title, tail, rerun)
    guard = _build_guards(output, title)
    guards_log.info("%s", guard.source)
    code_log.info("%s", frame_source)
    return CacheEntry(guard, run, gm, frame_source, number, compile_seconds=time.perf_counter() - start,
                      pinned=pinned_origins(output), shape_decisions=list(output.ctx.shape_env.events))


def _break_entry(e: Unsupported, code: types.CodeType, retrace: Callable[[int], InstructionTranslator],
                 backend: Backend, optimize: Optimize, title: str,
                 number: int, call_original: Callable[[dict[str, Any]], Any]) -> tuple[CacheEntry | None, str]:
    """The entry for a graph break at `e`, or (None, why no resume function can be built)."""
    if e.break_at is None:
        return None, "the trace stopped before it reached an instruction of this frame"
    step, inst = e.break_at.step, e.break_at.inst
    original, index = original_of(code, inst.index)
    why = why_not_resumable(code, inst) or why_not_resumable(original, decoded(original)[index])
    if why is not None:
        return None, why
    try:
        tx = retrace(step)
        entry = _resume_entry(e, tx, inst, original, index, backend, optimize, title, number, call_original)
    except Unsupported as failed:
        return None, failed.message
    breaks_log.info("graph break in %s: %s", title_of(code), e)
    return entry, ""


def _resume_entry(e: Unsupported, tx: InstructionTranslator, inst: Instruction, original: types.CodeType,
                  index: int, backend: Backend, optimize: Optimize, title: str,
                  number: int, call_original: Callable[[dict[str, Any]], Any]) -> CacheEntry:
    """Frame code that runs the graph so far, rebuilds stack and locals, replays side effects,
    runs `inst` in a step function and returns what the resume function for its branch returns."""
    taken, after_next, after_jump = break_effect(inst)
    if taken > len(tx.stack):
        raise Unsupported("resume", f"`{inst.opname}` takes more values than the stack holds")
    check_handled_exception(tx)
    codegen = ResumeCodegen()
    cells = _cells(codegen, tx, cell_names(original))   # first: values on the stack may close over them
    kinds = tuple("null" if vt is NULL else "iter" if isinstance(vt, IteratorVariable) else "value"
                  for vt in tx.stack)
    values = [_stack_value(codegen, vt, kind) for vt, kind in zip(tx.stack, kinds)]
    if e.in_call is not None and inst.opname == "CALL":
        at = len(values) - taken + (kinds[len(values) - taken] == "null")
        values[at] = _optimized_callee(codegen, tx.stack[at], optimize) or values[at]
    split = len(values) - taken
    below_vts = [vt for vt, kind in zip(tx.stack[:split], kinds[:split]) if kind != "null"]
    branches = [(NEXT, after_next), (JUMPED, after_jump)] if is_jump(inst) else [(NEXT, after_next)]
    if inst.handler is not None:  # inside a try or with block: what the step raises goes to its handler
        branches.append((RAISED, 1))
    calls = {}
    first = _first_argument(tx, original)
    for branch, produced in branches:
        keep = inst.handler_depth if branch == RAISED else split   # the handler keeps only its depth
        live = live_locals(original, resume_index(original, index, branch))
        names = tuple(sorted(n for n in live if n in tx.locals and tx.locals[n] is not NULL and n != first))
        point = ResumePoint(original, index, branch, kinds[:keep] + ("value",) * produced, names, first)
        head = [first] if first else []
        kept = [v for v in values[:keep] if v is not None]
        args = [_local_value(codegen, tx, n) for n in head] + kept + ["*r[:-1]"] \
            + [_local_value(codegen, tx, name) for name in names]
        if branch == RAISED:  # the rare path: the handler and the rest run as Python runs them
            calls[branch] = f"return {plain_call(codegen, resume_code(point), tx.f_globals, cells, args)}"
            continue
        resume_fn = _resume_function(resume_code(point), tx.f_globals)
        resume_fn = optimize(resume_fn, _parent_sizes(tx, point.arg_names(), [_local_tracker(tx, n) for n in head] + below_vts
                                                      + [None] * produced + [_local_tracker(tx, n) for n in names]))
        if cells is not None:
            args.insert(0, cells)
        calls[branch] = f"return {codegen.constant(resume_fn, 'resume')}({', '.join(args)})"
    step_fn = types.FunctionType(step_code(tx.code, inst, kinds[split:]), tx.f_globals)
    tail = [f"r = {codegen.constant(step_fn, 'step')}({', '.join(v for v in values[split:] if v is not None)})"]
    for branch in (RAISED, JUMPED):
        if branch in calls:
            tail += [f"if r[-1] == {branch}:", f"    {calls[branch]}"]
    tail.append(calls[NEXT])
    entry = _finish(tx.output, None, backend, title, number, time.perf_counter(), call_original, codegen, tail)
    entry.break_reason = e
    return entry


def _resume_function(code: types.CodeType, f_globals: dict[str, Any]) -> types.FunctionType:
    """The function object pdyn's hook wraps; with cells, each call passes its own (see `closure_at_call`)."""
    if not code.co_freevars:
        return types.FunctionType(code, f_globals)
    fn = types.FunctionType(code, f_globals, code.co_name, None, tuple(types.CellType() for _ in code.co_freevars))
    fn._pdyn_closure_at_call = True  # type: ignore[attr-defined]
    return fn


def _first_argument(tx: InstructionTranslator, original: types.CodeType) -> str | None:
    """The method's first argument, where zero-argument super() after the break reads it (the
    resume function's first argument, as in the frame it continues)."""
    if "__class__" not in original.co_freevars or not original.co_argcount:
        return None
    first = original.co_varnames[0]
    return first if first in tx.locals and tx.locals[first] is not NULL else None


def _cells(codegen: ResumeCodegen, tx: InstructionTranslator, names: tuple[str, ...]) -> str | None:
    """The tuple of the frame's cells, in the resume function's co_freevars order: a free variable
    of the traced code is its cell in L; a cell the trace made is made here, holding what it holds."""
    if not names:
        return None
    parts = []
    for name in names:
        cell = tx.cells.get(name)
        if name in tx.code.co_freevars:
            expr = f"L[{CLOSURE_KEY!r}][{tx.code.co_freevars.index(name)}]"
        elif cell is None or cell.contents is None:
            expr = f"{codegen.constant(types.CellType, 'CellType')}()"
        else:
            expr = f"{codegen.constant(types.CellType, 'CellType')}({codegen.reconstruct(cell.contents)})"
        if cell is None:
            parts.append(expr)
        else:
            codegen.cells[id(cell)] = _bind(codegen, expr)
            parts.append(codegen.cells[id(cell)])
    return _bind(codegen, f"({', '.join(parts)},)")


def _bind(codegen: ResumeCodegen, expr: str) -> str:
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def _stack_value(codegen: ResumeCodegen, vt: VariableTracker, kind: str) -> str | None:
    """A name in the frame code bound to one stack value (None for a NULL)."""
    if kind == "null":
        return None
    if isinstance(vt, GeneratorVariable):  # its frame lives only in the trace; it holds no item list
        raise Unsupported("resume", "pdyn cannot rebuild a generator that the code after the break consumes")
    expr = codegen.remaining(vt) if kind == "iter" else exit_hook(codegen, vt) or codegen.reconstruct(vt)
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def _local_tracker(tx: InstructionTranslator, name: str) -> VariableTracker | None:
    vt = tx.locals.get(name)
    if vt is None and name in tx.cells:
        vt = tx.cells[name].contents
    return vt


def _local_value(codegen: ResumeCodegen, tx: InstructionTranslator, name: str) -> str:
    vt = _local_tracker(tx, name)
    if vt is None:
        raise Unsupported("resume", f"free variable {name!r} is unbound at the break")
    return _stack_value(codegen, vt, "value")  # type: ignore[return-value]


def _parent_sizes(tx: InstructionTranslator, arg_names: list[str],
                  trackers: list[VariableTracker | None]) -> dict[SizeSource, SizeSource]:
    """Each size a resume function receives that is one of this frame's input sizes: its own
    SizeSource (`L['y'].size(0)`) -> this frame's (`L['x'].size(0)`), for the recompile policy."""
    env = tx.ctx.shape_env
    out: dict[SizeSource, SizeSource] = {}
    for name, vt in zip(arg_names, trackers):
        sizes = list(enumerate(vt.sizes)) if isinstance(vt, TensorVariable) else \
            [(None, vt.expr)] if isinstance(vt, SymIntVariable) else []
        for dim, size in sizes:
            expr = env.simplify(size)
            if isinstance(expr, sympy.Symbol) and env.origins.get(expr):
                out[SizeSource(LocalSource(name), dim)] = env.origins[expr][0]
    return out


def _optimized_callee(codegen: ResumeCodegen, vt: VariableTracker,
                      optimize: Optimize) -> str | None:
    """The function a break inside an inlined call calls, optimized on its own; None to call it as is."""
    method_of = None
    if isinstance(vt, UserMethodVariable):
        method_of, vt = vt.obj, vt.fn
    if not isinstance(vt, UserFunctionVariable) or not isinstance(vt.value, types.FunctionType):
        return None
    expr = codegen.constant(optimize(vt.value, {}), "callee")
    if method_of is not None:
        expr = f"{codegen.constant(types.MethodType, 'MethodType')}({expr}, {codegen.reconstruct(method_of)})"
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def _build_guards(output: OutputGraph, title: str) -> GuardCode:
    """The trace's guards, then the size guards its ShapeEnv implies (symbols bound once)."""
    for guard in shape_guards(output.ctx.shape_env):
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
                statements += [f"{target}.clear()", f"{target}.update({value})"]
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
        elif kind == "call":
            fn, args, kwargs = effects.calls[key]
            parts = [codegen.reconstruct(a) for a in args] + [f"{k}={codegen.reconstruct(v)}" for k, v in kwargs.items()]
            statements.append(f"{codegen.reconstruct(fn)}({', '.join(parts)})")
        else:
            codegen.lines.append(f"{value} = {codegen.reconstruct(effects.globals[key])}")
            statements.append(f"G[{key!r}] = {value}")
    return statements


logging.getLogger("pdyn").addHandler(logging.NullHandler())
