"""A graph break's frame code: it runs the graph so far, rebuilds the stack and the live locals,
runs the breaking instruction in a step function, and calls the resume function of the branch it
took (`pdyn.bytecode.transform` builds both), optimized on its own. hook/ turns it into an entry.

A break inside an inlined call calls the callee optimized on its own instead of as it is.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Callable

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.bytecode.instructions import Instruction
from pdyn.bytecode.transform import (JUMPED, NEXT, RAISED, ResumePoint, break_effect, cell_names, is_jump, live_locals,
                                     original_of, resume_code, resume_index, step_code, why_not_resumable)
from pdyn.shapes.trace_plan import TracePlan
from pdyn.sources import SizeSource
from pdyn.trace.breaks.blocks import HandlerCodegen, handled_exceptions, handler_slots, in_handlers
from pdyn.trace.breaks.callees import call_arguments, callee_sizes, optimized_callee
from pdyn.trace.breaks.crossing import (cells_tuple, crossing_kinds, local_tracker, local_value, parent_sizes,
                                        stack_value)
from pdyn.trace.breaks.loops import check_loop_skip
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.trace.frame_trace import retrace
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.translator import InstructionTranslator, decoded
from pdyn.trace.variables.base import NULL

# (function, its sizes -> this frame's sizes) -> the function under pdyn's hook
Optimize = Callable[[types.FunctionType, dict[SizeSource, SizeSource]], Any]


@dataclass
class BreakCode:
    """A graph break's frame code, less the graph call and side effects the entry adds: the trace
    stopped at the break (its graph and guards), the codegen holding the stack and live locals,
    and the lines after the graph (the step function's call and the resume functions')."""

    output: OutputGraph
    codegen: ResumeCodegen
    tail: list[str]


def closure_at_call(fn: types.FunctionType) -> bool:
    """Whether `fn` is a resume function whose cells each call passes (the frame's, not fixed ones)."""
    return getattr(fn, "_pdyn_closure_at_call", False)


def break_frame_code(e: Unsupported, code: types.CodeType, f_locals: dict[str, Any], f_globals: dict[str, Any],
                     config: Config, plan: TracePlan | None, optimize: Optimize) -> BreakCode:
    """The frame code for a graph break at `e`: the trace runs again up to the instruction that broke,
    and the step and resume functions are built; raises `Unsupported` saying why none can be, and
    `SkipFrame` where the frame runs without a graph instead (see `pdyn.trace.breaks.loops`)."""
    if e.break_at is None:
        raise Unsupported("resume", "the trace stopped before it reached an instruction of this frame")
    step, inst = e.break_at.step, e.break_at.inst
    original, index = original_of(code, inst.index)
    why = why_not_resumable(code, inst) or why_not_resumable(original, decoded(original)[index])
    if why is not None:
        raise Unsupported("resume", why)
    tx = retrace(code, f_locals, f_globals, config, plan, step)
    check_loop_skip(e, code, inst, tx)
    return _resume_code(tx, e, inst, original, index, optimize)


def _resume_code(tx: InstructionTranslator, e: Unsupported, inst: Instruction, original: types.CodeType,
                 index: int, optimize: Optimize) -> BreakCode:
    """Frame code that runs the graph so far, rebuilds stack and locals, replays side effects,
    runs `inst` in a step function and returns what the resume function for its branch returns."""
    taken, after_next, after_jump = break_effect(inst)
    if taken > len(tx.stack):
        raise Unsupported("resume", f"`{inst.opname}` takes more values than the stack holds")
    slots = handler_slots(tx)   # the handlers the break is in, each re-entered by the resume function
    codegen = HandlerCodegen()
    handled = iter(handled_exceptions(codegen, slots))   # first: `as e` and the stack refer to them
    cells = cells_tuple(codegen, tx, cell_names(original))   # first: values on the stack may close over them
    kinds = crossing_kinds(tx)
    values = [next(handled) if kind == "exc" else stack_value(codegen, vt, kind) for vt, kind in zip(tx.stack, kinds)]
    if e.in_call is not None and inst.opname in ("CALL", "CALL_FUNCTION_EX"):
        at = len(values) - taken + (kinds[len(values) - taken] == "null")
        call_args = call_arguments(inst, tx.stack[at + 1:])
        optimize_callee = lambda fn, first=None, **at_call: optimize(  # noqa: E731
            fn, callee_sizes(tx, fn, first, call_args), **at_call)
        values[at] = optimized_callee(codegen, tx.stack[at], optimize_callee) or values[at]
    split = len(values) - taken
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
        args = [local_value(codegen, tx, n) for n in head] + kept + ["*r[:-1]"] \
            + [local_value(codegen, tx, name) for name in names]
        kept_vts = [vt for vt, kind in zip(tx.stack[:keep], kinds[:keep]) if kind != "null"]
        resume_fn = _resume_function(resume_code(point), tx.f_globals)
        received = [local_tracker(tx, n) for n in head] + kept_vts + [None] * produced \
            + [local_tracker(tx, n) for n in names]
        resume_fn = optimize(resume_fn, parent_sizes(tx, point.arg_names(), received))
        if cells is not None:
            args.insert(0, cells)
        calls[branch] = f"return {codegen.constant(resume_fn, 'resume')}({', '.join(args)})"
    step_fn = types.FunctionType(step_code(tx.code, inst, kinds[split:]), tx.f_globals)
    step = f"r = {codegen.constant(step_fn, 'step')}({', '.join(v for v in values[split:] if v is not None)})"
    tail = in_handlers([v for v, kind in zip(values, kinds) if kind == "exc"], [step])   # resume: outside them
    for branch in (RAISED, JUMPED):
        if branch in calls:
            tail += [f"if r[-1] == {branch}:", f"    {calls[branch]}"]
    tail.append(calls[NEXT])
    return BreakCode(tx.output, codegen, tail)


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
