"""View ops as index arithmetic (reshape by keep/merge/split groups, permute, expand, slicing,
squeeze/unsqueeze, select), plus `cat` as a pointwise of masked loads. Views keep their fx node so
a consumer that needs a real tensor replays the view with torch on the realized base.
"""

from __future__ import annotations

from typing import Any, Callable

import sympy
import torch

from pdyn.backends.triton.graph_lowering import GraphLowering, NotLowered
from pdyn.backends.triton.ir import Handler, Index, Pointwise, Scalar, Val, View, compute_dtype
from pdyn.backends.triton.lowering import operand, register
from pdyn.ops import op_of
from pdyn.backends.triton.symbolic import floordiv, moddim
from pdyn.ops.shape_rules_views import view_groups

Reindex = Callable[[Index], Index]


def view(lx: GraphLowering, node: Any, base: Pointwise, reindex: Reindex) -> View:
    if not isinstance(base, Pointwise):
        raise NotLowered("view of a non-tensor")

    def fn(h: Handler, idx: Index) -> Val:
        return base.fn(h, reindex(idx))

    return View(lx.ranges(node), base.dtype, fn, base.reads, base.ops, node=node, base=base)


def reshape_reindex(lx: GraphLowering, src: list[sympy.Expr], dst: list[sympy.Expr]) -> Reindex:
    # size-1 dims index nothing: left out, a kept dim stays one load index instead of a division
    groups = [([i for i in gs if src[i] != 1], [j for j in gd if dst[j] != 1])
              for gs, gd in view_groups(lx.sym.hints_env(), src, dst)]

    def reindex(idx: Index) -> Index:
        out: Index = [sympy.Integer(0)] * len(src)
        for gs, gd in groups:
            if len(gs) == 1 and len(gd) == 1:
                out[gs[0]] = idx[gd[0]]
                continue
            flat, stride = sympy.Integer(0), sympy.Integer(1)
            for j in reversed(gd):
                flat, stride = flat + idx[j] * stride, stride * dst[j]
            stride = sympy.Integer(1)
            for k, i in enumerate(reversed(gs)):
                q = floordiv(flat, stride)
                out[i] = q if k == len(gs) - 1 else moddim(q, src[i])
                stride = stride * src[i]
        return out

    return reindex


@register("view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "view_as", "reshape_as")
def lower_reshape(lx: GraphLowering, node: Any, x: Any, *args: Any, **kwargs: Any) -> View:
    if not isinstance(x, Pointwise) or (args and isinstance(args[0], torch.dtype)):
        raise NotLowered("view as dtype")
    return view(lx, node, x, reshape_reindex(lx, list(x.ranges), lx.ranges(node)))


@register("permute", "transpose", "swapaxes", "t")
def lower_permute(lx: GraphLowering, node: Any, x: Any, *dims: Any, **kwargs: Any) -> View:
    n = len(x.ranges)
    name = op_of(node).name
    if name == "permute":
        perm = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], (list, tuple)) else list(dims)
        perm = perm or list(kwargs["dims"])
    elif name in ("transpose", "swapaxes"):
        a, b = (dims + tuple(kwargs.values()))[:2]
        perm = list(range(n))
        perm[a % n], perm[b % n] = perm[b % n], perm[a % n]
    else:
        perm = list(reversed(range(n))) if name != "mT" else list(range(n - 2)) + [n - 1, n - 2]
    perm = [p % n for p in perm]

    def reindex(idx: Index) -> Index:
        out: Index = [sympy.Integer(0)] * n
        for o, p in enumerate(perm):
            out[p] = idx[o]
        return out

    return view(lx, node, x, reindex)


@register("contiguous")
def lower_contiguous(lx: GraphLowering, node: Any, x: Any, *args: Any, **kwargs: Any) -> Pointwise:
    """Eager returns `x` itself where it is already contiguous (a later write to the result shows
    in x), else a copy. A view of storage is decided from its strides: the view, a copy, or (when
    the sizes do not settle it) torch's own call."""
    if not isinstance(x, Pointwise) or kwargs.get("memory_format", torch.contiguous_format) != torch.contiguous_format:
        raise NotLowered("contiguous of these inputs")
    if x.buffer is not None:
        raise NotLowered("contiguous of a stored tensor may alias")
    # NOTE: a view of a value no buffer holds yet (`linear(x).view(..).transpose(1, 2)`) is
    # copied: its base is a temporary nothing else sees
    strides = view_strides(x) if isinstance(x, View) else "computed"
    if strides != "computed":
        contiguous = None if strides is None else is_contiguous(lx, list(x.ranges), strides)
        if contiguous is None:
            raise NotLowered("whether the view is contiguous depends on the sizes")
        if contiguous:
            return x
    return Pointwise(list(x.ranges), x.dtype, x.fn, x.reads, x.ops)


