"""Derivative rules, keyed by the op table's row names (the rule of `mul` beside its shape rule in
spirit: one function per row family). A rule gets the builder, the forward node, its arguments
bound by name and the output's gradient, and adds each input's gradient with `bx.accumulate`.
Ops without a rule take `extern_rule`: torch's own backward of that one op (extern.py).

The helpers here build the backward's common shapes: `sum_to` (a broadcast's gradient), `expand`
(a reduction's), `pointwise` (a call whose sizes are its arguments' broadcast).
"""

from __future__ import annotations

from typing import Any, Callable

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder, Sizes, sizes_of
from pdyn.backends.autograd.extern import ExternVJP
from pdyn.backends.autograd.partition import NotDifferentiable
from pdyn.ops.effects import draws_random

Rule = Callable[[BackwardBuilder, torch.fx.Node, dict[str, Any], Any], None]
RULES: dict[str, tuple[tuple[str, ...], dict[str, Any], Rule]] = {}


def derivative(*names: str, params: str, **defaults: Any) -> Callable[[Rule], Rule]:
    """Register a rule for rows `names`; `params` names the positional parameters in order."""
    def register(fn: Rule) -> Rule:
        for name in names:
            assert name not in RULES, f"second derivative rule for {name}"
            RULES[name] = (tuple(params.split()), defaults, fn)
        return fn
    return register


def bind(node: torch.fx.Node, params: tuple[str, ...], defaults: dict[str, Any]) -> dict[str, Any]:
    """The node's arguments by parameter name (a method's self is the first)."""
    if len(node.args) > len(params) and not params[-1].startswith("*"):
        raise NotDifferentiable(f"{node.name}: {len(node.args)} arguments for {params}")
    bound = dict(defaults)
    for i, name in enumerate(params):
        if name.startswith("*"):
            bound[name[1:]] = tuple(node.args[i:])
            break
        if i < len(node.args):
            bound[name] = node.args[i]
    bound.update(node.kwargs)
    return bound


# -- helpers ----------------------------------------------------------------------------------------

def is_tensor(value: Any) -> bool:
    return isinstance(value, torch.fx.Node) and isinstance(value.meta.get("example_value"), torch.Tensor)


def broadcast(*sizes: Sizes) -> Sizes:
    ndim = max((len(s) for s in sizes), default=0)
    out: list[sympy.Expr] = []
    for d in range(ndim):
        dims = [s[len(s) - ndim + d] for s in sizes if len(s) - ndim + d >= 0]
        big = [n for n in dims if n != 1]
        out.append(big[0] if big else sympy.Integer(1))
    return tuple(out)


def pointwise(bx: BackwardBuilder, target: Callable[..., Any], *args: Any, **kwargs: Any) -> torch.fx.Node:
    return bx.call(target, *args, sizes=broadcast(*(sizes_of(a) for a in args if is_tensor(a))), **kwargs)


def sum_to(bx: BackwardBuilder, grad: torch.fx.Node, sizes: Sizes) -> torch.fx.Node:
    """A broadcast's gradient: `grad` summed over the dims `sizes` broadcast. A dim not 1 in
    `sizes` equals the output's (the forward's shape rule guarded it so: `Min(s1, s6)` against
    `s1`), so only the leading dims and the dims of size 1 are summed."""
    have = sizes_of(grad)
    lead = len(have) - len(sizes)
    dims = list(range(lead))
    for d, n in enumerate(sizes):
        if n == 1 and have[lead + d] != 1:
            dims.append(lead + d)
    if not dims:
        return grad
    kept = tuple(sympy.Integer(1) if lead + d in dims else n for d, n in enumerate(sizes))
    summed = bx.call(torch.sum, grad, dims, keepdim=True, sizes=tuple(
        sympy.Integer(1) if d in dims else n for d, n in enumerate(have)))
    return reshape(bx, summed, kept) if lead else summed


def reshape(bx: BackwardBuilder, grad: torch.fx.Node, sizes: Sizes) -> torch.fx.Node:
    if tuple(sizes_of(grad)) == tuple(sizes):
        return grad
    return bx.call(torch.reshape, grad, bx.sizes_arg(sizes), sizes=tuple(sizes))


def expand(bx: BackwardBuilder, grad: torch.fx.Node, sizes: Sizes, dims: list[int] | None,
           keepdim: bool) -> torch.fx.Node:
    """A reduction's gradient: `grad` (reduced over `dims`; None: all) broadcast to `sizes`."""
    ndim = len(sizes)
    dims = list(range(ndim)) if dims is None else sorted(d % ndim for d in dims)
    kept = tuple(sympy.Integer(1) if d in dims else n for d, n in enumerate(sizes))
    grad = reshape(bx, grad, kept) if not keepdim or len(sizes_of(grad)) != ndim else grad
    return bx.call(torch.Tensor.expand, grad, bx.sizes_arg(sizes), sizes=tuple(sizes))


def dims_of(dim: Any) -> list[int] | None:
    if dim is None:
        return None
    if isinstance(dim, int):
        return [dim]
    if isinstance(dim, (tuple, list)) and all(isinstance(d, int) for d in dim):
        return list(dim) or None
    raise NotDifferentiable(f"reduction over dims {dim!r}")


# -- torch's backward of one op ---------------------------------------------------------------------

def extern_rule(bx: BackwardBuilder, node: torch.fx.Node, grad: Any) -> None:
    """The op's backward through torch.autograd on the op alone (its inputs recomputed or saved)."""
    if draws_random(node):  # NOTE: a rerun would draw other numbers than the forward did
        raise NotDifferentiable(f"{node.name} draws random numbers and has no derivative rule")
    fake = node.meta["example_value"]
    grads = list(grad) if isinstance(fake, (tuple, list)) else [grad]
    outs = list(fake) if isinstance(fake, (tuple, list)) else [fake]
    out_sizes = list(node.meta["pdyn_sizes"]) if isinstance(fake, (tuple, list)) else [node.meta["pdyn_sizes"]]
    for i, (g, out) in enumerate(zip(grads, outs)):
        if g is None and isinstance(out, torch.Tensor) and out.is_floating_point():
            grads[i] = bx.call(torch.zeros, bx.sizes_arg(out_sizes[i]), dtype=out.dtype, device=out.device,
                               sizes=out_sizes[i])
    vjp = ExternVJP(node, [isinstance(g, torch.fx.Node) for g in grads], bx.partitioner.needs_grad)
    if not vjp.wrt:
        return
    leaves = [bx.primal(leaf) for leaf in vjp.leaves + vjp.state]
    tensor_grads = [g for g in grads if isinstance(g, torch.fx.Node)]
    sizes = tuple(sizes_of(vjp.leaves[i]) for i in vjp.wrt)
    call = bx.graph.call_function(vjp, (*tensor_grads, *leaves))
    call.meta.update({"example_value": tuple(vjp.leaves[i].meta["example_value"] for i in vjp.wrt),
                      "pdyn_sizes": sizes})
    for k, i in enumerate(vjp.wrt):
        bx.accumulate(vjp.leaves[i], bx.item(call, k))
