"""The Python side effects a trace deferred, replayed by the frame code after the graph: container
contents, attribute stores and deletes, closure cells, globals and calls, in the order the program
first made them. Every entry's frame code replays them, a graph break's before its step function.
"""

from __future__ import annotations

from pdyn.trace.frame_codegen import FrameCodegen
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.variables.containers.core import DictVariable, ListVariable
from pdyn.trace.variables.iterators.carried_iterators import replay_dict
from pdyn.trace.variables.objects.user_objects import UserObjectVariable
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
