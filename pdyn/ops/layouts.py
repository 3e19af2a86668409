"""Which traced tensors are contiguous at every size an entry serves, from how they were made.

The fake run gives a tensor's strides at this call's sizes only; at a size of 1 a dim's stride is
free, and other dims' strides may differ from what they are at other sizes. A question whose answer
depends on strides (is a `view` that merges dims valid?) can be answered for every size only where
the layout follows from the sizes: an input guarded contiguous, `contiguous()`'s result, an op that
allocates a fresh contiguous result (matmul, linear, layer_norm, embedding), or an op that
preserves its inputs' layout (pointwise, reductions, softmax, views that keep contiguity) on such
tensors. Anything else is "not known", and the caller asks no stride question of it.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from pdyn.ops.catalogue import BINARY, CONVERSIONS, FACTORIES, LIKE, NEW, REDUCTIONS, UNARY
from pdyn.ops.table import op_of

KEY = "pdyn_contiguous_always"
LAYOUT_KWARGS = frozenset({"memory_format", "layout", "out"})
# a fresh contiguous result whatever its inputs' strides (checked at sizes 1..3 with transposed inputs)
FRESH = frozenset({"linear", "matmul", "__rmatmul__", "mm", "bmm", "addmm", "baddbmm", "mv", "outer", "ger",
                   "layer_norm", "embedding", "torch.embedding", *FACTORIES, *NEW})
# the result's layout follows its tensor operands' (TensorIterator, and ops built on it)
FOLLOWS = frozenset({*UNARY, *BINARY, *REDUCTIONS, *CONVERSIONS, *LIKE, "where", "softmax", "log_softmax",
                     "rms_norm", "__rsub__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__"})
# views whose result of a contiguous tensor is contiguous
SPLITS = frozenset({"split", "split_with_sizes", "chunk", "unbind"})
KEEPS = frozenset({"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "unsqueeze", "squeeze"})


def contiguous_always(node: Any) -> bool:
    """Whether `node`'s tensor is contiguous at every size the entry serves (memoized on the node)."""
    if not isinstance(node, torch.fx.Node):
        return False
    known = node.meta.get(KEY)
    if known is None:
        known = node.meta[KEY] = _decide(node)
    return known


def _decide(node: torch.fx.Node) -> bool:
    if node.op == "call_function" and node.target is operator.getitem and len(node.args) == 2:
        return _outer_part(node)   # an item of a tuple result has no example of its own
    example = node.meta.get("example_value")
    if not isinstance(example, torch.Tensor):
        return False
    if node.op == "placeholder":   # its TensorGuard checks contiguity (or, sizes static, the strides)
        return example.is_contiguous()
    if node.op not in ("call_function", "call_method") or LAYOUT_KWARGS & set(node.kwargs):
        return False
    name = op_of(node).name
    if name == "narrow":
        return _dim_arg(node, 1) == 0 and contiguous_always(node.args[0])
    if name in FRESH:
        return True
    if name == "contiguous":
        return len(node.args) == 1
    if name in KEEPS:
        return bool(node.args) and contiguous_always(node.args[0])
    if name in FOLLOWS:
        operands = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, torch.fx.Node)
                    and isinstance(a.meta.get("example_value"), torch.Tensor)]
        return all(contiguous_always(a) for a in operands)
    return False


def _outer_part(node: torch.fx.Node) -> bool:
    """`x[i]`, `x[a:b]`, or a piece of `split`/`chunk`/`unbind` along dim 0: a contiguous run of a
    contiguous tensor's storage is contiguous."""
    base, key = node.args[0], node.args[1]
    if not isinstance(base, torch.fx.Node):
        return False
    if isinstance(base.meta.get("example_value"), (tuple, list)):
        split_like = base.op in ("call_function", "call_method") and op_of(base).name in SPLITS
        position = 1 if split_like and op_of(base).name == "unbind" else 2
        return split_like and isinstance(key, int) and _dim_arg(base, position) == 0 \
            and contiguous_always(base.args[0])
    outer = isinstance(key, int) or (isinstance(key, slice) and key.step in (None, 1))
    return outer and isinstance(base.meta.get("example_value"), torch.Tensor) and contiguous_always(base)


def _dim_arg(node: torch.fx.Node, position: int) -> Any:
    """The `dim` argument of a split-like op or narrow (0 when not given)."""
    if "dim" in node.kwargs:
        return node.kwargs["dim"]
    return node.args[position] if len(node.args) > position else 0


def strides_fixed(node: Any, sizes: tuple[Any, ...]) -> bool:
    """A graph input whose sizes are all static: its TensorGuard checks its exact strides."""
    return isinstance(node, torch.fx.Node) and node.op == "placeholder" and \
        all(getattr(s, "is_Integer", False) for s in sizes)
