"""NumPy arrays traced as tensors, as torch.compile does it: an ndarray is a tensor of the graph
(`NdarrayVariable`), and a NumPy call on arrays is one graph node that runs `torch._numpy`'s version
of the call on their tensors. At the graph's boundary each array becomes an ndarray again
(`to_numpy`), or a NumPy scalar where NumPy returns one (a 0-d reduction, a ufunc's 0-d result).

Every call is checked at trace time against NumPy itself, run on arrays of zeros with the same
shapes and dtypes (the "shadow"): where NumPy's result differs from torch._numpy's in type (array,
scalar, tuple), dtype or shape, the call is a graph break and runs in NumPy, as before; the same
run gives NumPy's identity and memory sharing. Calls that write their inputs (`a.sort()`, `a += 1`;
a ufunc's `out=` is a recorded copy), read array data into Python (`a.tolist()`, `float(a)`), draw
random numbers, or whose NumPy values torch._numpy does not give (integer `//` by zero) are graph
breaks too.
"""

from __future__ import annotations

import functools
import operator
import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import torch
import torch._numpy as tnp
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils import _pytree as pytree

from pdyn.base.errors import Unsupported, UserException
from pdyn.ops import is_in_place_operator
from pdyn.ops.table import declare
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.containers.core import ListVariable, TupleVariable
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.fx_args import as_fake
from pdyn.trace.variables.torch.tensor import TensorVariable

if TYPE_CHECKING:
    from pdyn.trace.frame_codegen import FrameCodegen
    from pdyn.trace.translator import InstructionTranslator as Tracer

# ndarray methods and attributes that write the array or read its data into Python: a break
UNTRACED_METHODS = frozenset({"tolist", "item", "tobytes", "tofile", "dump", "dumps", "fill", "sort", "partition",
                              "put", "itemset", "resize", "setflags", "byteswap", "view", "__array__", "__setitem__",
                              "__index__", "__int__", "__float__", "__bool__", "__complex__", "flat", "ctypes",
                              "data", "base", "flags"})
TENSOR_ATTRIBUTES = frozenset({"T", "real", "imag", "mT"})


@functools.cache
def numpy_dtype(dtype: torch.dtype) -> np.dtype | None:
    """NumPy's dtype for a torch dtype (None for one NumPy lacks, such as bfloat16)."""
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:
        return None


def to_numpy(t: torch.Tensor, scalar: bool) -> Any:
    """An array (or NumPy scalar) of the graph as eager NumPy gives it: sharing the tensor's memory."""
    arr = t.detach().numpy(force=True) if t.requires_grad or t.device.type != "cpu" else t.numpy()
    return arr[()] if scalar else arr


@functools.cache
def numpy_op(fn: Callable[..., Any], name: str, elementwise: bool) -> Callable[..., Any]:
    """The graph target for a NumPy call: `fn` (of torch._numpy) on the tensors as tnp arrays,
    the result's arrays back as tensors (a tuple when there are several). Its op-table row is
    `numpy_elementwise` (the pointwise shape rule) or `numpy_call`."""
    def run(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = pytree.tree_map_only(torch.Tensor, tnp.ndarray, (args, kwargs))
        previous = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)   # NumPy's default: `int / int` is float64, not torch's float32
        try:
            out = fn(*args, **kwargs)
        finally:
            torch.set_default_dtype(previous)
        leaves = [leaf.tensor for leaf in pytree.tree_leaves(out) if isinstance(leaf, tnp.ndarray)]
        return leaves[0] if isinstance(out, tnp.ndarray) else tuple(leaves)
    run.__name__ = run.__qualname__ = f"numpy_{name}"
    run.__module__ = "pdyn.numpy"
    declare("numpy_elementwise" if elementwise else "numpy_call", spellings=[run], namespaces=())
    return run


@functools.cache
def _method(name: str) -> Callable[..., Any]:
    """`a.name(*args)` of a tnp array, as a function of `a`."""
    return lambda obj, *args, **kwargs: getattr(obj, name)(*args, **kwargs)


@functools.cache
def _attribute(name: str) -> Callable[..., Any]:
    return operator.attrgetter(name)


