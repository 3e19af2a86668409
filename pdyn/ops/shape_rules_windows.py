"""Shape rules of ops that add a dim of windows or classes: `Tensor.unfold` (sliding windows along a
dim, the window a new last dim), `F.one_hot` (a class dim; with `num_classes=-1` it is the data's
maximum, which no rule can tell: the sizes specialize) and `histc` (`bins` values)."""

from __future__ import annotations

import sympy

from pdyn.ops.shape_rules import OpCall, ShapeError, Sizes, as_tensor, register
from pdyn.shapes.shape_env import FloorDiv


@register("unfold")
def unfold(c: OpCall) -> list[Sizes] | None:
    """`x.unfold(dimension, size, step)`: `(n - size) // step + 1` windows of `size` along the dim."""
    a = c.bind("input", "dimension", "size", "step")
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        return None   # a 0-d tensor: torch's own checks
    d = c.dim(a["dimension"], x.ndim)
    size, step = sympy.sympify(a["size"]), sympy.sympify(a["step"])
    c.require(sympy.Gt(step, 0), "step must be positive")
    c.require(sympy.Ge(x.sizes[d], size), "the window is larger than the dim")
    if not c.check(sympy.Ge(size, 0), "a window size is not negative"):
        raise ShapeError("unfold: size is negative")
    out = list(x.sizes)
    out[d] = FloorDiv(x.sizes[d] - size, step) + 1
    return [(*out, size)]


@register("one_hot")
def one_hot(c: OpCall) -> list[Sizes] | None:
    a = c.bind("tensor", "num_classes", num_classes=-1)
    x = as_tensor(a["tensor"], "tensor")
    classes = sympy.sympify(a["num_classes"])
    if classes == -1:
        return None   # the data's maximum + 1: the fake run's size, specialized
    return [(*x.sizes, classes)]


@register("histc")
def histc(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "bins", "min", "max", bins=100, min=0, max=0)
    as_tensor(a["input"], "input")
    return [(sympy.sympify(a["bins"]),)]
