"""A graph break's frame code: it runs the graph so far, rebuilds the stack and the live locals,
runs the breaking instruction in a step function, and calls the resume function of the branch it
took (`pdyn.bytecode.transform` builds both), optimized on its own. hook/ turns it into an entry.

A break inside an inlined call calls the callee optimized on its own instead of as it is.
"""

from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass
from typing import Any, Callable

import sympy
import torch

from pdyn.base.config import Config
from pdyn.base.errors import Unsupported
from pdyn.bytecode.instructions import Instruction
from pdyn.bytecode.transform import (JUMPED, NEXT, NOT_FRAMES, RAISED, ResumePoint, break_effect, cell_names, is_jump,
                                     live_locals, original_of, resume_code, resume_index, step_code,
                                     why_not_resumable)
from pdyn.trace.breaks.blocks import (HandlerCodegen, call_with_hooks, exit_hook, handled_exceptions, handler_slots,
                                   in_handlers)
from pdyn.sources import AttrSource, ItemSource, LocalSource, SizeSource, Source
from pdyn.trace.frame_codegen import ResumeCodegen
from pdyn.shapes.trace_plan import TracePlan
from pdyn.trace.frame_trace import CLOSURE_KEY, retrace
from pdyn.trace.output_graph import OutputGraph
from pdyn.trace.translator import InstructionTranslator, decoded
from pdyn.trace.variables.base import NULL, VariableTracker
from pdyn.trace.variables.values.constant import is_constant_value
from pdyn.trace.variables.containers.core import DictVariable, IteratorVariable, ListVariable, TupleVariable
from pdyn.trace.variables.exceptions.exc_slot import ExcInfoSlot
from pdyn.trace.variables.functions.user_functions import UserFunctionVariable, UserMethodVariable
from pdyn.trace.variables.iterators.generator import GeneratorVariable
from pdyn.trace.variables.iterators.iterator_inputs import AheadIterator
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.values.ranges import FIELDS as RANGE_FIELDS, RangeVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.tensor import TensorVariable
from pdyn.trace.variables.objects.user_objects import UserObjectVariable, mro_lookup

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
    and the step and resume functions are built; raises `Unsupported` saying why none can be."""
    if e.break_at is None:
        raise Unsupported("resume", "the trace stopped before it reached an instruction of this frame")
    step, inst = e.break_at.step, e.break_at.inst
    original, index = original_of(code, inst.index)
    why = why_not_resumable(code, inst) or why_not_resumable(original, decoded(original)[index])
    if why is not None:
        raise Unsupported("resume", why)
    tx = retrace(code, f_locals, f_globals, config, plan, step)
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
    cells = _cells(codegen, tx, cell_names(original))   # first: values on the stack may close over them
    # an iterator on the stack goes as a real one over the live containers (the prologue's GET_ITER
    # keeps it); a live local holding it too gets the same object
    held = {id(vt) for vt in tx.locals.values()} | {id(c.contents) for c in tx.cells.values()}
    kinds = tuple("null" if vt is NULL else "exc" if isinstance(vt, ExcInfoSlot) else "iter"
                  if isinstance(vt, IteratorVariable) and id(vt) not in held and vt.source is None
                  or isinstance(vt, AheadIterator) else "value" for vt in tx.stack)   # an input iterator goes as itself (a tuple's as
    # an "iter" slot too: GET_ITER keeps it, and a loop's resume of a resume is the first one's code)
    values = [next(handled) if kind == "exc" else _stack_value(codegen, vt, kind) for vt, kind in zip(tx.stack, kinds)]
    if e.in_call is not None and inst.opname in ("CALL", "CALL_FUNCTION_EX"):
        at = len(values) - taken + (kinds[len(values) - taken] == "null")
        call_args = _call_arguments(inst, tx.stack[at + 1:])
        optimize_callee = lambda fn, first=None, **at_call: optimize(  # noqa: E731
            fn, _callee_sizes(tx, fn, first, call_args), **at_call)
        values[at] = _optimized_callee(codegen, tx.stack[at], optimize_callee) or values[at]
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
        args = [_local_value(codegen, tx, n) for n in head] + kept + ["*r[:-1]"] \
            + [_local_value(codegen, tx, name) for name in names]
        kept_vts = [vt for vt, kind in zip(tx.stack[:keep], kinds[:keep]) if kind != "null"]
        resume_fn = _resume_function(resume_code(point), tx.f_globals)
        received = [_local_tracker(tx, n) for n in head] + kept_vts + [None] * produced \
            + [_local_tracker(tx, n) for n in names]
        resume_fn = optimize(resume_fn, _parent_sizes(tx, point.arg_names(), received))
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
    if isinstance(vt, GeneratorVariable):  # no item list: made again, or the trace restarts (generator.py)
        kind = "value"
    if kind == "iter":
        expr = codegen.iterator(vt)  # over the live containers: a change after the break shows, as in Python
    else:
        expr = exit_hook(codegen, vt) or codegen.reconstruct(vt)
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
    SizeSource (`L['y'].size(0)`, `L['shape'][1]`) -> this frame's (`L['x'].size(0)`), for the
    recompile policy; sizes inside tuples, lists, dicts and objects made in the trace included."""
    return _origins(tx, [(LocalSource(name), vt) for name, vt in zip(arg_names, trackers)])


