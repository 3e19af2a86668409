"""`nn.Module.__call__` called as a function: `nn.Module.__call__(m, x)`, or a module's bound
`__call__` (`model_forward = model.__call__`, kept in a local across a graph break as transformers'
generate() does) runs the module's own call, hooks and all, as `m(x)` does; its Python body
(`_wrapped_call_impl`, `_call_impl`) is not inlined."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.objects.nn_module import NNModuleVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer


@rule(torch.nn.Module.__call__)
def _module_call(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    if not args or not isinstance(args[0], NNModuleVariable):
        raise Unsupported("module_call", f"pdyn cannot trace nn.Module.__call__ on {args[:1]}", loc=tx.loc())
    return args[0].call_as_module(tx, args[1:], kwargs)
