"""Modules of a user or library class constructed inside the trace (`ACT2FN["silu"]`, `MyAct(0.5)(x)`).

The class's `__init__` is traced like any function, with `self` a real, empty object of the class
(`object.__new__`): `nn.Module.__init__` runs on it for real (it only makes the member tables and
hook dicts), and each attribute the `__init__` stores is kept in the tracker (`fields`), filed as
`Module.__setattr__` files it (a submodule also in `_modules`, so `children()` lists it). Calling
the module inlines its `forward`. The `__init__`'s side effects (a global changed, a list
appended to) are the trace's, replayed after the graph like any other.

A break instead: a Parameter stored (eager makes it anew on every call, requiring grad), a read or
change of the member tables (`register_buffer`, `add_module`), a class with its own `__new__`,
`__setattr__` or `__getattr__`, an `__init__` that never calls `nn.Module.__init__`. A break
inside the `__init__` runs the construction for real.

After the graph, a module that escapes (returned, stored, live at a break) is made again without
running its `__init__` a second time: `object.__new__`, `nn.Module.__init__`, then its fields set
in the order the trace first set them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import torch

from pdyn.base.errors import Unsupported
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.registry import rule
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.objects.nn_module_made import MODULE_INTERNALS
from pdyn.trace.variables.objects.user_objects import bind_class_attr, check_init_result, class_attr, mro_lookup
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.sources import Source
    from pdyn.trace.breaks.callees import BreakCallee
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# nn.Module's own attribute protocol: what `fields` models
MODULE_SLOTS = {"__setattr__": torch.nn.Module.__setattr__, "__getattr__": torch.nn.Module.__getattr__,
                "__delattr__": torch.nn.Module.__delattr__, "__getattribute__": object.__getattribute__,
                "__new__": object.__new__}
MODULE_INIT = torch.nn.Module.__init__   # the rule's key; torch.compile wraps it later (its generation tag)


def is_module_init(fn: Any) -> bool:
    """`nn.Module.__init__`, as pdyn imported it or as it is now."""
    return fn is not None and (fn is MODULE_INIT or fn is torch.nn.Module.__dict__["__init__"])


def _unsupported(tx: Tracer, what: str) -> Unsupported:
    return Unsupported("module_construction", what, hint="build the module in __init__, not in forward",
                       loc=tx.loc())


def rebuild_traced_module(cls: type, fields: dict[str, Any]) -> torch.nn.Module:
    """A module whose `__init__` the trace ran, made again after the graph from what it stored."""
    module = object.__new__(cls)
    torch.nn.Module.__init__(module)
    for name, value in fields.items():
        setattr(module, name, value)
    return module


def construct_traced_module(tx: Tracer, cls: type, args: list[VariableTracker],
                            kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for an nn.Module class outside torch.nn: its `__init__` traced."""
    name = cls.__qualname__
    for slot, default in MODULE_SLOTS.items():
        if mro_lookup(cls, slot) is not default:
            raise _unsupported(tx, f"pdyn cannot trace constructing {name} inside a compiled function: "
                                   f"its class defines {slot}")
    if type(cls).__call__ is not type.__call__ or getattr(cls, "__abstractmethods__", None) or \
            class_attr(tx, cls, "call_super_init"):
        raise _unsupported(tx, f"pdyn cannot trace constructing {name} inside a compiled function: "
                               "its metaclass, abstract methods or call_super_init make it more than __init__")
    obj = TracedModuleVariable(object.__new__(cls))
    init = class_attr(tx, cls, "__init__")
    if is_module_init(init):
        _module_init(tx, [obj, *args], kwargs)
    else:
        check_init_result(tx, bind_class_attr(tx, obj, cls, "__init__", init).call(tx, args, kwargs))
    if not obj.initialized:   # eager fails on its first use; pdyn does not model a half-made module
        raise _unsupported(tx, f"{name}.__init__ does not call nn.Module.__init__")
    return obj


@rule(MODULE_INIT)
def _module_init(tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`super().__init__()` in the `__init__` of a module the trace constructs."""
    if not args or not isinstance(args[0], TracedModuleVariable) or len(args) > 1 or kwargs:
        raise Unsupported("module_construction", "pdyn traces nn.Module.__init__ only without arguments, on a "
                          "module the compiled function constructs", loc=tx.loc())
    args[0].initialize(tx)
    return ConstantVariable(None)


class TracedModuleVariable(NNModuleVariable):
    """A module constructed in the trace by tracing its class's `__init__`: no source, no guard;
    `value` holds the member tables, `fields` what the `__init__` and later code stored."""

    def __init__(self, value: torch.nn.Module):
        super().__init__(value, None)  # type: ignore[arg-type]
        self.fields: dict[str, VariableTracker] = {}
        self.initialized = False

    def initialize(self, tx: Tracer) -> None:
        if self.initialized:  # a second nn.Module.__init__ would empty the tables under the fields
            raise _unsupported(tx, f"{type(self.value).__name__} calls nn.Module.__init__ twice")
        torch.nn.Module.__init__(self.value)   # only makes tables and hook dicts on the object
        self.initialized = True

    def _ready(self, tx: Tracer, name: str) -> None:
        if not self.initialized:
            raise _unsupported(tx, f"pdyn cannot trace {type(self.value).__name__}.{name} before nn.Module.__init__")
        if name in MODULE_INTERNALS and name != "training" or name == "__dict__":
            raise _unsupported(tx, f"pdyn cannot trace {type(self.value).__name__}.{name} (nn.Module's own "
                                   "state) of a module the compiled function constructs")

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        self._ready(tx, name)
        if name in self.fields:
            return self.fields[name]
        return super().getattr(tx, name)

    def _read(self, tx: Tracer, value: Any, source: Callable[[Source], Source]) -> VariableTracker:
        """A member listed from the tables (`children()`): the tracker stored under it."""
        for field in self.fields.values():
            if isinstance(field, NNModuleVariable) and field.value is value:
                return field
        return super()._read(tx, value, source)

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        """`Module.__setattr__`: a submodule is filed in `_modules` too; a Parameter is a break."""
        self._ready(tx, name)
        m = self.value
        if name in m._parameters or name in m._buffers:
            raise _unsupported(tx, f"pdyn cannot trace assigning {type(m).__name__}.{name}, a parameter or buffer")
        if isinstance(value, TensorVariable) and issubclass(value.python_type(), torch.nn.Parameter):
            raise _unsupported(tx, f"{type(m).__name__}() inside a compiled function creates parameters ({name}): "
                                   "eager makes them anew on every call")
        if isinstance(value, NNModuleVariable):
            m._modules[name] = value.value
        elif name in m._modules or not isinstance(value, TensorVariable) and \
                issubclass(value.python_type(), torch.nn.Module):
            raise _unsupported(tx, f"pdyn cannot trace assigning {type(m).__name__}.{name} (a submodule)")
        self.fields[name] = value

    def callee_at_break(self, callee: BreakCallee, method_of: VariableTracker | None = None) -> str | None:
        return callee.module(self, self.value, method_of, rebuilt=True)

    def reconstruct(self, codegen: FrameCodegen) -> str:
        fields = ", ".join(f"{k!r}: {codegen.reconstruct(v)}" for k, v in self.fields.items())
        cls = type(self.value)
        return codegen.once(self, f"{codegen.constant(rebuild_traced_module, 'rebuild_traced_module')}("
                                  f"{codegen.constant(cls, cls.__name__)}, {{{fields}}})")

    def __repr__(self) -> str:
        return f"TracedModuleVariable({type(self.value).__qualname__})"