class _StrideProbe:
    """A Handler that only follows index arithmetic: a view's element closure down to the loads
    it makes (anything else, an op, means the view is not of stored data)."""

    def __init__(self) -> None:
        self.loads: list[sympy.Expr] = []

    def load(self, buffer: Any, index: sympy.Expr) -> Val:
        self.loads.append(index)
        return Val("probe", compute_dtype(buffer.dtype))

    def cast(self, v: Val, dtype: torch.dtype) -> Val:
        if compute_dtype(dtype) != v.dtype:
            raise NotLowered("a cast")
        return v

    def __getattr__(self, name: str) -> Any:
        raise NotLowered(f"{name} in a view")


def view_strides(x: View) -> list[sympy.Expr] | str | None:
    """The strides of a view of a buffer, read off its load index where that is linear in the
    view's index (a merge of dims divides: None); "computed" for a view of a computed value."""
    syms = [sympy.Symbol(f"probe{d}", integer=True, nonnegative=True) for d in range(len(x.ranges))]
    probe = _StrideProbe()
    try:
        x.fn(probe, list(syms))
    except NotLowered:
        return "computed"
    if len(probe.loads) != 1:
        return "computed"
    index = sympy.expand(probe.loads[0])
    strides = [index.coeff(s) for s in syms]
    rest = sympy.expand(index - sum((c * s for c, s in zip(strides, syms)), sympy.Integer(0)))
    if rest.free_symbols & set(syms) or any(c.free_symbols & set(syms) for c in strides):
        return None
    return strides


def is_contiguous(lx: GraphLowering, sizes: list[sympy.Expr], strides: list[sympy.Expr]) -> bool | None:
    """Eager's is_contiguous for every size the entry serves: True, False, or None (it depends).
    Input dims are at least 2 (0 and 1 are specialized), stride symbols at least 0."""
    bound = {sym: (2 if ".shape[" in text and lx.sym.hints.get(sym, 0) >= 2 else 0)
             for sym, text in lx.sym.bindings}
    bound.update({sym: 0 for sym, _ in lx.stride_bindings})

    def shifted(e: sympy.Expr) -> sympy.Expr | None:
        if not e.free_symbols <= set(bound):
            return None
        return sympy.expand(e.subs({s: bound[s] + sympy.Symbol(f"{s}_", integer=True, nonnegative=True)
                                    for s in e.free_symbols}))

    expected, surely = sympy.Integer(1), True
    for size, stride in zip(reversed(sizes), reversed(strides)):
        if size != 1:
            diff = sympy.expand(stride - expected)
            if diff != 0:
                at_least_2, apart = shifted(size - 2), shifted(diff)
                if at_least_2 is not None and apart is not None and at_least_2.is_nonnegative and \
                        (apart.is_positive or apart.is_negative):
                    return False  # one dim of 2 or more whose stride is not the dense one
                surely = False
        expected = expected * size
    return True if surely else None


@register("expand", "expand_as", "broadcast_to")
def lower_expand(lx: GraphLowering, node: Any, x: Any, *args: Any, **kwargs: Any) -> View:
    load, _, _ = operand(x, lx.ranges(node), x.dtype)
    value = view(lx, node, x, lambda idx: idx)
    value.fn = load
    return value


@register("detach", "alias")
def lower_alias(lx: GraphLowering, node: Any, x: Any) -> View:
    return view(lx, node, x, lambda idx: idx)


def _clamp_start(start: Any, size: sympy.Expr, hint_negative: bool) -> sympy.Expr:
    start = start.expr if isinstance(start, Scalar) else sympy.Integer(start)
    if hint_negative:
        return sympy.Max(0, start + size)
    return sympy.Min(start, size)