def _origins(tx: InstructionTranslator, received: list[tuple[Source, Any]]) -> dict[SizeSource, SizeSource]:
    env = tx.ctx.shape_env
    out: dict[SizeSource, SizeSource] = {}
    for source, vt in received:
        for own, size in _sizes_in(vt, source, depth=4):
            expr = env.simplify(size)
            if isinstance(expr, sympy.Symbol) and env.origins.get(expr):
                out[own] = env.origins[expr][0]
    return out


def _call_arguments(inst: Instruction, rest: list[VariableTracker]) -> tuple[list[Any], dict[str, Any]] | None:
    """(positional, keyword) argument trackers of the call `inst` over the stack above the callee
    (a method's `self` first); None where they are not known one by one."""
    if inst.opname == "CALL":
        cut = len(rest) - len(inst.kw_names)
        return list(rest[:cut]), dict(zip(inst.kw_names, rest[cut:]))
    args, kwargs = rest[0], rest[1] if len(rest) > 1 else None
    if not isinstance(args, (TupleVariable, ListVariable)) or \
            not (kwargs is None or isinstance(kwargs, DictVariable) and all(type(k) is str for k in kwargs.items)):
        return None
    return list(args.items), dict(kwargs.items) if kwargs is not None else {}


def _callee_sizes(tx: InstructionTranslator, fn: types.FunctionType, first: VariableTracker | None,
                  args: tuple[list[Any], dict[str, Any]] | None) -> dict[SizeSource, SizeSource]:
    """A callee's sizes (`L['h'].size(0)`, `L['args'][0].size(1)`) -> this frame's, by binding the
    call's argument trackers to its parameters as the call will."""
    if args is None:
        return {}
    positional, keywords = args
    signature = inspect.signature(fn, follow_wrapped=False)
    try:
        bound = signature.bind(*([first] if first is not None else []), *positional, **keywords)
    except TypeError:
        return {}
    received: list[tuple[Source, Any]] = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            received += [(ItemSource(LocalSource(name), i), v) for i, v in enumerate(value)]
        elif kind is inspect.Parameter.VAR_KEYWORD:
            received += [(ItemSource(LocalSource(name), k), v) for k, v in value.items()]
        else:
            received.append((LocalSource(name), value))
    return _origins(tx, received)


def _sizes_in(vt: VariableTracker | None, source: Source, depth: int) -> list[tuple[SizeSource, Any]]:
    """(where the resume function reads it, its expression) of each size `vt` holds."""
    if isinstance(vt, TensorVariable):
        return [(SizeSource(source, dim), size) for dim, size in enumerate(vt.sizes)]
    if isinstance(vt, SymIntVariable):
        return [(SizeSource(source, None), vt.expr)]
    if depth == 0:
        return []
    parts: list[tuple[Source, VariableTracker]] = []
    if isinstance(vt, (TupleVariable, ListVariable)):
        parts = [(ItemSource(source, i), item) for i, item in enumerate(vt.items)]
    elif isinstance(vt, DictVariable):
        parts = [(ItemSource(source, key), item) for key, item in vt.items.items() if is_constant_value(key)]
    elif isinstance(vt, UserObjectVariable) and vt.is_fresh:
        parts = [(AttrSource(source, attr), item) for attr, item in vt.fields.items()]
    elif isinstance(vt, RangeVariable):  # rebuilt from its bounds: `L['r'].stop` is the parent's size
        parts = [(AttrSource(source, f), item) for f, item in zip(RANGE_FIELDS, vt.bounds)]
    return [found for part, item in parts for found in _sizes_in(item, part, depth - 1)]


