"""One cache miss, end to end: trace the frame, build its guards, compile its graph with the
backend, generate the frame code, and return the CacheEntry that eval_frame appends.

An `Unsupported` construct gives an entry that runs the frame eagerly under the guards gathered up
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

from pdyn import logs
from pdyn.bytecode_tracer import CellVariable, InstructionTranslator
from pdyn.config import Config
from pdyn.errors import Unsupported
from pdyn.frame_codegen import FrameCodegen, build_frame_function
from pdyn.guard_codegen import GuardCode, build
from pdyn.output_graph import OutputGraph
from pdyn.recompile_policy import TracePlan
from pdyn.shape_guards import shape_guards
from pdyn.sources import LocalSource
from pdyn.variables.base import VariableTracker
from pdyn.variables.builder import wrap
from pdyn.variables.containers import DictVariable, ListVariable

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
    compile_seconds: float = 0.0
    pinned: dict[str, tuple[int, bool]] = field(default_factory=dict)   # read dims/ints specialized, for the policy
    shape_decisions: list[str] = field(default_factory=list)   # specializations and assumed equalities
    extra: dict[str, Any] = field(default_factory=dict)


def title_of(code: types.CodeType) -> str:
    return f"{code.co_name}() at {code.co_filename}:{code.co_firstlineno}"


def compile_frame(code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any], backend: Backend,
                  config: Config, number: int, call_original: Callable[[dict[str, Any]], Any],
                  fullgraph: bool, plan: TracePlan | None = None) -> CacheEntry:
    start = time.perf_counter()
    title = f"{title_of(code)}, cache entry {number}"
    output = OutputGraph(code.co_name, plan)
    tx = InstructionTranslator(code, {}, f_globals, output, config)
    try:
        tx.locals = {name: wrap(tx, value, LocalSource(name)) for name, value in f_locals.items()
                     if name not in code.co_freevars}
        tx.cells = {name: CellVariable(tx.locals.pop(name, None)) for name in code.co_cellvars}
        for name in code.co_freevars:
            tx.cells[name] = CellVariable(wrap(tx, f_locals[name], LocalSource(name)))
            tx.cells[name].source = LocalSource(name)
        result = tx.run()
        return _finish(output, result, backend, title, number, start)
    except Unsupported as e:
        if fullgraph:
            raise
        breaks_log.info("running %s eagerly: %s", title_of(code), e)
        guard = _build_guards(output, title)
        return CacheEntry(guard, lambda L, G: call_original(L), None, "# runs the original function eagerly\n",
                          number, eager_reason=e, compile_seconds=time.perf_counter() - start,
                          pinned=pinned_origins(output), shape_decisions=list(output.shape_env.events))


def _finish(output: OutputGraph, result: VariableTracker, backend: Backend, title: str, number: int,
            start: float) -> CacheEntry:
    codegen = FrameCodegen()
    effects = _side_effects(output, codegen)
    result_expr = codegen.reconstruct(result)
    graph = output.graph
    graph_inputs = output.ordered_inputs()
    has_ops = any(n.op not in ("placeholder", "output") for n in graph.nodes)
    compiled = gm = None
    if has_ops:
        graph.output(tuple(codegen.outputs))
        gm = torch.fx.GraphModule(torch.nn.Module(), graph, class_name="PdynGraph")
        graph_log.info("graph of %s:\n%s", title, gm.print_readable(print_output=False))
        compiled = backend(gm, [value for _, value in graph_inputs])
    inputs = [source.expr() for source, _ in graph_inputs]
    run, frame_source = build_frame_function(codegen, result_expr, effects, inputs, compiled, title)
    guard = _build_guards(output, title)
    guards_log.info("%s", guard.source)
    code_log.info("%s", frame_source)
    return CacheEntry(guard, run, gm, frame_source, number, compile_seconds=time.perf_counter() - start,
                      pinned=pinned_origins(output), shape_decisions=list(output.shape_env.events))


def _build_guards(output: OutputGraph, title: str) -> GuardCode:
    """The trace's guards, then the size guards its ShapeEnv implies (symbols bound once)."""
    for guard in shape_guards(output.shape_env):
        output.add_guard(guard)
    for event in output.shape_env.events:
        dynamic_log.info("%s: %s", title, event)
    return build(output.guards, title)


def pinned_origins(output: OutputGraph) -> dict[str, tuple[int, bool]]:
    """Each read dim (or int input) the trace specialized, with its value and whether a value read
    (not an equality that held) pinned it: the recompile policy's history."""
    env = output.shape_env
    return {origin.expr(): (spec.value, spec.by_value_read)
            for sym, spec in env.specialized.items() for origin in env.origins[sym]}


def _side_effects(output: OutputGraph, codegen: FrameCodegen) -> list[str]:
    """Statements that replay the trace's side effects; their values are computed before any runs."""
    effects: list[str] = []
    for i, vt in enumerate(output.side_effects.containers.values()):
        target = codegen.source_expr(vt.source)  # type: ignore[arg-type]
        if isinstance(vt, ListVariable):
            codegen.lines.append(f"e{i} = [{', '.join(codegen.reconstruct(v) for v in vt.items)}]")
            effects.append(f"{target}[:] = e{i}")
        elif isinstance(vt, DictVariable):
            items = ", ".join(f"{codegen.constant(k)}: {codegen.reconstruct(v)}" for k, v in vt.items.items())
            codegen.lines.append(f"e{i} = {{{items}}}")
            effects += [f"{target}.clear()", f"{target}.update(e{i})"]
    for j, ((_, name), (obj, value)) in enumerate(output.side_effects.attrs.items()):
        codegen.lines.append(f"a{j} = {codegen.reconstruct(value)}")
        effects.append(f"setattr({codegen.reconstruct(obj)}, {name!r}, a{j})")
    for k, (name, value) in enumerate(output.side_effects.globals.items()):
        codegen.lines.append(f"g{k} = {codegen.reconstruct(value)}")
        effects.append(f"G[{name!r}] = g{k}")
    return effects


logging.getLogger("pdyn").addHandler(logging.NullHandler())
