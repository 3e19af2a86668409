"""Derivative rules of pointwise ops: arithmetic, unary math, activations, selections, casts.
Each emits pointwise nodes the Triton backend fuses; a broadcast operand's gradient is summed back
to its sizes (`sum_to`), and every gradient is cast to its input's dtype by `bx.accumulate`."""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from pdyn.backends.autograd.builder import BackwardBuilder, sizes_of
from pdyn.backends.autograd.rules import derivative, extern_rule, is_tensor, pointwise, sum_to


def _give(bx: BackwardBuilder, fwd: Any, grad: Any) -> None:
    """`grad` (of the output's sizes) to operand `fwd`, summed over what `fwd` broadcast."""
    if is_tensor(fwd) and bx.partitioner.needs_grad(fwd):
        bx.accumulate(fwd, sum_to(bx, grad, sizes_of(fwd)))


def _scaled(bx: BackwardBuilder, grad: Any, factor: Any) -> Any:
    if isinstance(factor, (int, float)) and factor == 1:
        return grad
    return pointwise(bx, torch.mul, grad, bx.primal(factor))


@derivative("add", params="input other", alpha=1)
def add(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], g)
    _give(bx, a["other"], _scaled(bx, g, a["alpha"]))


@derivative("sub", "subtract", params="input other", alpha=1)
def sub(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], g)
    _give(bx, a["other"], _scaled(bx, pointwise(bx, torch.neg, g), a["alpha"]))


@derivative("rsub", "__rsub__", params="input other", alpha=1)
def rsub(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], _scaled(bx, pointwise(bx, torch.neg, g), a["alpha"]))
    _give(bx, a["other"], g)


