"""NumPy's functions, classes and values as the trace meets them (see numpy_arrays.py and
docs/numpy.md): an ndarray argument is a graph input (the tensor over its memory); a NumPy scalar
argument is a constant; `np.finfo`, `np.iinfo`, `np.dtype` and scalar types called on constants
are folded; any other NumPy function with a torch._numpy spelling is one graph node; the rest
(np.random, functions torch._numpy lacks) is a graph break, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch._numpy as tnp

from pdyn.base.errors import UserException
from pdyn.guards.guards import EqualsGuard, IdGuard, TypeGuard
from pdyn.sources import NdarrayTensorSource, Source
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable, ObjectConstantVariable
from pdyn.trace.variables.values.numpy_values import NumpyVariable
from pdyn.trace.variables.containers.core import ListVariable, TupleVariable
from pdyn.trace.variables.torch import torch_functions
from pdyn.trace.variables.torch.torch_functions import TorchFunctionVariable
from pdyn.trace.variables.torch.numpy_arrays import NdarrayVariable, numpy_call, numpy_dtype, refuse
from pdyn.trace.variables.torch.tensor import METHOD_RULES, TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.translator import InstructionTranslator as Tracer

# called on constants, these make constants (folded at trace time)
FOLDED = frozenset({np.finfo, np.iinfo, np.dtype, np.issubdtype, np.result_type, np.promote_types, np.can_cast,
                    np.isscalar})
# the functions that convert a tensor argument as np.asarray does (others hand it to the tensor's
# own method: `np.sum(t)` is `t.sum(axis=None, ...)`)
CONVERTING = frozenset({"asarray", "array", "asanyarray", "ascontiguousarray", "ones_like", "zeros_like",
                        "full_like", "empty_like"})
NAMESPACES = {"numpy": tnp, "numpy.linalg": tnp.linalg, "numpy.fft": tnp.fft}


def is_numpy_scalar(value: Any) -> bool:
    return isinstance(value, (np.number, np.bool_))


def _tnp_function(value: Any) -> Any:
    """torch._numpy's function of the same name and namespace, or None."""
    module = getattr(value, "__module__", None)
    name = getattr(value, "__name__", None)
    namespace = NAMESPACES.get(module) if isinstance(module, str) else None
    fn = getattr(namespace, name, None) if namespace is not None and isinstance(name, str) else None
    return fn if callable(fn) and not isinstance(fn, type) else None


def _constant(value: Any) -> VariableTracker:
    return ConstantVariable(value) if is_numpy_scalar(value) else ObjectConstantVariable(value)


class NumpyFunctionVariable(NumpyVariable):
    """A NumPy function or class: folded on constants, traced through torch._numpy, or a break."""

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        fn = self.value
        everything = [*args, *kwargs.values()]
        if all(v.is_python_constant() for v in everything) and _folds(fn):
            try:
                result = fn(*[a.as_python_constant() for a in args],
                            **{k: v.as_python_constant() for k, v in kwargs.items()})
            except Exception as e:
                raise UserException(e) from None
            return _constant(result)
        if (getattr(fn, "__module__", "") or "").startswith("numpy.random"):
            raise self._refuse(tx, f"numpy.random.{self._name()} (NumPy's random stream is not traced)")
        traced = _tnp_function(fn)
        if traced is None:
            raise self._refuse(tx, f"a call to numpy.{self._name()}")
        if any(isinstance(v, TensorVariable) for v in everything) and self._name() not in CONVERTING:
            raise self._refuse(tx, f"numpy.{self._name()} of a tensor")
        return numpy_call(tx, f"numpy.{self._name()}", traced, args, kwargs, shadow=fn)


def _folds(fn: Any) -> bool:
    try:
        return fn in FOLDED or isinstance(fn, type) and issubclass(fn, (np.number, np.bool_))
    except TypeError:
        return False


def wrap_numpy_value(tx: Tracer, value: Any, source: Source) -> VariableTracker:
    """A NumPy value read from the frame: an ndarray is a graph input, a scalar a constant (type and
    value guarded); functions and classes are pinned by identity."""
    if type(value) is np.ndarray and numpy_dtype_of(value) is not None:
        tx.ctx.add_guard(TypeGuard(source, np.ndarray, loc=tx.loc()))
        tensor = tx.wrap(torch.from_numpy(value), NdarrayTensorSource(source))
        if not isinstance(tensor, TensorVariable):
            raise refuse(tx, "this ndarray")
        return NdarrayVariable(tensor, source=source)
    if is_numpy_scalar(value) or isinstance(value, np.dtype):
        tx.ctx.add_guard(EqualsGuard(source, value, loc=tx.loc()))
        return _constant(value) if source is None else type(_constant(value))(value, source)
    fixed = isinstance(value, type) or callable(value) and not hasattr(value, "dtype")
    tx.ctx.add_guard(IdGuard(source, value, loc=tx.loc()) if fixed else TypeGuard(source, type(value), loc=tx.loc()))
    return NumpyFunctionVariable(value, source) if fixed else NumpyVariable(value, source)


