"""Memory layouts as eager makes them: an order of the dims, innermost first, each dim dense in that
order. Size-1 dims have a place in the order too, so their strides come out as eager's (the product
of the sizes inside them); one order serves every size, symbolic or not.
"""

from __future__ import annotations

from typing import Any, Sequence

Layout = tuple[int, ...]  # dims, innermost first


def order(sizes: Sequence[int], strides: Sequence[int]) -> Layout:
    """Dims by stride, innermost first; a size-1 dim goes inside a larger dim of equal stride."""
    return tuple(sorted(range(len(sizes)), key=lambda d: (strides[d], sizes[d] != 1, -d)))


def dense(sizes: Sequence[Any], layout: Layout) -> list[Any]:
    """The strides of a tensor of `sizes` stored densely in `layout` (ints or sympy sizes)."""
    strides: list[Any] = [0] * len(sizes)
    acc: Any = 1
    for d in layout:
        strides[d] = acc
        acc = acc * sizes[d]
    return strides


def layout_of(sizes: Sequence[int], strides: Sequence[int]) -> Layout | None:
    """The layout giving exactly these strides, or None (a slice, an expanded view, ...)."""
    lay = order(sizes, strides)
    return lay if dense(sizes, lay) == list(strides) else None


def stride_order(strides: dict[int, int]) -> list[tuple[int, str, int]]:
    """How the strides of a tensor compare, neighbour by neighbour in stride order (`strides`:
    dim -> the example's stride, size-1 dims left out): `(p, "<", q)` or `(p, "==", q)`. While
    they hold, eager lays results out in the same order."""
    dims = sorted(strides, key=lambda d: (strides[d], -d))
    return [(p, "==" if strides[p] == strides[q] else "<", q) for p, q in zip(dims, dims[1:])]
