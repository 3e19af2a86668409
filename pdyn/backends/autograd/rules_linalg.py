"""Derivative rules of matmuls and reductions: matmul/mm/bmm/linear (matmuls of the gradient with
the saved operands), sum/mean (the gradient broadcast back), softmax/log_softmax (their closed
forms over the saved output). 1-D matmul operands take torch's backward (extern)."""

from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder, sizes_of
from pdyn.backends.autograd.rules import (
    broadcast, derivative, dims_of, expand, extern_rule, is_tensor, pointwise, reshape, sum_to,
)


def _transposed(bx: BackwardBuilder, t: Any) -> torch.fx.Node:
    s = sizes_of(t)
    return bx.call(torch.transpose, t, -1, -2, sizes=(*s[:-2], s[-1], s[-2]))


def _matmul(bx: BackwardBuilder, a: Any, b: Any) -> torch.fx.Node:
    sa, sb = sizes_of(a), sizes_of(b)
    batch = broadcast(sa[:-2], sb[:-2])
    return bx.call(torch.matmul, a, b, sizes=(*batch, sa[-2], sb[-1]))


@derivative("matmul", "mm", "bmm", params="input other")
def matmul(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, y = a["input"], a["other"]
    if not (is_tensor(x) and is_tensor(y)) or len(sizes_of(x)) < 2 or len(sizes_of(y)) < 2:
        extern_rule(bx, node, g)
        return
    _matmul_grads(bx, x, y, g)


@derivative("addmm", params="input mat1 mat2", beta=1, alpha=1)
def addmm(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    """input + mat1 @ mat2 (GPT-2's Conv1D)."""
    if a["beta"] != 1 or a["alpha"] != 1:
        extern_rule(bx, node, g)
        return
    if is_tensor(a["input"]) and bx.partitioner.needs_grad(a["input"]):
        bx.accumulate(a["input"], sum_to(bx, g, sizes_of(a["input"])))
    _matmul_grads(bx, a["mat1"], a["mat2"], g)


def _matmul_grads(bx: BackwardBuilder, x: Any, y: Any, g: Any) -> None:
    if bx.partitioner.needs_grad(x):
        bx.accumulate(x, sum_to(bx, _matmul(bx, g, _transposed(bx, bx.primal(y))), sizes_of(x)))
    if bx.partitioner.needs_grad(y):
        bx.accumulate(y, sum_to(bx, _matmul(bx, _transposed(bx, bx.primal(x)), g), sizes_of(y)))


@derivative("linear", params="input weight bias", bias=None)
def linear(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, w, b = a["input"], a["weight"], a["bias"]
    sx, sw = sizes_of(x), sizes_of(w)
    if len(sx) < 2 or len(sw) != 2:
        extern_rule(bx, node, g)
        return
    if bx.partitioner.needs_grad(x):
        bx.accumulate(x, bx.call(torch.matmul, g, bx.primal(w), sizes=sx))
    rows = sympy.Mul(*sx[:-1])
    if is_tensor(w) and bx.partitioner.needs_grad(w):
        g2 = reshape(bx, g, (rows, sw[0]))
        x2 = reshape(bx, bx.primal(x), (rows, sw[1]))
        bx.accumulate(w, bx.call(torch.mm, _transposed(bx, g2), x2, sizes=tuple(sw)))
    if is_tensor(b) and bx.partitioner.needs_grad(b):
        bx.accumulate(b, sum_to(bx, g, sizes_of(b)))


@derivative("sum", params="input dim keepdim", dim=None, keepdim=False, dtype=None)
def sum_(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    bx.accumulate(a["input"], expand(bx, g, sizes_of(a["input"]), dims_of(a["dim"]), a["keepdim"]))


@derivative("mean", params="input dim keepdim", dim=None, keepdim=False, dtype=None)
def mean(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    sizes = sizes_of(a["input"])
    dims = dims_of(a["dim"])
    count = sympy.Mul(*(sizes if dims is None else [sizes[d % len(sizes)] for d in dims]))
    spread = expand(bx, g, sizes, dims, a["keepdim"])
    bx.accumulate(a["input"], pointwise(bx, torch.div, spread, bx.size(count)))


def _row_sum(bx: BackwardBuilder, t: Any, dim: int) -> torch.fx.Node:
    s = sizes_of(t)
    kept = tuple(sympy.Integer(1) if d == dim % len(s) else n for d, n in enumerate(s))
    return bx.call(torch.sum, t, [dim], keepdim=True, sizes=kept)


@derivative("softmax", params="input dim", dtype=None, _stacklevel=3)
def softmax(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    if a["dtype"] is not None or not isinstance(a["dim"], int):
        extern_rule(bx, node, g)
        return
    out = bx.primal(node)
    inner = pointwise(bx, torch.sub, g, _row_sum(bx, pointwise(bx, torch.mul, g, out), a["dim"]))
    bx.accumulate(a["input"], pointwise(bx, torch.mul, out, inner))


@derivative("log_softmax", params="input dim", dtype=None, _stacklevel=3)
def log_softmax(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    if a["dtype"] is not None or not isinstance(a["dim"], int):
        extern_rule(bx, node, g)
        return
    probs = pointwise(bx, torch.exp, bx.primal(node))
    bx.accumulate(a["input"], pointwise(bx, torch.sub, g, pointwise(bx, torch.mul, probs, _row_sum(bx, g, a["dim"]))))

