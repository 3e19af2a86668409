"""The Python side effects a trace deferred, replayed by the frame code after the graph: container
contents, attribute stores and deletes, closure cells, globals and calls, in the order the program
first made them. Every entry's frame code replays them, a graph break's before its step function.
"""

from __future__ import annotations

from pdyn.trace.frame_codegen import FrameCodegen
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.deleted import is_deleted, replay_delete


def side_effects(output: OutputGraph, codegen: FrameCodegen) -> list[str]:
    """Statements that replay the trace's side effects in the order the program first made them;
    every value they store is computed (into e0, e1, ...) before any of them runs."""
    effects = output.ctx.side_effects
    statements: list[str] = []
    for i, (kind, key) in enumerate(effects.order):
        value = f"e{i}"
        if kind == "container":
            vt = effects.containers[key]
            statements.append(vt.replay_contents(codegen, codegen.source_expr(vt.source), value))  # type: ignore[arg-type]
        elif kind == "attr":
            obj, stored = effects.attrs[key]
            statements.append(_attr_store(codegen, obj, key[1], stored, value))
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


def _attr_store(codegen: FrameCodegen, obj: VariableTracker, name: str, stored: VariableTracker, value: str) -> str:
    """The last store (or `del`) of `obj.name`; where the object's own `__setattr__` already ran in
    the trace, the raw store."""
    raw = obj.own_setattr_ran()
    if is_deleted(stored):
        return f"{codegen.constant(replay_delete, 'replay_delete')}({codegen.reconstruct(obj)}, {name!r}, {raw})"
    codegen.lines.append(f"{value} = {codegen.reconstruct(stored)}")
    setter = codegen.constant(object.__setattr__, "object_setattr") if raw else "setattr"
    return f"{setter}({codegen.reconstruct(obj)}, {name!r}, {value})"