@derivative("mul", "multiply", params="input other")
def mul(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, y = a["input"], a["other"]
    if is_tensor(x) and bx.partitioner.needs_grad(x):
        _give(bx, x, pointwise(bx, torch.mul, g, bx.primal(y)))
    if is_tensor(y) and bx.partitioner.needs_grad(y):
        _give(bx, y, pointwise(bx, torch.mul, g, bx.primal(x)))


@derivative("div", "divide", "true_divide", params="input other", rounding_mode=None)
def div(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, y = a["input"], a["other"]
    if a["rounding_mode"] is not None:  # floor and trunc division: zero gradients, as torch's
        for operand in (x, y):
            if is_tensor(operand) and bx.partitioner.needs_grad(operand):
                bx.accumulate(operand, bx.zeros(operand))
        return
    if is_tensor(x) and bx.partitioner.needs_grad(x):
        _give(bx, x, pointwise(bx, torch.div, g, bx.primal(y)))
    if is_tensor(y) and bx.partitioner.needs_grad(y):  # -g * x / y^2 = -g * out / y
        out = bx.primal(node)
        _give(bx, y, pointwise(bx, torch.neg, pointwise(bx, torch.div, pointwise(bx, torch.mul, g, out), bx.primal(y))))


@derivative("__rtruediv__", "__rdiv__", params="input other")
def rdiv(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    """other / input: -g * out / input."""
    out, x = bx.primal(node), bx.primal(a["input"])
    _give(bx, a["input"], pointwise(bx, torch.neg, pointwise(bx, torch.div, pointwise(bx, torch.mul, g, out), x)))


@derivative("neg", "negative", params="input")
def neg(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], pointwise(bx, torch.neg, g))


@derivative("positive", "clone", "contiguous", "to", "type", "type_as", "float", "half", "double",
            "bfloat16", "cpu", "cuda", "alias", params="input *rest")
def identity(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], g)  # accumulate casts to the input's dtype


@derivative("detach", "sign", "sgn", "floor", "ceil", "round", "trunc", params="input *rest")
def no_gradient(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    """Zero gradient almost everywhere: a zero tensor, as torch's backward gives (`.grad` is then
    zeros, not None). detach's output requires no grad, so no gradient reaches it."""
    if is_tensor(a["input"]) and bx.partitioner.needs_grad(a["input"]):
        bx.accumulate(a["input"], bx.zeros(a["input"]))


@derivative("pow", params="input exponent")
def pow_(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    x, e = a["input"], a["exponent"]
    if is_tensor(e) or not is_tensor(x):
        extern_rule(bx, node, g)
        return
    e = bx.primal(e)
    if e == 0:
        return
    base = pointwise(bx, torch.pow, bx.primal(x), e - 1) if e != 2 else bx.primal(x)
    _give(bx, x, pointwise(bx, torch.mul, pointwise(bx, torch.mul, g, base), e))


def _unary(name: str, fn: Any) -> None:
    """A rule `grad * fn(bx, x, out)` for unary op `name` (x the input, out the result)."""
    @derivative(name, params="input")
    def rule(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
        local = fn(bx, lambda: bx.primal(a["input"]), lambda: bx.primal(node))
        _give(bx, a["input"], pointwise(bx, torch.mul, g, local))


_unary("exp", lambda bx, x, out: out())
_unary("log", lambda bx, x, out: pointwise(bx, torch.reciprocal, x()))
_unary("sqrt", lambda bx, x, out: pointwise(bx, torch.mul, pointwise(bx, torch.reciprocal, out()), 0.5))
_unary("rsqrt", lambda bx, x, out: pointwise(bx, torch.mul, pointwise(bx, torch.pow, out(), 3), -0.5))
_unary("reciprocal", lambda bx, x, out: pointwise(bx, torch.neg, pointwise(bx, torch.mul, out(), out())))
def _one_minus(bx: BackwardBuilder, t: Any) -> Any:
    return pointwise(bx, torch.add, pointwise(bx, torch.neg, t), 1)  # (rsub has no kernel template)


_unary("tanh", lambda bx, x, out: _one_minus(bx, pointwise(bx, torch.mul, out(), out())))
_unary("sigmoid", lambda bx, x, out: pointwise(bx, torch.mul, out(), _one_minus(bx, out())))
_unary("sin", lambda bx, x, out: pointwise(bx, torch.cos, x()))
_unary("cos", lambda bx, x, out: pointwise(bx, torch.neg, pointwise(bx, torch.sin, x())))
_unary("square", lambda bx, x, out: pointwise(bx, torch.mul, x(), 2))
_unary("abs", lambda bx, x, out: pointwise(bx, torch.sign, x()))
_unary("log1p", lambda bx, x, out: pointwise(bx, torch.reciprocal, pointwise(bx, torch.add, x(), 1)))
_unary("expm1", lambda bx, x, out: pointwise(bx, torch.add, out(), 1))


def _silu(bx: BackwardBuilder, x: Any, out: Any) -> Any:
    sig = pointwise(bx, torch.sigmoid, x())
    return pointwise(bx, torch.mul, sig, pointwise(bx, torch.add, pointwise(
        bx, torch.mul, x(), _one_minus(bx, sig)), 1))


@derivative("silu", params="input inplace", inplace=False)
def silu(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], pointwise(bx, torch.mul, g, _silu(bx, lambda: bx.primal(a["input"]), None)))


@derivative("relu", params="input inplace", inplace=False)
def relu(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    positive = pointwise(bx, torch.gt, bx.primal(node), 0)
    _give(bx, a["input"], pointwise(bx, torch.where, positive, g, 0.0))


@derivative("masked_fill", params="input mask value")
def masked_fill(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    _give(bx, a["input"], pointwise(bx, torch.where, bx.primal(a["mask"]), 0.0, g))


@derivative("where", params="condition input other")
def where(bx: BackwardBuilder, node: torch.fx.Node, a: dict[str, Any], g: Any) -> None:
    cond = bx.primal(a["condition"])
    if is_tensor(a["input"]) and bx.partitioner.needs_grad(a["input"]):
        _give(bx, a["input"], pointwise(bx, torch.where, cond, g, 0.0))
    if is_tensor(a["other"]) and bx.partitioner.needs_grad(a["other"]):
        _give(bx, a["other"], pointwise(bx, torch.where, cond, 0.0, g))