def _index_items(lx: GraphLowering, x: Pointwise, items: tuple[Any, ...]) -> Reindex:
    """Reindex for x[items] with ints, slices, None and one Ellipsis."""
    consuming = sum(1 for it in items if it is not None and it is not Ellipsis)
    expanded: list[Any] = []
    for it in items:
        expanded += [slice(None)] * (len(x.ranges) - consuming) if it is Ellipsis else [it]
    expanded += [slice(None)] * (len(x.ranges) - sum(1 for it in expanded if it is not None))
    plan: list[tuple[str, Any]] = []
    d = 0
    for it in expanded:
        if it is None:
            plan.append(("new", None))
            continue
        size = x.ranges[d]
        if isinstance(it, (int, Scalar)) and not isinstance(it, bool):
            v = it if isinstance(it, int) else lx.sym.hint(it.expr)
            plan.append(("at", _clamp_start(it, size, v < 0)))
        elif isinstance(it, slice):
            step = 1 if it.step is None else it.step
            if not isinstance(step, int) or step <= 0:
                raise NotLowered("slice step")
            start = 0 if it.start is None else it.start
            v = start if isinstance(start, int) else lx.sym.hint(start.expr)
            plan.append(("slice", (_clamp_start(start, size, v < 0), step)))
        else:
            raise NotLowered(f"index item {type(it).__name__}")
        d += 1

    def reindex(idx: Index) -> Index:
        out: Index = []
        o = 0
        for kind, arg in plan:
            if kind == "at":
                out.append(arg)
            elif kind == "slice":
                out.append(arg[0] + arg[1] * idx[o])
            o += kind != "at"
        return out

    return reindex


@register("getitem")
def lower_getitem(lx: GraphLowering, node: Any, x: Any, items: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return x[items]
    if not isinstance(x, Pointwise):
        raise NotLowered("getitem on a runtime object")
    items = items if isinstance(items, tuple) else (items,)
    return view(lx, node, x, _index_items(lx, x, items))


@register("select")
def lower_select(lx: GraphLowering, node: Any, x: Any, dim: int, index: Any) -> View:
    items = (slice(None),) * (dim % len(x.ranges)) + (index,)
    return view(lx, node, x, _index_items(lx, x, items))


@register("narrow")
def lower_narrow(lx: GraphLowering, node: Any, x: Any, dim: int, start: Any, length: Any) -> View:
    items = (slice(None),) * (dim % len(x.ranges)) + (slice(start, None),)
    return view(lx, node, x, _index_items(lx, x, items))


@register("cat", "concat", "concatenate")
def lower_cat(lx: GraphLowering, node: Any, tensors: Any, dim: int = 0) -> Pointwise:
    ranges = lx.ranges(node)
    dim = dim % len(ranges)
    parts = [t for t in tensors if not (len(t.ranges) == 1 and t.ranges[0] == 0)]
    if not parts or any(not isinstance(t, Pointwise) or len(t.ranges) != len(ranges) for t in parts):
        raise NotLowered("cat of these inputs")
    dtype = lx.fake(node).dtype
    offsets = [sympy.Integer(0)]
    for t in parts:
        offsets.append(offsets[-1] + t.ranges[dim])
    loads = [operand(t, ranges, dtype)[0] for t in parts]

    def fn(h: Handler, idx: Index) -> Val:
        i = h.index_value(idx[dim], torch.int64)
        result: Val | None = None
        for j in reversed(range(len(parts))):
            shifted = list(idx)
            shifted[dim] = idx[dim] - offsets[j]
            below = h.op("lt", torch.bool, i, h.scalar(offsets[j + 1], torch.int64))
            start = h.op("ge", torch.bool, i, h.scalar(offsets[j], torch.int64))
            inside = h.op("and", torch.bool, start, below)
            v = h.masked(inside, lambda s=shifted, ld=loads[j]: ld(h, s), 0)
            result = v if result is None else h.op("where", v.dtype, below, v, result)
        assert result is not None
        return result

    reads = frozenset().union(*[t.reads for t in parts])
    return lx.maybe_realize(node, Pointwise(ranges, dtype, fn, reads, 4 * len(parts)))


def reshape_reindex_plain(src: list[sympy.Expr]) -> Reindex:
    """Flat index -> index of `src` (row-major)."""

    def reindex(idx: Index) -> Index:
        out: Index = []
        stride = sympy.Integer(1)
        for k in reversed(range(len(src))):
            q = floordiv(idx[0], stride)
            out.append(q if k == 0 else moddim(q, src[k]))
            stride = stride * src[k]
        return list(reversed(out))

    return reindex