def numpy_dtype_of(arr: np.ndarray) -> torch.dtype | None:
    """torch's dtype for the array's, where torch holds the array as it is (strides it can hold)."""
    try:
        t = torch.from_numpy(arr)
    except (TypeError, ValueError, RuntimeError):
        return None
    return t.dtype if arr.flags.aligned else None


def numpy_made(value: Any) -> VariableTracker:
    """A NumPy value made during the trace (a module's attribute): scalars are constants."""
    if is_numpy_scalar(value):
        return ConstantVariable(value)
    return NumpyFunctionVariable(value) if callable(value) else NumpyVariable(value)


def tensor_numpy(tx: Tracer, t: TensorVariable, args: list[VariableTracker],
                 kwargs: dict[str, VariableTracker]) -> VariableTracker:
    """`t.numpy()`: the array over the tensor's memory (eager's error where it has one)."""
    force = kwargs.get("force", args[0] if args else ConstantVariable(False))
    if not force.is_python_constant() or len(args) + len(kwargs) > 1:
        raise refuse(tx, "Tensor.numpy() with these arguments")
    example = t.example
    if not force.as_python_constant() and (example.requires_grad or example.device.type != "cpu"):
        raise refuse(tx, "Tensor.numpy() of a tensor that requires grad or is not on the CPU")
    if numpy_dtype(example.dtype) is None:
        raise refuse(tx, f"Tensor.numpy() of a {example.dtype} tensor")
    if force.as_python_constant():
        t = t.call_method(tx, "detach", [], {})
    return NdarrayVariable(t)


def torch_of_array(tx: Tracer, fn: Any, args: list[VariableTracker],
                   kwargs: dict[str, VariableTracker]) -> VariableTracker | None:
    """`torch.from_numpy(a)`, `torch.as_tensor(a)`: the array's tensor (the same memory);
    `torch.tensor(a, ...)`: a copy. None where the first argument is no traced array."""
    if fn is torch.tensor and args and _scalars(args[0]) and len(args) == 1 and set(kwargs) <= {"dtype"}:
        return _tensor_of_scalars(tx, _scalars(args[0]), kwargs.get("dtype"))
    if not args or not isinstance(args[0], NdarrayVariable):
        return None
    array = args[0]
    if array.scalar:
        raise refuse(tx, f"torch.{fn.__name__}() of a NumPy scalar")
    if fn in (torch.from_numpy, torch.as_tensor) and len(args) == 1 and not kwargs:
        return array.tensor
    if fn is torch.tensor and len(args) == 1 and set(kwargs) <= {"dtype"}:
        dtype = kwargs.get("dtype", ConstantVariable(array.tensor.example.dtype))
        return array.tensor.call_method(tx, "to", [dtype], {"copy": ConstantVariable(True)})
    raise refuse(tx, f"torch.{fn.__name__}() of an array with these arguments")


def _scalars(vt: VariableTracker) -> list[NdarrayVariable]:
    """The items of a list or tuple made only of NumPy scalars the trace holds (else none)."""
    items = getattr(vt, "items", None)
    if type(vt) not in (ListVariable, TupleVariable) or not items:
        return []
    return items if all(isinstance(i, NdarrayVariable) and i.scalar for i in items) else []


def _tensor_of_scalars(tx: Tracer, scalars: list[NdarrayVariable], dtype: VariableTracker | None) -> VariableTracker:
    """`torch.tensor([a[0], a[2]])` of NumPy scalars: their 0-d tensors stacked, in the dtype given
    or, without one, theirs (where they share it: torch infers a mixed list otherwise)."""
    kinds = {s.tensor.example.dtype for s in scalars}
    if dtype is None and len(kinds) != 1:
        raise refuse(tx, "torch.tensor() of NumPy scalars of several dtypes")
    stacked = TorchFunctionVariable(torch.stack).call(tx, [ListVariable([s.tensor for s in scalars])], {})
    return stacked if dtype is None else stacked.call_method(tx, "to", [dtype], {})


METHOD_RULES["numpy"] = tensor_numpy
for _fn in (torch.from_numpy, torch.as_tensor, torch.tensor):
    torch_functions.ARRAY_RULES[_fn] = torch_of_array