class NdarrayVariable(VariableTracker):
    """An ndarray (or, `scalar`, a NumPy scalar) whose data is the graph tensor `tensor`."""

    def __init__(self, tensor: TensorVariable, scalar: bool = False, source: Any = None):
        self.tensor = tensor
        self.scalar = scalar
        self.source = source

    def python_type(self) -> type:
        if not self.scalar:
            return np.ndarray
        return type(np.zeros((), numpy_dtype(self.tensor.example.dtype))[()])

    def getattr(self, tx: Tracer, name: str) -> VariableTracker:
        if name in UNTRACED_METHODS:
            raise refuse(tx, f"ndarray.{name}")
        t = self.tensor
        if name == "shape":
            return TupleVariable(list(t.call_method(tx, "size", [], {}).items))
        if name == "ndim":
            return ConstantVariable(t.example.dim())
        if name == "size":
            return t.call_method(tx, "numel", [], {})
        if name == "itemsize":
            return ConstantVariable(t.example.element_size())
        if name == "dtype":
            return ConstantVariable(numpy_dtype(t.example.dtype))
        if name == "strides" and t.node.op == "placeholder":  # a result's layout may not be NumPy's
            item = t.example.element_size()
            return TupleVariable([s.binary_op(tx, operator.mul, ConstantVariable(item))
                                  if not isinstance(s, ConstantVariable) else ConstantVariable(s.value * item)
                                  for s in t.call_method(tx, "stride", [], {}).items])
        if name in TENSOR_ATTRIBUTES:
            return numpy_call(tx, f"ndarray.{name}", _attribute(name), [self], {},
                              shadow=lambda a: getattr(a, name))
        if callable(getattr(np.ndarray, name, None)) and hasattr(tnp.ndarray, name):
            return NdarrayMethodVariable(self, name)
        raise refuse(tx, f"ndarray.{name}")

    def binary_op(self, tx: Tracer, fn: Callable[[Any, Any], Any], other: VariableTracker) -> VariableTracker:
        return numpy_operator(tx, fn, [self, other])

    def unary_op(self, tx: Tracer, fn: Callable[[Any], Any]) -> VariableTracker:
        return numpy_operator(tx, fn, [self])

    def getitem(self, tx: Tracer, key: VariableTracker) -> VariableTracker:
        return numpy_operator(tx, operator.getitem, [self, key])

    def setitem(self, tx: Tracer, key: VariableTracker, value: VariableTracker) -> None:
        raise refuse(tx, "`a[i] = v` (it writes the array)")

    def _scalar_name(self) -> str:
        return f"numpy.{self.python_type().__name__}"

    def length(self, tx: Tracer) -> VariableTracker:
        if self.scalar:
            raise UserException(TypeError(f"object of type '{self._scalar_name()}' has no len()"))
        if self.tensor.example.dim() == 0:
            raise UserException(TypeError("len() of unsized object"))
        return self.tensor.call_method(tx, "size", [ConstantVariable(0)], {})

    def iterate(self, tx: Tracer) -> list[VariableTracker]:
        if self.scalar:
            raise UserException(TypeError(f"'{self._scalar_name()}' object is not iterable"))
        if self.tensor.example.dim() == 0:
            raise UserException(TypeError("iteration over a 0-d array"))
        rows = tx.ctx.shape_env.specialize(self.tensor.sizes[0], tx.loc(), "iterating over an array's rows")
        return [self.getitem(tx, ConstantVariable(i)) for i in range(int(rows))]

    def truth(self, tx: Tracer) -> bool:
        raise refuse(tx, "the truth of an array (its data)")

    def reconstruct(self, codegen: FrameCodegen) -> str:
        if self.source is not None:   # an input array: the object itself, as eager returns it
            return codegen.source_expr(self.source)
        expr = f"{codegen.constant(to_numpy, 'to_numpy')}({codegen.reconstruct(self.tensor)}, {self.scalar})"
        return codegen.once(self, expr)   # one ndarray object however often it is returned

    def __repr__(self) -> str:
        return f"NdarrayVariable({self.tensor!r}{', scalar' if self.scalar else ''})"


