"""ModuleSliceVariable: `seq[a:b]` of an nn.Sequential or nn.ModuleList read from the frame.

Eagerly the slice is a new container of the same class holding the same submodules
(`self.__class__(...)`): it is called (a Sequential runs its items in turn), iterated, indexed,
measured and type-checked as one, and rebuilt after the graph by slicing the original again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.module_guards import NoGlobalHooksGuard
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.functions.user_functions import UserMethodVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# the classes whose slice is traced (a subclass's __init__ runs on slicing: it is not)
SLICEABLE = (torch.nn.Sequential, torch.nn.ModuleList)


class ModuleSliceVariable(VariableTracker):
    """`parent[index]` for a slice `index`: `items` are the parent's items in the slice."""

    def __init__(self, parent: VariableTracker, index: slice, items: list[VariableTracker], cls: type):
        self.parent = parent
        self.index = index
        self.items = list(items)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        return list(self.items)

    def length(self, tx: Tracer) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def truth(self, tx: Tracer) -> bool:
        return bool(self.items)   # both classes define __len__

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        index = key.as_python_constant()
        if isinstance(index, slice):
            return ModuleSliceVariable(self, index, self.items[index], self.cls)
        if isinstance(index, int) and not isinstance(index, bool):
            if not -len(self.items) <= index < len(self.items):
                raise UserException(IndexError(f"index {index} is out of range"), catchable=True)
            return self.items[index]
        raise Unsupported("module_getitem", f"pdyn cannot index a {self.cls.__name__} slice with {index!r}",
                          loc=tx.loc())

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name == "training":
            return ConstantVariable(True)   # a new module: in training mode whatever the original's
        if name == "forward" and self.cls is torch.nn.Sequential:
            return UserMethodVariable(tx.wrap_constant(torch.nn.Sequential.forward), self)
        raise Unsupported("module_slice_attr", f"pdyn cannot read {name!r} of a {self.cls.__name__} slice",
                          loc=tx.loc())

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        """nn.Module's `__call__` of a module with no hooks of its own: global hooks would run."""
        hooks = torch.nn.modules.module
        if self.cls is not torch.nn.Sequential or hooks._global_forward_hooks or \
                hooks._global_forward_pre_hooks or hooks._global_backward_hooks or hooks._global_backward_pre_hooks:
            raise Unsupported("module_call", f"pdyn cannot trace calling a {self.cls.__name__} slice here",
                              loc=tx.loc())
        tx.ctx.add_guard(NoGlobalHooksGuard(None, loc=tx.loc()))
        return self.getattr(tx, "forward").call(tx, args, kwargs)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        return codegen.once(self, f"{codegen.reconstruct(self.parent)}[{codegen.constant(self.index, 'slice')}]")

    def __repr__(self) -> str:
        return f"ModuleSliceVariable({self.parent!r}[{self.index.start}:{self.index.stop}:{self.index.step}])"


def slice_of(parent: VariableTracker, value: Any, index: slice, items: list[VariableTracker]) -> VariableTracker:
    """The tracker of `value[index]` (`value` a Sequential or ModuleList of exactly that class)."""
    if type(value) not in SLICEABLE:
        raise Unsupported("module_getitem", f"pdyn cannot trace slicing a {type(value).__name__} (its class's "
                          "__init__ makes the slice)")
    return ModuleSliceVariable(parent, index, items[index], type(value))
