"""Derivative rules of views and joins: a reshape's gradient is the gradient reshaped back, a
transpose's transposed back, an expand's summed; basic indexing scatters into zeros of the
input's sizes (`getitem_backward`), a cat's gradient is one narrow per input, a stack's one
select. Tuple results (split, max with indices) receive their items' gradients via getitem."""

from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder, sizes_of
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.ops import op_of
from pdyn.backends.autograd.rules import derivative, extern_rule, is_tensor, reshape, sum_to


@derivative("view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "squeeze", "unsqueeze",
            params="input *rest")
def reshaped(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    if node.op == "call_method" and node.target == "view" and any(isinstance(r, torch.dtype) for r in a["rest"]):
        extern_rule(bx, node, g)  # x.view(dtype) reinterprets bits
        return
    bx.accumulate(a["input"], reshape(bx, g, sizes_of(a["input"])))


@derivative("expand", "expand_as", "broadcast_to", params="input *rest")
def expanded(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    bx.accumulate(a["input"], sum_to(bx, g, sizes_of(a["input"])))


@derivative("transpose", "swapaxes", "swapdims", params="input dim0 dim1")
def transpose(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    d0, d1 = a["dim0"], a["dim1"]
    if not (isinstance(d0, int) and isinstance(d1, int)):
        raise NotDifferentiable(f"transpose over dims {d0}, {d1}")
    s = list(sizes_of(a["input"]))
    bx.accumulate(a["input"], bx.call(torch.transpose, g, d0, d1, sizes=tuple(s)))


@derivative("t", params="input")
def t(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    s = sizes_of(a["input"])
    bx.accumulate(a["input"], bx.call(torch.t, g, sizes=tuple(s)) if len(s) == 2 else g)


@derivative("permute", params="input *dims")
def permute(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    dims = a["dims"][0] if len(a["dims"]) == 1 and isinstance(a["dims"][0], (tuple, list)) else a["dims"]
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    bx.accumulate(a["input"], bx.call(torch.permute, g, inverse, sizes=sizes_of(a["input"])))


def getitem_backward(grad: torch.Tensor, sizes: list[int], index: Any) -> torch.Tensor:
    """The gradient of `x[index]` for basic indexing: zeros of x's sizes with `grad` at the index."""
    out = grad.new_zeros(sizes)
    out[index] = grad
    return out


def _basic(index: Any) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) or
               (isinstance(i, torch.fx.Node) and not is_tensor(i)) for i in items)


@derivative("getitem", params="input index")
def getitem(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, index = a["input"], a["index"]
    if isinstance(x.meta.get("example_value"), (tuple, list)):
        bx.accumulate(x, g, index=index)  # an item of a tuple result
        return
    if not _basic(index):
        extern_rule(bx, node, g)
        return
    sizes = sizes_of(x)
    bx.accumulate(x, bx.call(getitem_backward, g, bx.sizes_arg(sizes), bx.primal(index), sizes=sizes))


@derivative("cat", "concat", "concatenate", params="tensors dim", dim=0)
def cat(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    dim = a["dim"]
    if not isinstance(dim, int):
        raise NotDifferentiable(f"cat along {dim!r}")
    start: sympy.Expr = sympy.Integer(0)
    for x in a["tensors"]:
        s = sizes_of(x)
        d = dim % len(s)
        if bx.partitioner.needs_grad(x):
            piece = bx.call(torch.narrow, g, d, bx.size(start), bx.size(s[d]), sizes=s)
            bx.accumulate(x, piece)
        start = start + s[d]


@derivative("stack", params="tensors dim", dim=0)
def stack(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    for i, x in enumerate(a["tensors"]):
        if bx.partitioner.needs_grad(x):
            bx.accumulate(x, bx.call(torch.select, g, a["dim"], i, sizes=sizes_of(x)))


@derivative("split", "split_with_sizes", "chunk", "unbind", params="input arg dim", arg=None, dim=0)
def split(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    """The items' gradients joined along the dim (zeros for an item without one); unbind's
    items lost the dim, so each gets it back first."""
    unbind = op_of(node).name == "unbind"
    dim = (a["dim"] if a["arg"] is None else a["arg"]) if unbind else a["dim"]
    if not isinstance(dim, int):
        raise NotDifferentiable(f"split along {dim!r}")
    items = node.meta["example_value"]
    parts = []
    for i, grad in enumerate(g):
        sizes = node.meta["pdyn_sizes"][i]
        fake = items[i]
        if grad is None:
            grad = bx.call(torch.zeros, bx.sizes_arg(sizes), dtype=fake.dtype, device=fake.device, sizes=sizes)
        if unbind:
            d = dim % len(sizes_of(a["input"]))
            grad = bx.call(torch.unsqueeze, grad, d, sizes=(*sizes[:d], sympy.Integer(1), *sizes[d:]))
        parts.append(grad)
    bx.accumulate(a["input"], bx.call(torch.cat, parts, dim, sizes=sizes_of(a["input"])))