def _optimized_callee(codegen: ResumeCodegen, vt: VariableTracker,
                      optimize: Callable[..., Any]) -> str | None:
    """The callable a break inside an inlined call calls instead of the callee: the same call with
    the callee's own code optimized on its own (so its code around its break is compiled); None to
    call it as it is."""
    method_of = None
    if isinstance(vt, UserMethodVariable):
        method_of, vt = vt.obj, vt.fn
    if isinstance(vt, NNModuleVariable):
        module_call = _module_call(vt.value, lambda fn: optimize(fn, vt))
        if module_call is None:
            expr = None
        elif vt.source is None:
            expr = codegen.constant(module_call, "module_call")
        else:   # the module read at run time: one entry serves every module of this structure
            kind, fn = (ModuleCall, module_call.forward) if isinstance(module_call, ModuleCall) \
                else (_bound_call, module_call.__func__)
            expr = f"{codegen.constant(kind, 'module_call')}({codegen.reconstruct(vt)}, {codegen.constant(fn, 'callee')})"
    elif isinstance(vt, UserObjectVariable) and not vt.is_fresh and vt.source is not None:
        call = mro_lookup(vt.cls, "__call__")  # `obj(...)` runs `type(obj).__call__(obj, ...)`
        if not _optimizable(call):
            return None
        method_of, expr = vt, codegen.constant(optimize(call, vt), "callee")
    elif isinstance(vt, UserFunctionVariable) and isinstance(vt.value, types.FunctionType):
        if not _optimizable(vt.value):
            return None
        if vt.source is None:  # made in the trace, or pinned by identity
            expr = codegen.constant(optimize(vt.value, method_of), "callee")
        else:  # guarded by its code, not its identity: each call runs its own closure and defaults
            wrapper = codegen.constant(optimize(vt.value, method_of, at_call=True), "callee")
            expr = f"{codegen.constant(functools.partial, 'partial')}({wrapper}, {codegen.reconstruct(vt)})"
    else:
        return None
    if expr is None:
        return None
    if method_of is not None:
        expr = f"{codegen.constant(types.MethodType, 'MethodType')}({expr}, {codegen.reconstruct(method_of)})"
    name = f"v{len(codegen.lines)}"
    codegen.lines.append(f"{name} = {expr}")
    return name


def _module_call(module: torch.nn.Module, optimize: Callable[[Any], Any]) -> Callable[..., Any] | None:
    """`module(...)` with the code its `__call__` runs optimized: a Python `__call__` of its class,
    else its class's `forward` where nn.Module's `__call__` would call only forward."""
    call = mro_lookup(type(module), "__call__")
    if call is not torch.nn.Module.__call__:
        return types.MethodType(optimize(call), module) if _optimizable(call) else None
    forward = mro_lookup(type(module), "forward")
    if not _optimizable(forward) or "forward" in module.__dict__:
        return None
    return ModuleCall(module, optimize(forward))


def _optimizable(fn: Any) -> bool:
    """A plain function pdyn's hook can wrap: not a generator or coroutine, and parameters a
    signature can spell (a comprehension's `.0` is none)."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_flags & NOT_FRAMES:
        return False
    code = fn.__code__
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) \
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return all(name.isidentifier() for name in code.co_varnames[:count])


def _bound_call(module: torch.nn.Module, call: Callable[..., Any]) -> Callable[..., Any]:
    """An optimized `__call__` of the module's class, bound to the module the frame code read."""
    return types.MethodType(call, module)


class ModuleCall:
    """Calls `module` as nn.Module's `__call__` does where it has no hooks (each call checks, as
    `_call_impl` does): straight to forward, here the optimized one; else `module(...)` itself."""

    def __init__(self, module: torch.nn.Module, forward: Callable[..., Any]):
        self.module = module
        self.forward = forward

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        m = self.module
        hooks = torch.nn.modules.module
        if m._compiled_call_impl is not None or torch._C._get_tracing_state() or "forward" in m.__dict__:
            return m(*args, **kwargs)
        if m._backward_hooks or m._backward_pre_hooks or m._forward_hooks or m._forward_pre_hooks \
                or hooks._global_backward_pre_hooks or hooks._global_backward_hooks \
                or hooks._global_forward_hooks or hooks._global_forward_pre_hooks:
            return call_with_hooks(m, types.MethodType(self.forward, m), args, kwargs)
        return self.forward(m, *args, **kwargs)
