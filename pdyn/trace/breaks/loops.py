"""A graph break inside a loop with nothing captured before it (a stack of layers, each breaking in
its `forward`): as torch.compile does, the frame runs without a graph rather than compiling resume
functions for the loop, and the calls it makes still reach pdyn, so the callee's code (one entry
for every layer of one structure) is what compiles. `check_loop_skip` decides; `Router` is what each
call site of the frame's routed code (`pdyn.bytecode.routed`) calls its callable through.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from pdyn.base.errors import SkipFrame, Unsupported
from pdyn.base.untraced import untraced
from pdyn.bytecode.instructions import Instruction
from pdyn.bytecode.routed import routed_code
from pdyn.bytecode.transform import decode
from pdyn.trace.breaks.callees import module_call, optimizable
from pdyn.trace.translator import InstructionTranslator

_LOOP_JUMPS = ("JUMP", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE")


def loop_around(code: types.CodeType, inst: Instruction) -> tuple[int, int] | None:
    """The raw positions (`Instruction.raw_pos`) of the first and last instruction of the outermost
    loop whose body holds `inst` (a jump at or after it goes back to or before it), or None."""
    insts = decode(code)
    back = [i for i in insts[inst.index:] if i.opname in _LOOP_JUMPS and i.target is not None
            and i.target <= inst.index]
    if not back:
        return None
    return insts[min(i.target for i in back)].raw_pos, max(i.raw_pos for i in back)   # type: ignore[type-var]


def check_loop_skip(e: Unsupported, code: types.CodeType, inst: Instruction, tx: InstructionTranslator) -> None:
    """Raise `SkipFrame` where the break at `inst` (the trace `tx` stopped before it) is a call whose
    callee broke, inside a loop, with no tensor work captured before it: the frame then runs as it
    is, its calls routed, and a resume function per loop position or exit is never compiled."""
    if e.in_call is None or inst.opname not in ("CALL", "CALL_FUNCTION_EX") or inst.expanded:
        return
    loop = loop_around(code, inst)
    if loop is None:
        return
    if any(node.op not in ("placeholder", "output") for node in tx.output.graph.nodes):
        return
    raise SkipFrame(e, inst.raw_pos, loop)


Optimize = Callable[..., Any]


class Router:
    """What a call of a frame that runs without a graph calls instead of its callable: an nn.Module
    call with the code its `__call__` runs optimized (`ModuleCall`: hooks and a patched `forward`
    honoured on each call), and at the call whose callee broke, a function or bound method optimized
    too (guarded by its code; each call's own closure and defaults). Anything else is called as it
    is. `optimize(fn, at_call=)` wraps a function with pdyn's hook; one wrapper per function."""

    def __init__(self, optimize: Optimize):
        self._optimize = optimize
        self._wrappers: dict[tuple[Any, bool], tuple[dict[str, Any], Any]] = {}

    def _optimized(self, fn: types.FunctionType, at_call: bool = False) -> Any:
        """`fn` under pdyn's hook, made once per function (per code where the wrapper takes the
        function object at each call) and its globals."""
        key = (fn.__code__ if at_call else fn, at_call)
        made = self._wrappers.get(key)
        if made is None or made[0] is not fn.__globals__:
            made = self._wrappers[key] = (fn.__globals__, self._optimize(fn, at_call=at_call))
        return made[1]

    def modules(self, obj: Any) -> Any:
        """`obj` routed where it is an nn.Module (every call site)."""
        if not isinstance(obj, torch.nn.Module) or untraced(type(obj).forward):
            return obj
        return module_call(obj, self._optimized) or obj

    def callees(self, obj: Any) -> Any:
        """`obj` routed where it is an nn.Module, a function or a bound method (the breaking call site)."""
        if isinstance(obj, torch.nn.Module):
            return self.modules(obj)
        if untraced(obj) is not None:
            return obj
        if isinstance(obj, types.FunctionType) and optimizable(obj):
            return functools.partial(self._optimized(obj, at_call=True), obj)
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType) \
                and optimizable(obj.__func__):
            return types.MethodType(functools.partial(self._optimized(obj.__func__, at_call=True), obj.__func__),
                                    obj.__self__)
        return obj


def routed_function(fn: types.FunctionType, skip: SkipFrame, optimize: Optimize) -> types.FunctionType:
    """`fn` with its code's call sites routed (`pdyn.bytecode.routed`): the call whose callee broke
    through `Router.callees`, the other calls in the loop around it through `Router.modules`; calls
    outside the loop (an embedding before it, a head after it) run as they are."""
    router = Router(optimize)
    first, last = skip.loop

    def router_at(pos: int) -> Callable[[Any], Any] | None:
        return router.callees if pos == skip.at else router.modules if first <= pos <= last else None
    code, _ = routed_code(fn.__code__, router_at)
    return types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
