"""Modules constructed inside the trace (`nn.CrossEntropyLoss()(logits, labels)`, `nn.ReLU()(x)`).

A torch.nn class whose construction makes no tensor (losses, activations, Dropout, Flatten, ...)
is built for real at trace time from constant arguments; its call inlines its forward like any
module's, its attributes are constants (no source: nothing outside the trace holds it). One that
would make parameters or buffers (nn.Linear in forward: new random weights per call) is a break.
After the graph, an escaping module is built again from the same arguments.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import is_constant_value
from pdyn.trace.variables.containers.core import is_known, python_value
from pdyn.trace.variables.objects.nn_module import NNModuleVariable
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# what nn.Module.__init__ itself stores: the member tables, hook dicts, `training`
MODULE_INTERNALS = frozenset(torch.nn.Module().__dict__)
TABLES = ("_parameters", "_buffers", "_modules")


def rebuild_module(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any], fields: dict[str, Any]) -> Any:
    """A module made in the trace, made again after the graph, with the attributes the trace set."""
    module = cls(*args, **kwargs)
    for name, value in fields.items():
        setattr(module, name, value)
    return module


def construct_module(tx: Tracer, cls: type, args: list[VariableTracker],
                     kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`cls(*args, **kwargs)` for an nn.Module class, inside the trace. A tensor argument is passed
    as a stand-in (a meta tensor); the module may only keep it as a buffer (a loss's `weight`),
    whose reads are the argument's tracker."""
    name = cls.__qualname__
    if not cls.__module__.startswith("torch.nn."):
        raise Unsupported("module_construction", f"pdyn cannot trace constructing {name} inside a compiled "
                          "function", hint="build modules in __init__, not in forward", loc=tx.loc())
    if not all(is_known(a) or isinstance(a, TensorVariable) for a in [*args, *kwargs.values()]):
        raise Unsupported("module_construction", f"pdyn cannot trace constructing {name} from non-constant "
                          "arguments", hint="build modules in __init__, not in forward", loc=tx.loc())
    why, loc = f"an argument of {name}()", tx.loc()

    def build(meta_default: bool) -> tuple[torch.nn.Module, dict[int, TensorVariable]]:
        stand_ins: dict[int, TensorVariable] = {}

        def value(vt: VariableTracker) -> Any:
            if not isinstance(vt, TensorVariable):
                return python_value(vt, why, loc)
            stand_in = torch.empty(vt.example.shape, dtype=vt.example.dtype, device="meta")
            stand_ins[id(stand_in)] = vt
            return stand_in

        values, kw = tuple(value(a) for a in args), {k: value(v) for k, v in kwargs.items()}
        try:
            if meta_default:  # a probe: a module that makes tensors draws no random numbers here
                with torch.device("meta"):
                    return cls(*values, **kw), stand_ins
            return cls(*values, **kw), stand_ins
        except Exception as e:  # eager raises the same when it constructs it (bad arguments)
            raise UserException(e, tx.loc()) from None

    _check_tensor_free(tx, *build(True), name)
    module, stand_ins = build(False)
    buffers = {k: stand_ins[id(v)] for k, v in module._buffers.items() if v is not None}

    def kept(vt: VariableTracker) -> Any:  # what the frame code passes when it builds the module again
        return vt if isinstance(vt, TensorVariable) else python_value(vt, why, loc)

    return MadeModuleVariable(module, tuple(kept(a) for a in args), {k: kept(v) for k, v in kwargs.items()},
                              buffers)


def _check_tensor_free(tx: Tracer, module: torch.nn.Module, stand_ins: dict[int, TensorVariable], name: str) -> None:
    """A module whose construction made weights (random per call in eager), buffers or submodules
    cannot be a constant of the trace; a tensor argument it keeps as a buffer is that argument."""
    made = [k for k, v in module._parameters.items() if v is not None]
    if made:
        raise Unsupported("module_construction", f"{name}() inside a compiled function creates parameters "
                          f"({', '.join(made)}): eager makes new random weights on every call, so they cannot "
                          "be a constant", hint="build the module in __init__, not in forward", loc=tx.loc())
    extra = [k for k, v in module._buffers.items() if v is not None and id(v) not in stand_ins]
    extra += list(module._modules)
    extra += [k for k, v in module.__dict__.items() if k not in MODULE_INTERNALS and not is_constant_value(v)]
    if extra:
        raise Unsupported("module_construction", f"pdyn cannot trace constructing {name} inside a compiled "
                          f"function: it holds {', '.join(extra)}, which are not constants",
                          hint="build the module in __init__, not in forward", loc=tx.loc())


class MadeModuleVariable(NNModuleVariable):
    """A module constructed in the trace: no source, no guard; stores go to `fields`."""

    def __init__(self, value: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any],
                 buffers: dict[str, TensorVariable]):
        super().__init__(value, None)  # type: ignore[arg-type]
        self.args = args  # Python values, and the trackers of tensor arguments
        self.kwargs = kwargs
        self.buffers = buffers  # buffers that are tensor arguments (the module holds meta stand-ins)
        self.fields: dict[str, VariableTracker] = {}

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in self.fields:
            return self.fields[name]
        if name in self.buffers:
            return self.buffers[name]
        return super().getattr(tx, name)

    def store_attr(self, tx: Tracer, name: str, value: VariableTracker) -> None:
        m = self.value
        if name in MODULE_INTERNALS - {"training"} or name in m._buffers or \
                isinstance(value, (TensorVariable, NNModuleVariable)):
            raise Unsupported("module_setattr", f"pdyn cannot trace assigning {type(m).__name__}.{name} "
                              "on a module made in the compiled function", loc=tx.loc())
        self.fields[name] = value

    def reconstruct(self, codegen: FrameCodegen) -> str:
        def expr(v: Any) -> str:
            return codegen.reconstruct(v) if isinstance(v, VariableTracker) else codegen.constant(v)

        fields = ", ".join(f"{k!r}: {codegen.reconstruct(v)}" for k, v in self.fields.items())
        args = "".join(f"{expr(v)}, " for v in self.args)
        kwargs = ", ".join(f"{k!r}: {expr(v)}" for k, v in self.kwargs.items())
        cls = type(self.value)
        return codegen.once(self, f"{codegen.constant(rebuild_module, 'rebuild_module')}("
                                  f"{codegen.constant(cls, cls.__name__)}, ({args}), {{{kwargs}}}, {{{fields}}})")

    def __repr__(self) -> str:
        return f"MadeModuleVariable({type(self.value).__qualname__})"
