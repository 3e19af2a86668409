"""What crosses a graph break: each stack value's kind (`VariableTracker.crossing`), the names the
frame code binds to the stack values, live locals and cells it hands the step and resume functions,
and the sizes they carry (`VariableTracker.sizes_held`) mapped to this frame's, so a resume function
inherits its parent's size history (the recompile policy reads it).
"""

from __future__ import annotations

import types
from typing import Any

import sympy

from pdyn.base.errors import Unsupported
from pdyn.sources import LocalSource, SizeSource, Source
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.trace.frame_trace import CLOSURE_KEY
from pdyn.trace.translator import InstructionTranslator
from pdyn.trace.variables.base import VariableTracker

SIZES_DEPTH = 4   # how deep into containers and objects the sizes a function receives are looked for


def crossing_kinds(tx: InstructionTranslator) -> tuple[str, ...]:
    """How each stack value crosses the break ("null", "exc", "iter" or "value"): an iterator goes as
    a real one over the live containers (the prologue's GET_ITER keeps it), unless a live local holds
    it too (then it is that local's object)."""
    held = {id(vt) for vt in tx.locals.values()} | {id(c.contents) for c in tx.cells.values()}
    return tuple(vt.crossing(id(vt) in held) for vt in tx.stack)


def cells_tuple(codegen: ResumeCodegen, tx: InstructionTranslator, names: tuple[str, ...]) -> str | None:
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
            codegen.cells[id(cell)] = bind(codegen, expr)
            parts.append(codegen.cells[id(cell)])
    return bind(codegen, f"({', '.join(parts)},)")


def bind(codegen: ResumeCodegen, expr: str) -> str:
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def stack_value(codegen: ResumeCodegen, vt: VariableTracker, kind: str) -> str | None:
    """A name in the frame code bound to one stack value (None for a NULL)."""
    if kind == "null":
        return None
    if kind == "iter":
        expr = codegen.iterator(vt)  # over the live containers: a change after the break shows, as in Python
    else:
        expr = vt.rebuilt_at_break(codegen)   # a with block's `__exit__` as its manager says
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def local_tracker(tx: InstructionTranslator, name: str) -> VariableTracker | None:
    vt = tx.locals.get(name)
    if vt is None and name in tx.cells:
        vt = tx.cells[name].contents
    return vt


def local_value(codegen: ResumeCodegen, tx: InstructionTranslator, name: str) -> str:
    vt = local_tracker(tx, name)
    if vt is None:
        raise Unsupported("resume", f"free variable {name!r} is unbound at the break")
    return stack_value(codegen, vt, "value")  # type: ignore[return-value]


def parent_sizes(tx: InstructionTranslator, arg_names: list[str],
                 trackers: list[VariableTracker | None]) -> dict[SizeSource, SizeSource]:
    """Each size a resume function receives that is one of this frame's input sizes: its own
    SizeSource (`L['y'].size(0)`, `L['shape'][1]`) -> this frame's (`L['x'].size(0)`), for the
    recompile policy; sizes inside tuples, lists, dicts and objects made in the trace included."""
    return origins(tx, [(LocalSource(name), vt) for name, vt in zip(arg_names, trackers)])


def origins(tx: InstructionTranslator, received: list[tuple[Source, Any]]) -> dict[SizeSource, SizeSource]:
    env = tx.ctx.shape_env
    out: dict[SizeSource, SizeSource] = {}
    for source, vt in received:
        for own, size in ([] if vt is None else vt.sizes_held(source, SIZES_DEPTH)):
            expr = env.simplify(size)
            if isinstance(expr, sympy.Symbol) and env.origins.get(expr):
                out[own] = env.origins[expr][0]
    return out
