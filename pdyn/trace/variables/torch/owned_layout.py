"""Tensors whose layout the sizes alone decide: made by an op that allocates a fresh contiguous
tensor (a factory, a constant `F.pad` of fewer than 4 dims), or a `view`/`reshape` of one. Such a
tensor starts at offset 0 of a storage of exactly its elements, and its strides are the contiguous
ones at every size, so `x.stride()` is symbolic (no specialization) and `as_strided` of it has a
shape rule that checks eager's storage bound (Longformer's `_chunk`).

`determined_strides` widens this to any result whose strides follow from its sizes at every size
an entry serves: an op that allocates a fresh contiguous result (linear, matmul, layer_norm,
embedding: their size-1 dims too, checked against eager at sizes 0 to 3), and a tensor contiguous at
every size (pdyn/ops/layouts.py) whose dims are not 1 and not 0, guarded so where the sizes are
symbolic: a size-1 dim's stride is free under contiguity, and differs between layouts (`x * 2` of
an input of shape (1, n) keeps the input's stride there)."""

from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.nn.functional as F

from pdyn.base.errors import SourceLoc
from pdyn.ops.layouts import FRESH, contiguous_always
from pdyn.ops.table import op_of
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


def _fresh(node: Any) -> bool:
    """An op that allocates its result contiguous whatever its inputs' layout (size-1 dims included)."""
    return isinstance(node, torch.fx.Node) and node.op in ("call_function", "call_method") \
        and not LAYOUT_KWARGS & set(node.kwargs) and op_of(node).name in FRESH


def _never(env: ShapeEnv, size: sympy.Expr, value: int, loc: SourceLoc | None) -> bool:
    """Whether `size` is never `value` at the sizes the entry serves: known, or guarded from this
    call's value (False where this call's size is `value`)."""
    size = env.simplify(sympy.sympify(size))
    if size.is_Integer:
        return int(size) != value
    known = env.known(sympy.Ne(size, value))
    if known is not None:
        return known
    if env.hint(size) == value:
        return False
    return env.evaluate_bool(sympy.Ne(size, value), loc, "a result's strides, which contiguity fixes "
                             f"only where no dim is {value}")


def determined_strides(env: ShapeEnv, node: Any, sizes: tuple[sympy.Expr, ...], dim: int | None,
                       loc: SourceLoc | None) -> tuple[sympy.Expr, ...] | None:
    """The strides of `node`'s tensor as expressions valid at every size the entry serves (guards
    added where a size must stay off 0 or 1), or None where its layout is not determined so."""
    if owns_contiguous(node) or _fresh(node):
        return contiguous_strides(env, sizes)
    if not contiguous_always(node):
        return None
    asked = sizes if dim is None else (sizes[dim],)
    if not all(_never(env, s, 0, loc) for s in sizes) or not all(_never(env, s, 1, loc) for s in asked):
        return None
    return contiguous_strides(env, sizes)
