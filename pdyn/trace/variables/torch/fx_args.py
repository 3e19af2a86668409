"""Converting trackers into the three forms an op is called with: fx node arguments (for the
graph), fake values (to run the op at trace time) and symbolic values (for its shape rule). Only
tensors, symbolic ints, constants and containers of them can be op arguments; anything else is a
graph break.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pdyn.base.errors import Unsupported
from pdyn.ops.layouts import contiguous_always, strides_fixed
from pdyn.ops.shape_rules import SymTensor
from pdyn.trace.variables.base import VariableTracker
from pdyn.trace.variables.values.constant import ConstantVariable
from pdyn.trace.variables.containers.core import DictVariable, ListVariable, SizeVariable, SliceVariable, TupleVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from pdyn.trace.variables.torch.owned_layout import owns_contiguous
from pdyn.trace.variables.torch.tensor import TensorVariable


def _leaf(vt: VariableTracker, form: str) -> Any:
    """A tensor or symbolic int in `form`: "node" (graph), "example" (fake run), "symbolic" (shape rule)."""
    if isinstance(vt, TensorVariable):
        if form != "symbolic":
            return getattr(vt, form)
        owns = owns_contiguous(vt.node)
        return SymTensor(vt.sizes, vt.example.dtype, owns_storage=owns, layout_known=owns or contiguous_always(vt.node)
                         or strides_fixed(vt.node, vt.sizes))
    assert isinstance(vt, SymIntVariable)
    if form == "node":
        return vt.node
    return vt.example() if form == "example" else vt.env.simplify(vt.expr)


def _convert(vt: VariableTracker, tensor_attr: str) -> Any:
    if isinstance(vt, (TensorVariable, SymIntVariable)):
        return _leaf(vt, tensor_attr)
    if isinstance(vt, ConstantVariable):
        if isinstance(vt.value, np.generic):   # a NumPy scalar: torch reads it as the Python number
            if isinstance(vt.value, np.bool_):  # except a bool (an int tensor times np.True_ is float)
                raise Unsupported("numpy", "pdyn does not pass a NumPy bool to a torch op")
            return vt.value.item()
        return vt.value
    if isinstance(vt, SliceVariable):
        return slice(*(_convert(p, tensor_attr) for p in vt.parts))
    if isinstance(vt, SizeVariable):
        return tuple(_convert(i, tensor_attr) for i in vt.items)
    if isinstance(vt, TupleVariable):
        return tuple(_convert(i, tensor_attr) for i in vt.items)
    if isinstance(vt, ListVariable):
        return [_convert(i, tensor_attr) for i in vt.items]
    if isinstance(vt, DictVariable):
        return {k: _convert(v, tensor_attr) for k, v in vt.items.items()}
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise Unsupported("op_argument", f"pdyn cannot pass {vt} to a torch op")


def as_node(vt: VariableTracker) -> Any:
    """The fx argument for `vt`: a Node for a tensor, the value for a constant."""
    return _convert(vt, "node")


def as_symbolic(vt: VariableTracker) -> Any:
    """What a shape rule sees for `vt`: a SymTensor for a tensor, a sympy expression for a symbolic int."""
    return _convert(vt, "symbolic")


def as_fake(vt: VariableTracker) -> Any:
    """The trace-time value for `vt`: a FakeTensor for a tensor, the value for a constant."""
    return _convert(vt, "example")
