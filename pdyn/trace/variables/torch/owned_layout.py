"""Tensors whose layout the sizes alone decide: made by an op that allocates a fresh contiguous
tensor (a factory, a constant `F.pad` of fewer than 4 dims), or a `view`/`reshape` of one. Such a
tensor starts at offset 0 of a storage of exactly its elements, and its strides are the contiguous
ones at every size, so `x.stride()` is symbolic (no specialization) and `as_strided` of it has a
shape rule that checks eager's storage bound (Longformer's `_chunk`)."""

from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.nn.functional as F

from pdyn.shapes.shape_env import ShapeEnv

FACTORIES = frozenset({torch.zeros, torch.ones, torch.empty, torch.full, torch.rand, torch.randn, torch.arange})
PADS = frozenset({F.pad, torch.constant_pad_nd})
VIEWS = frozenset({"view", "reshape"})
LAYOUT_KWARGS = frozenset({"memory_format", "layout", "out"})


def owns_contiguous(node: Any) -> bool:
    """Whether `node`'s value is contiguous at every size and alone in its storage from offset 0."""
    if not isinstance(node, torch.fx.Node) or LAYOUT_KWARGS & set(node.kwargs):
        return False
    if node.op == "call_function" and node.target in FACTORIES:
        return True
    if node.op == "call_function" and node.target in PADS:
        source = node.args[0] if node.args else None
        value = source.meta.get("example_value") if isinstance(source, torch.fx.Node) else None
        mode = node.kwargs.get("mode", node.args[2] if len(node.args) > 2 else "constant")
        # NOTE: constant_pad_nd allocates in the input's suggested memory format: contiguous below 4 dims
        return mode == "constant" and isinstance(value, torch.Tensor) and value.dim() < 4
    is_view = (node.op == "call_method" and node.target in VIEWS) or \
        (node.op == "call_function" and node.target in (torch.reshape,))
    return is_view and bool(node.args) and owns_contiguous(node.args[0])


def contiguous_strides(env: ShapeEnv, sizes: tuple[sympy.Expr, ...]) -> tuple[sympy.Expr, ...]:
    """Torch's contiguous strides: each the product of the later sizes, a size of 0 counted as 1."""
    strides: list[sympy.Expr] = []
    acc: sympy.Expr = sympy.Integer(1)
    for size in reversed(sizes):
        strides.append(acc)
        size = env.simplify(sympy.sympify(size))
        at_least_one = size.is_Integer and size >= 1 or env.known(sympy.Ge(size, 1)) is True
        acc = acc * (size if at_least_one else sympy.Max(size, 1))
    return tuple(reversed(strides))
