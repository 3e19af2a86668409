"""Trackers for torch's API and Python modules: torch functions become graph nodes, modules
(`torch`, `math`, `torch.nn.functional`) are namespaces, and opaque constants (finfo) answer
attribute reads.
"""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

import torch

from pdyn.errors import Unsupported, UserException
from pdyn.sources import AttrSource, Source
from pdyn.variables.base import VariableTracker
from pdyn.variables.constant import ConstantVariable, ObjectConstantVariable

if TYPE_CHECKING:
    from pdyn.bytecode_tracer import InstructionTranslator as Tracer

# torch namespaces whose functions change global state, touch devices or autograd, or do I/O.
UNTRACEABLE_MODULES = ("torch.cuda", "torch.distributed", "torch.autograd", "torch.jit", "torch.random",
                       "torch.utils", "torch.serialization", "torch.compiler", "torch._dynamo", "torch.backends",
                       "torch.hub", "torch.onnx", "torch.profiler", "torch.multiprocessing")
UNTRACEABLE_PREFIXES = ("set_", "manual_seed", "seed", "initial_seed", "save", "load", "use_deterministic",
                        "compile", "get_rng_state", "from_numpy", "is_grad_enabled", "is_inference_mode",
                        "autocast", "no_grad", "enable_grad", "inference_mode", "cond", "vmap")
# torch functions of no tensor that answer a constant question.
CONSTANT_FUNCTIONS = frozenset({torch.is_tensor, torch.is_floating_point, torch.is_complex, torch.numel,
                                torch.get_default_dtype, torch.promote_types, torch.result_type, torch.can_cast,
                                torch.is_storage})


def _torch_namespace_functions() -> dict[int, Any]:
    namespaces = [torch, torch.nn.functional, torch.linalg, torch.fft, torch.special, torch.nn.init,
                  torch._C._nn, torch._C._linalg, torch._C._fft, torch._C._special, torch._C._VariableFunctions]
    found: dict[int, Any] = {}
    for namespace in namespaces:
        for name in dir(namespace):
            value = getattr(namespace, name, None)
            if callable(value) and not isinstance(value, type):
                found[id(value)] = value
    return found


TORCH_FUNCTIONS = _torch_namespace_functions()


def is_torch_function(value: Any) -> bool:
    """A function of torch's namespaces (an op to record); methods of torch classes, such as
    nn.Linear.forward, are user code to inline."""
    if id(value) in TORCH_FUNCTIONS:
        return True
    module = getattr(value, "__module__", None) or ""
    if not callable(value) or isinstance(value, type) or not (module == "torch" or module.startswith("torch.")):
        return False
    return "." not in getattr(value, "__qualname__", "") and not module.startswith("torch.nn.modules")


class TorchFunctionVariable(ObjectConstantVariable):
    """A function from torch (`torch.relu`, `F.linear`, `torch.cat`): calling it records a node."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        name = getattr(self.value, "__name__", repr(self.value))
        module = getattr(self.value, "__module__", "") or ""
        if self.value is torch.is_grad_enabled:
            return ConstantVariable(torch.is_grad_enabled())  # GradModeGuard is always installed
        if module.startswith(UNTRACEABLE_MODULES) or name.startswith(UNTRACEABLE_PREFIXES):
            raise Unsupported("torch_function", f"cannot trace {module}.{name}(): it changes state outside "
                              "the tensors it is given", hint="call it outside the compiled function",
                              loc=tx.loc())
        if "out" in kwargs:
            raise Unsupported("out_argument", f"pdyn cannot trace {name}(out=...)", loc=tx.loc())
        return tx.output.call("call_function", self.value, args, kwargs, mutates=name.endswith("_"))

    def __repr__(self) -> str:
        return f"TorchFunctionVariable({getattr(self.value, '__name__', self.value)})"


class PythonModuleVariable(ObjectConstantVariable):
    """A Python module used as a namespace (`torch`, `math`, `F`). Its members are not guarded:
    pdyn, like torch.compile, assumes nobody rebinds `torch.relu` between calls."""

    def python_type(self) -> type:
        return types.ModuleType

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        from pdyn.variables.builder import wrap, wrap_constant_result

        try:
            value = getattr(self.value, name)
        except AttributeError as e:
            raise UserException(e) from None
        if self.value.__name__.startswith("torch") or isinstance(value, types.ModuleType):
            return wrap_constant_result(value)
        if self.source is None:
            return wrap_constant_result(value)
        return wrap(tx, value, AttrSource(self.source, name))

    def __repr__(self) -> str:
        return f"PythonModuleVariable({self.value.__name__})"