class NdarrayMethodVariable(VariableTracker):
    """A bound method of an ndarray the trace holds (`a.reshape`): a call is one NumPy node."""

    def __init__(self, array: NdarrayVariable, name: str):
        self.array = array
        self.name = name

    def python_type(self) -> type:
        return type(np.zeros(0).copy)

    def call(self, tx: Tracer, args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> VariableTracker:
        name = self.name
        return numpy_call(tx, f"ndarray.{name}", _method(name), [self.array, *args], kwargs,
                          shadow=lambda a, *rest, **kw: getattr(a, name)(*rest, **kw))


def refuse(tx: Tracer, what: str) -> Unsupported:
    return Unsupported("numpy", f"pdyn does not trace {what}: it runs in NumPy after a graph break",
                       hint="use NumPy calls on arrays, or torch ops", loc=tx.loc())


def numpy_operator(tx: Tracer, fn: Callable[..., Any], args: list[VariableTracker]) -> VariableTracker:
    """`a + b`, `-a`, `a[i]` with an ndarray: NumPy's operator, traced; with a tensor a break (eager
    hands it to the tensor's operator); an in-place operator a break (it writes the array)."""
    name = getattr(fn, "__name__", "op")
    if is_in_place_operator(fn):
        raise refuse(tx, f"`{name}` on an array (it writes the array)")
    if any(isinstance(a, TensorVariable) for a in args):
        if len(args) == 2 and all(isinstance(a, TensorVariable) or _int_scalar(a) for a in args):
            # torch reads a NumPy integer as the Python int it holds: its value, read in the graph
            ints = [tx.output.data_values(a.tensor, "item", tx.loc()) if isinstance(a, NdarrayVariable) else a
                    for a in args]
            return tx.binary(fn, ints[0], ints[1])
        raise refuse(tx, f"`{name}` between an array and a tensor")
    return numpy_call(tx, name, fn, args, {}, shadow=fn)


def _int_scalar(vt: VariableTracker) -> bool:
    """A NumPy integer scalar (not a bool: torch promotes np.bool_ unlike a Python bool)."""
    if not isinstance(vt, NdarrayVariable) or not vt.scalar:
        return False
    dtype = vt.tensor.example.dtype
    return not dtype.is_floating_point and not dtype.is_complex and dtype is not torch.bool


def _shadow_arg(vt: VariableTracker) -> Any:
    """The argument for NumPy's own run: arrays of zeros of the same shape and dtype."""
    if isinstance(vt, (NdarrayVariable, TensorVariable)):
        t = vt.tensor if isinstance(vt, NdarrayVariable) else vt
        dtype = numpy_dtype(t.example.dtype)
        if dtype is None:
            raise Unsupported("numpy", f"NumPy has no dtype for {t.example.dtype}")
        zeros = np.zeros(tuple(t.example.shape), dtype)
        return zeros[()] if isinstance(vt, NdarrayVariable) and vt.scalar else zeros
    if type(vt) is ListVariable:
        return [_shadow_arg(i) for i in vt.items]
    if type(vt) is TupleVariable:
        return tuple(_shadow_arg(i) for i in vt.items)
    if isinstance(vt, SymIntVariable):
        return vt.example()
    return as_fake(vt)


def _dtype_name(value: Any) -> Any:
    """A NumPy dtype or scalar type as torch._numpy reads it (its name); anything else as it is."""
    if isinstance(value, np.dtype) or value in (bool, int, float, complex) \
            or isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name   # `astype(float)` is float64, as NumPy reads it
    return value


def _graph_arg(vt: VariableTracker) -> VariableTracker:
    """The argument as the graph passes it: arrays as their tensors (inside lists and tuples too),
    NumPy dtypes by name."""
    if isinstance(vt, NdarrayVariable):
        return vt.tensor
    if type(vt) in (ListVariable, TupleVariable):
        return type(vt)([_graph_arg(i) for i in vt.items])
    if not isinstance(vt, (TensorVariable, SymIntVariable)) and vt.is_python_constant():
        value = vt.as_python_constant()
        named = _dtype_name(value)
        return vt if named is value else ConstantVariable(named)
    return vt


def _run_shadow(tx: Tracer, what: str, shadow: Callable[..., Any], args: list[VariableTracker],
                kwargs: dict[str, VariableTracker]) -> tuple[Any, list[tuple[VariableTracker, Any]]]:
    """NumPy's own result for the call, on zeros, and (argument, its zeros) of each array argument;
    a call NumPy refuses there is a break."""
    shadow_args = [_shadow_arg(a) for a in args]
    shadow_kwargs = {k: _shadow_arg(v) for k, v in kwargs.items()}
    pairs = [(vt, arr) for vt, arr in zip([*args, *kwargs.values()], [*shadow_args, *shadow_kwargs.values()])
             if isinstance(vt, (NdarrayVariable, TensorVariable))]
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return shadow(*shadow_args, **shadow_kwargs), pairs
    except Exception as e:
        raise refuse(tx, f"{what} (NumPy raised {type(e).__name__} on arrays of zeros)") from None


def _fakes(args: list[VariableTracker], kwargs: dict[str, VariableTracker]) -> list[torch.Tensor]:
    leaves = pytree.tree_leaves(([as_fake(a) for a in args], {k: as_fake(v) for k, v in kwargs.items()}))
    return [t for t in leaves if isinstance(t, torch.Tensor)]


def numpy_call(tx: Tracer, what: str, fn: Callable[..., Any], args: list[VariableTracker],
               kwargs: dict[str, VariableTracker], shadow: Callable[..., Any]) -> VariableTracker:
    """`fn` (torch._numpy's spelling of the call `what`) as one graph node on the arrays' tensors;
    its result as NumPy's `shadow` gives it, or a break where the two differ."""
    if "out" in kwargs:
        return _ufunc_out(tx, what, fn, args, kwargs, shadow)
    expected, pairs = _run_shadow(tx, what, shadow, args, kwargs)
    _check_integer_semantics(tx, what, shadow, args, expected)
    graph_args = [_graph_arg(a) for a in args]
    graph_kwargs = {k: _graph_arg(v) for k, v in kwargs.items()}
    inputs = _fakes(graph_args, graph_kwargs)
    versions = [t._version for t in inputs]
    target = numpy_op(fn, what.replace(".", "_"), _elementwise(what, shadow))
    result = tx.output.call("call_function", target, graph_args, graph_kwargs, loc=tx.loc())
    if [t._version for t in inputs] != versions:
        raise refuse(tx, f"{what} (it writes an array)")
    return _as_numpy_result(tx, what, result, expected, pairs)


def _ufunc_out(tx: Tracer, what: str, fn: Callable[..., Any], args: list[VariableTracker],
               kwargs: dict[str, VariableTracker], shadow: Callable[..., Any]) -> VariableTracker:
    """`np.sin(x, out=out)`: the result computed as without `out`, written into `out` by a torch
    `copy_` (a write the graph records), and `out` itself returned, as NumPy does; only where the
    result already has `out`'s dtype and broadcasts to its shape (else a break)."""
    out = kwargs["out"]
    if not isinstance(shadow, np.ufunc) or shadow.nout != 1 or not isinstance(out, NdarrayVariable) or out.scalar:
        raise refuse(tx, f"{what}(out=...) (it writes an array)")
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    result = numpy_call(tx, what, fn, args, rest, shadow)
    if not isinstance(result, NdarrayVariable):
        raise refuse(tx, f"{what}(out=...) (a result that is no array)")
    dst, src = out.tensor.example, result.tensor.example
    if src.dtype != dst.dtype or torch.broadcast_shapes(src.shape, dst.shape) != dst.shape:
        raise refuse(tx, f"{what}(out=...) (a cast or a broadcast into `out`)")
    out.tensor.call_method(tx, "copy_", [result.tensor], {})
    return out


# integer ops whose values differ where the data says: NumPy gives 0 for `x // 0` and `x % 0` where
# torch raises, and raises for a negative integer power where torch gives 0
INTEGER_DIVISIONS = frozenset({np.floor_divide, np.remainder, np.fmod, np.divmod, operator.floordiv, operator.mod,
                               operator.ifloordiv, operator.imod, divmod})
INTEGER_POWERS = frozenset({np.power, operator.pow, operator.ipow})


def _check_integer_semantics(tx: Tracer, what: str, shadow: Any, args: list[VariableTracker], expected: Any) -> None:
    """A break for the integer ops whose NumPy values torch._numpy does not give for every input."""
    results = expected if isinstance(expected, tuple) else (expected,)
    integer = any(isinstance(r, (np.ndarray, np.generic)) and r.dtype.kind in "iu" for r in results)
    if not integer:
        return
    if shadow in INTEGER_DIVISIONS:
        raise refuse(tx, f"{what} on integers (NumPy gives 0 where the divisor is 0, torch raises)")
    if shadow in INTEGER_POWERS and not (len(args) == 2 and args[1].is_python_constant()
                                         and not isinstance(args[1], NdarrayVariable)
                                         and args[1].as_python_constant() >= 0):
        raise refuse(tx, f"{what} on integers (NumPy raises for a negative exponent, torch gives 0)")


# calls whose result has the broadcast shape of their array arguments (besides ufuncs and operators)
ELEMENTWISE = frozenset({"numpy.where", "numpy.clip", "numpy.ones_like", "numpy.zeros_like", "numpy.full_like",
                         "numpy.empty_like", "numpy.copy", "numpy.nan_to_num", "ndarray.copy", "ndarray.astype",
                         "ndarray.clip", "ndarray.round", "ndarray.conj", "ndarray.real", "ndarray.imag"})
NOT_ELEMENTWISE_OPERATORS = frozenset({operator.getitem, operator.matmul, operator.contains, operator.concat})


def _elementwise(what: str, shadow: Any) -> bool:
    if isinstance(shadow, np.ufunc):
        return shadow.nout == 1 and shadow.nin <= 2
    if getattr(shadow, "__module__", None) in ("_operator", "operator"):
        return shadow not in NOT_ELEMENTWISE_OPERATORS
    return what in ELEMENTWISE


def _storage(t: torch.Tensor) -> StorageWeakRef:
    return StorageWeakRef(t.untyped_storage())


def _memory_as_numpy(tx: Tracer, what: str, result: TensorVariable, expected: np.ndarray,
                     pairs: list[tuple[VariableTracker, Any]]) -> VariableTracker:
    """The array result with NumPy's identity and memory sharing: the argument itself where NumPy
    returns it (`np.asarray(a) is a`), a copy where torch._numpy shares the memory of an argument
    and NumPy does not (`a.astype(a.dtype)`); a break where NumPy shares and torch._numpy copies."""
    for vt, arr in pairs:
        if arr is expected and isinstance(vt, NdarrayVariable) and vt.tensor is result and not vt.scalar:
            return vt
    numpy_shares = any(isinstance(arr, np.ndarray) and np.shares_memory(arr, expected) for _, arr in pairs)
    tensors = [vt.tensor if isinstance(vt, NdarrayVariable) else vt for vt, _ in pairs]
    traced_shares = any(_storage(t.example) == _storage(result.example) for t in tensors)
    if traced_shares and not numpy_shares:
        result = result.call_method(tx, "clone", [], {})
    elif numpy_shares and not traced_shares:
        raise refuse(tx, f"{what} (NumPy returns a view where torch._numpy copies)")
    return NdarrayVariable(result)


def _as_numpy_result(tx: Tracer, what: str, result: VariableTracker, expected: Any,
                     pairs: list[tuple[VariableTracker, Any]]) -> VariableTracker:
    """The traced result shaped as NumPy's: arrays and NumPy scalars over tensors of the same dtype
    and shape, lists and tuples item by item, Python values equal in type."""
    if isinstance(expected, (np.ndarray, np.number, np.bool_)):
        if not isinstance(result, TensorVariable):
            raise refuse(tx, f"{what} (torch._numpy gives no array where NumPy does)")
        example = result.example
        if not all(type(d) is int for d in example.shape):
            raise refuse(tx, f"{what} (a size that depends on the data)")
        if numpy_dtype(example.dtype) != expected.dtype or tuple(example.shape) != np.shape(expected):
            raise refuse(tx, f"{what} (torch._numpy's {example.dtype}{list(example.shape)} is not NumPy's "
                              f"{expected.dtype}{list(np.shape(expected))})")
        if isinstance(expected, np.ndarray):
            return _memory_as_numpy(tx, what, result, expected, pairs)
        return NdarrayVariable(result, scalar=True)
    if isinstance(expected, (list, tuple)) and type(result) in (ListVariable, TupleVariable) \
            and len(result.items) == len(expected) and type(expected) in (list, tuple):
        items = [_as_numpy_result(tx, what, r, e, pairs) for r, e in zip(result.items, expected)]
        return ListVariable(items) if type(expected) is list else TupleVariable(items)
    if not isinstance(result, (TensorVariable, NdarrayVariable)) and result.is_python_constant() \
            and type(result.as_python_constant()) is type(expected):
        return result
    raise refuse(tx, f"{what} (its result is not NumPy's {type(expected).__name__})")
