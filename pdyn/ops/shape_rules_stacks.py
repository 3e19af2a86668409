"""Shape rules of the stacking joins: `hstack`, `vstack` (`row_stack`), `dstack` and
`column_stack`. Each makes its inputs at least 1-, 2- or 3-D as torch does, then joins them along
one dim as `cat` (the other sizes must agree; a 1-D empty tensor is skipped, as `cat` skips it)."""

from __future__ import annotations

from typing import Any

from pdyn.ops.shape_rules import ONE, ZERO, OpCall, ShapeError, Sizes, as_tensor, register


def _atleast(sizes: Sizes, ndim: int) -> Sizes:
    """`atleast_1d/2d/3d`: (n,) is (1, n) in 2-D and (1, n, 1) in 3-D; (a, b) is (a, b, 1)."""
    if len(sizes) >= ndim:
        return sizes
    if not sizes:
        return (ONE,) * ndim
    if len(sizes) == 1:
        return (ONE, sizes[0]) if ndim == 2 else (ONE, sizes[0], ONE)
    return (*sizes, ONE)


def _join(c: OpCall, shapes: list[Sizes], dim: int) -> Sizes:
    kept = [s for s in shapes if s != (ZERO,)]
    if not kept:
        return (ZERO,)
    out = list(kept[0])
    for s in kept[1:]:
        if len(s) != len(out):
            raise ShapeError(f"{c.name()}: tensors must have the same number of dims")
        for i in range(len(out)):
            if i != dim:
                out[i] = c.equal(out[i], s[i], f"{c.name()} sizes of dim {i}")
    out[dim] = sum((s[dim] for s in kept), ZERO)
    return tuple(out)


def _tensors(c: OpCall) -> list[Sizes]:
    value: Any = c.args[0] if c.args else c.kwargs.get("tensors")
    if not isinstance(value, (list, tuple)) or not value:
        raise ShapeError(f"{c.name()} expects a non-empty list of tensors")
    return [as_tensor(t, "a list element").sizes for t in value]


@register("hstack")
def hstack(c: OpCall) -> list[Sizes] | None:
    shapes = [_atleast(s, 1) for s in _tensors(c)]
    return [_join(c, shapes, 0 if len(shapes[0]) == 1 else 1)]


@register("vstack", "row_stack")
def vstack(c: OpCall) -> list[Sizes] | None:
    return [_join(c, [_atleast(s, 2) for s in _tensors(c)], 0)]


@register("dstack")
def dstack(c: OpCall) -> list[Sizes] | None:
    return [_join(c, [_atleast(s, 3) for s in _tensors(c)], 2)]


@register("column_stack")
def column_stack(c: OpCall) -> list[Sizes] | None:
    """0-d and 1-d tensors become columns (n, 1); then an hstack."""
    shapes = [(s[0] if s else ONE, ONE) if len(s) <= 1 else s for s in _tensors(c)]
    return [_join(c, shapes, 1)]
