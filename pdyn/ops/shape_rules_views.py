"""Shape rules for views, indexing and joins: reshape, permute, expand, squeeze, getitem, cat, split.

Registered into `pdyn.ops.shape_rules.RULES` on import. `view_groups` pairs the input and output dims
of a reshape (keep, merge, split) for code that lowers views.
"""

from __future__ import annotations

import logging
from typing import Any

import sympy
import torch

from pdyn.ops.shape_rules import (
    ONE,
    ZERO,
    OpCall,
    ShapeError,
    Sizes,
    SymTensor,
    as_int,
    as_tensor,
    broadcast,
    is_size,
    known,
    prod,
    register,
    sizes_arg,
)
from pdyn.shapes import size_arith
from pdyn.shapes.shape_env import CeilDiv, DataDependentRead, FloorDiv, ShapeEnv

log = logging.getLogger(__name__)



# -- reshape -------------------------------------------------------------------------------------


def _divides(c: OpCall, numel: sympy.Expr, part: sympy.Expr) -> None:
    """`part` divides `numel`: proved for every size by `size_arith.divides`, else a guard."""
    if size_arith.divides(numel, part):
        return
    numel, part = size_arith.split_common(numel, part)
    cond = sympy.Eq(sympy.Mod(numel, part, evaluate=False), 0, evaluate=False)
    c.require(cond, f"the -1 size needs {part} to divide {numel}")


def reshape_sizes(c: OpCall, sizes: Sizes, shape: list[Any]) -> Sizes:
    """The sizes a view/reshape to `shape` gives; -1 is the number of elements left over."""
    if not all(is_size(s) for s in shape):
        raise ShapeError(f"{c.name()}: sizes must be ints, got {shape}")
    infer = [i for i, s in enumerate(shape) if as_int(s) == -1]
    if len(infer) > 1:
        raise ShapeError(f"{c.name()}: only one dimension can be -1")
    for i, size in enumerate(shape):
        if i not in infer:
            c.require(sympy.Ge(size, 0, evaluate=False), "sizes must be non-negative")
    numel = prod(sizes)
    out = [sympy.sympify(s) for s in shape]
    if infer:
        others = prod(s for i, s in enumerate(out) if i != infer[0])
        if c.is_zero(others):
            raise ShapeError(f"{c.name()}: the -1 size is ambiguous next to a 0")
        _divides(c, numel, others)
        out[infer[0]] = size_arith.exact_quotient(numel, others)
    elif not size_arith.same(prod(out), numel):
        c.require(sympy.Eq(prod(out), numel, evaluate=False), "a view keeps the number of elements")
    return tuple(out)


@register("view", "reshape")
def view(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.args[0] if c.args else c.kwargs.get("input"), "input")
    rest = list(c.args[1:]) or [c.kwargs.get("shape", c.kwargs.get("size"))]
    if len(rest) == 1 and isinstance(rest[0], torch.dtype):
        return None  # x.view(torch.int32) reinterprets the bytes
    out = reshape_sizes(c, x.sizes, sizes_arg(rest))
    _valid_view_at_every_size(c, x, out)
    return [out]


@register("view_as", "reshape_as")
def view_as(c: OpCall) -> list[Sizes] | None:
    a = c.bind("self", "other")
    x = as_tensor(a["self"], "self")
    out = reshape_sizes(c, x.sizes, list(as_tensor(a["other"], "other").sizes))
    _valid_view_at_every_size(c, x, out)
    return [out]


def _valid_view_at_every_size(c: OpCall, x: SymTensor, out: Sizes) -> None:
    """A `view` that merges dims is valid only where their strides line up, which the fake run
    checked at this call's sizes. A size first seen as 0 or 1 has a free stride there (and the
    strides of other dims may have involved it), so a merge of dims of a tensor whose layout the
    sizes do not decide (`x.t().view(-1)`) pins those sizes: at 3 eager raises. Splits and kept
    dims are valid at any strides; `reshape` never raises."""
    env = c.env
    ones = env.ones_first()
    if not ones or x.layout_known or c.name() not in ("view", "view_as") or not _merges(env, x.sizes, out, ones):
        return
    for sym in ones:   # a guard `s == 1` (an equality, not a value read: the policy keeps it a guard)
        env.evaluate_bool(sympy.Eq(sym, env.hints[sym], evaluate=False), c.loc,
                          "a view merging dims of a tensor whose strides may depend on it")


def _merges(env: ShapeEnv, src: Sizes, dst: Sizes, ones: list[sympy.Symbol]) -> bool:
    """Whether some group of `view_groups` joins two input dims that are not the constant 1, with
    the sizes first seen at 1 taken large (at 1 every grouping around them looks like a merge)."""
    if any(env.unbacked_in(s) for s in (*src, *dst)):
        return True
    large = ShapeEnv(hints={**env.hints, **{s: 1009 + 2 * i for i, s in enumerate(ones)}})
    try:
        groups = view_groups(large, src, dst)
    except (TypeError, ValueError):   # a size that does not evaluate (a float, a symbol of no hint)
        return True
    return any(sum(1 for i in ins if src[i] != 1) > 1 for ins, _ in groups)


def view_groups(env: ShapeEnv, src: Sizes, dst: Sizes) -> list[tuple[list[int], list[int]]]:
    """Runs of input dims and output dims with equal products: ([i], [j]) keeps a dim, (several,
    [j]) merges, ([i], several) splits. Where sympy cannot match the products, one group of all."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        ins: list[int] = []
        outs: list[int] = []
        while True:
            p_in, p_out = prod(src[k] for k in ins), prod(dst[k] for k in outs)
            if (ins or outs) and size_arith.same(p_in, p_out):
                break
            grow_in = j >= len(dst) or (i < len(src) and env.hint(p_in) <= env.hint(p_out))
            if grow_in and i < len(src):
                ins.append(i)
                i += 1
            elif j < len(dst):
                outs.append(j)
                j += 1
            else:
                return [(list(range(len(src))), list(range(len(dst))))]
        groups.append((ins, outs))
    return groups


@register("flatten")
def flatten(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "start_dim", "end_dim", start_dim=0, end_dim=-1)
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        c.dim(a["start_dim"], 0), c.dim(a["end_dim"], 0)
        return [(ONE,)]
    start, end = c.dim(a["start_dim"], x.ndim), c.dim(a["end_dim"], x.ndim)
    if start > end:
        raise ShapeError("flatten: start_dim cannot come after end_dim")
    return [x.sizes[:start] + (prod(x.sizes[start : end + 1]),) + x.sizes[end + 1 :]]


@register("unflatten")
def unflatten(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "sizes")
    x = as_tensor(a["input"], "input")
    d = c.dim(a["dim"], x.ndim)
    if x.ndim == 0 or not a["sizes"]:
        raise ShapeError("unflatten: needs a dim and a non-empty sizes")
    return [x.sizes[:d] + reshape_sizes(c, (x.sizes[d],), list(a["sizes"])) + x.sizes[d + 1 :]]


# -- dim order -----------------------------------------------------------------------------------


@register("permute")
def permute(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.args[0] if c.args else c.kwargs.get("input"), "input")
    if len(c.args) < 2 and "dims" not in c.kwargs:
        raise ShapeError("permute needs dims")
    order = sizes_arg(c.args[1:]) if len(c.args) > 1 else list(c.kwargs["dims"])
    dims = [c.dim(d, x.ndim) for d in order]
    if sorted(dims) != list(range(x.ndim)):
        raise ShapeError(f"permute: {order} is not a permutation of {x.ndim} dims")
    return [tuple(x.sizes[d] for d in dims)]


@register("transpose", "swapaxes", "swapdims")
def transpose(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim0", "dim1")
    x = as_tensor(a["input"], "input")
    d0, d1 = c.dim(a["dim0"], x.ndim), c.dim(a["dim1"], x.ndim)
    if x.ndim == 0:
        return [()]
    sizes = list(x.sizes)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    return [tuple(sizes)]


@register("t")
def t(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.bind("input")["input"], "input")
    if x.ndim > 2:
        raise ShapeError("t() expects a tensor with <= 2 dims")
    return [tuple(reversed(x.sizes))]


@register("movedim", "moveaxis")
def movedim(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "source", "destination")
    x = as_tensor(a["input"], "input")
    src = a["source"] if isinstance(a["source"], (list, tuple)) else [a["source"]]
    dst = a["destination"] if isinstance(a["destination"], (list, tuple)) else [a["destination"]]
    src, dst = [c.dim(d, x.ndim) for d in src], [c.dim(d, x.ndim) for d in dst]
    if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError("movedim: source and destination must be unique dims of equal count")
    if x.ndim == 0:
        return [()]
    order: list[int | None] = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(x.ndim) if i not in src)
    return [tuple(x.sizes[o if o is not None else next(rest)] for o in order)]


# -- expand, repeat, squeeze ---------------------------------------------------------------------


def expand_sizes(c: OpCall, sizes: Sizes, shape: list[Any]) -> Sizes:
    """`expand(shape)`: new leading dims, -1 keeps a dim, a dim of 1 grows, others must match."""
    if len(shape) < len(sizes) or not all(is_size(s) for s in shape):
        raise ShapeError(f"expand: {shape} cannot hold {len(sizes)} dims")
    lead = len(shape) - len(sizes)
    out: list[sympy.Expr] = []
    for i, want in enumerate(shape):
        have = sizes[i - lead] if i >= lead else None
        if as_int(want) == -1:
            if have is None:
                raise ShapeError("expand: -1 is not allowed in a new leading dim")
            out.append(have)
            continue
        c.require(sympy.Ge(want, 0, evaluate=False), "expanded sizes must be non-negative")
        if have is not None:
            want = c.stretch(have, want, f"expand of dim {i - lead}")
        out.append(sympy.sympify(want))
    return tuple(out)


@register("expand")
def expand(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.args[0], "self")
    if len(c.args) < 2 and "size" not in c.kwargs:
        raise ShapeError("expand needs sizes")
    shape = sizes_arg(c.args[1:]) if len(c.args) > 1 else list(c.kwargs["size"])
    return [expand_sizes(c, x.sizes, shape)]


@register("expand_as")
def expand_as(c: OpCall) -> list[Sizes] | None:
    a = c.bind("self", "other")
    return [expand_sizes(c, as_tensor(a["self"], "self").sizes, list(as_tensor(a["other"], "other").sizes))]


@register("broadcast_to")
def broadcast_to(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "size")
    return [expand_sizes(c, as_tensor(a["input"], "input").sizes, list(a["size"]))]


def repeat_sizes(c: OpCall, sizes: Sizes, times: list[Any]) -> Sizes:
    """Each dim times its count; counts beyond the dims are new leading dims."""
    if len(times) < len(sizes) or not all(is_size(r) for r in times):
        raise ShapeError(f"{c.name()}: needs at least one count per dim")
    for r in times:
        c.require(sympy.Ge(r, 0, evaluate=False), "repeat counts must be non-negative")
    lead = len(times) - len(sizes)
    return tuple(sympy.sympify(r) for r in times[:lead]) + tuple(r * s for r, s in zip(times[lead:], sizes))


@register("repeat")
def repeat(c: OpCall) -> list[Sizes] | None:
    x = as_tensor(c.args[0], "self")
    if len(c.args) < 2 and "repeats" not in c.kwargs:
        raise ShapeError("repeat needs counts")
    times = sizes_arg(c.args[1:]) if len(c.args) > 1 else list(c.kwargs["repeats"])
    return [repeat_sizes(c, x.sizes, times)]


@register("tile")
def tile(c: OpCall) -> list[Sizes] | None:
    """repeat, with counts of 1 in front when fewer counts than dims are given."""
    x = as_tensor(c.args[0] if c.args else c.kwargs.get("input"), "input")
    if len(c.args) < 2 and "dims" not in c.kwargs:
        raise ShapeError("tile needs dims")
    times = sizes_arg(c.args[1:]) if len(c.args) > 1 else list(c.kwargs["dims"])
    return [repeat_sizes(c, x.sizes, [1] * (x.ndim - len(times)) + times)]


@register("repeat_interleave")
def repeat_interleave(c: OpCall) -> list[Sizes] | None:
    """An int count multiplies `dim` (the flattened tensor without one); tensor counts are data,
    unless `output_size` names the result's length."""
    a = c.bind("input", "repeats", "dim", "output_size", repeats=None, dim=None, output_size=None)
    x, repeats = as_tensor(a["input"], "input"), a["repeats"]
    if repeats is None:
        return None  # repeat_interleave(counts): indices, as many as the counts add up to
    if isinstance(repeats, SymTensor):
        if a["output_size"] is None or repeats.ndim > 1:
            return None
        length: Any = a["output_size"]
    elif is_size(repeats):
        c.require(sympy.Ge(repeats, 0, evaluate=False), "repeats must be non-negative")
        length = None
    else:
        return None
    if a["dim"] is None:
        return [(length if length is not None else prod(x.sizes) * repeats,)]
    if x.ndim == 0:
        raise ShapeError("repeat_interleave: a 0-d tensor has no dim to repeat along")
    d = c.dim(a["dim"], x.ndim)
    if isinstance(repeats, SymTensor) and repeats.ndim:
        c.stretch(repeats.sizes[0], x.sizes[d], "one count per entry of the dim")
    return [x.sizes[:d] + (length if length is not None else x.sizes[d] * repeats,) + x.sizes[d + 1 :]]


@register("squeeze")
def squeeze(c: OpCall) -> list[Sizes] | None:
    """Drops dims of size 1; a symbolic dim is >= 2 and stays; an expression is decided (guarded)."""
    a = c.bind("input", "dim", dim=None)
    x = as_tensor(a["input"], "input")
    dim = a["dim"]
    if dim is None:
        dims = set(range(x.ndim))
    else:
        listed = [c.dim(d, x.ndim) for d in (dim if isinstance(dim, (list, tuple)) else [dim])]
        dims = set(listed)
        if len(dims) != len(listed):
            raise ShapeError("squeeze: a dim appears more than once")
    for i in sorted(dims):  # eager drops a dim of 1: the result's rank would depend on the data
        if c.env.unbacked_in(x.sizes[i]) and known(c.env, sympy.Eq(x.sizes[i], 1, evaluate=False)) is None:
            raise DataDependentRead(f"squeeze: whether dim {i} (of size {x.sizes[i]}) is 1, and so the "
                                    "result's rank, depends on tensor data", c.loc)
    return [tuple(s for i, s in enumerate(x.sizes) if not (i in dims and c.is_one(s)))]


@register("unsqueeze")
def unsqueeze(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim")
    x = as_tensor(a["input"], "input")
    d = c.dim(a["dim"], x.ndim + 1)
    return [x.sizes[:d] + (ONE,) + x.sizes[d:]]


# -- getitem -------------------------------------------------------------------------------------


def _clamp_bound(c: OpCall, bound: Any, size: sympy.Expr) -> sympy.Expr:
    """A slice bound as an index in [0, size]: negative counts from the end, then clamped."""
    bound = sympy.sympify(bound)
    if c.check(sympy.Lt(bound, 0, evaluate=False), "the sign of a slice bound"):
        bound = bound + size
        low = known(c.env, sympy.Ge(bound, 0, evaluate=False))
        return bound if low else (ZERO if low is False else sympy.Max(bound, 0))
    high = known(c.env, sympy.Le(bound, size, evaluate=False))
    return bound if high else (size if high is False else sympy.Min(bound, size))


def slice_size(c: OpCall, size: sympy.Expr, item: slice) -> sympy.Expr:
    """Length of `item` applied to a dim of `size`, with Min/Max where the clamping is not known."""
    step = 1 if item.step is None else c.value(item.step, "a slice step")
    if step <= 0:
        raise ShapeError("slice step must be positive")
    start = ZERO if item.start is None else _clamp_bound(c, item.start, size)
    stop = size if item.stop is None else _clamp_bound(c, item.stop, size)
    span = stop - start
    length = span if step == 1 else CeilDiv(span, step)
    nonneg = known(c.env, sympy.Ge(span, 0, evaluate=False))
    return length if nonneg else (ZERO if nonneg is False else sympy.Max(length, 0))


def _spelled_out(items: list[Any], ndim: int) -> list[Any]:
    """Index items with `...` (at most one) and the missing trailing dims as full slices."""
    consumed = sum(1 for it in items if it is not None and it is not Ellipsis)
    if consumed > ndim:
        raise ShapeError(f"too many indices ({consumed}) for a tensor of {ndim} dims")
    fill = [slice(None)] * (ndim - consumed)
    if Ellipsis in items:
        at = items.index(Ellipsis)
        return items[:at] + fill + items[at + 1 :]
    return items + fill


def index_sizes(c: OpCall, x: SymTensor, index: Any) -> Sizes | None:
    """Sizes of `x[index]` for ints, slices, None and `...`; None for tensor/bool/list indices."""
    items = list(index) if isinstance(index, tuple) else [index]
    if not all(it is None or it is Ellipsis or isinstance(it, slice) or is_size(it) for it in items):
        return None
    if items.count(Ellipsis) > 1:
        return None
    items = _spelled_out(items, x.ndim)
    out: list[sympy.Expr] = []
    d = 0
    for it in items:
        if it is None:
            out.append(ONE)
            continue
        size = x.sizes[d]
        d += 1
        if isinstance(it, slice):
            out.append(slice_size(c, size, it))
        elif c.check(sympy.Lt(it, 0, evaluate=False), "the sign of an index"):
            c.require(sympy.Ge(it + size, 0, evaluate=False), f"index {it} in range of a dim of {size}")
        else:
            c.require(sympy.Lt(it, size, evaluate=False), f"index {it} in range of a dim of {size}")
    return tuple(out)


def _int_list(it: Any) -> bool:
    """A non-empty list of Python ints in an index: torch indexes with it as a 1-d int64 tensor."""
    return type(it) is list and bool(it) and all(type(v) is int for v in it)


def _is_index_item(it: Any) -> bool:
    return (it is None or it is Ellipsis or isinstance(it, slice) or isinstance(it, SymTensor) or is_size(it)
            or _int_list(it))


def _index_shape(it: Any) -> Sizes:
    return it.sizes if isinstance(it, SymTensor) else (sympy.Integer(len(it)),)


def advanced_index_sizes(c: OpCall, x: SymTensor, index: Any) -> Sizes | None:
    """Sizes of `x[index]` where some items are integer tensors, as torch computes them: ints
    select first (their dims go), then the tensors broadcast together, and the broadcast shape
    takes the place of the first tensor when the tensors are adjacent, else it goes first. A list of
    ints is such a tensor (each value checked in range like an int index). None for a bool mask (its
    size depends on the data), a 0-d tensor (torch reads its value) and other lists."""
    items = list(index) if isinstance(index, tuple) else [index]
    if not all(_is_index_item(it) for it in items) or items.count(Ellipsis) > 1:
        return None
    if any(isinstance(it, SymTensor) and (it.dtype in (torch.bool, torch.uint8) or it.dtype.is_floating_point
                                          or it.ndim == 0) for it in items):
        return None  # a mask, or a 0-d tensor, which torch reads as an int (its value)
    items = _spelled_out(items, x.ndim)
    parts: list[sympy.Expr | None] = []  # a result dim, or None where a tensor index stands
    d = 0
    for it in items:
        if it is None:
            parts.append(ONE)
            continue
        size = x.sizes[d]
        d += 1
        if isinstance(it, slice):
            parts.append(slice_size(c, size, it))
        elif isinstance(it, SymTensor):
            parts.append(None)
        elif isinstance(it, list):
            for v in it:
                index_sizes(c, SymTensor((size,), x.dtype), v)
            parts.append(None)
        else:  # an int selects: checked like a plain index, its dim goes
            index_sizes(c, SymTensor((size,), x.dtype), it)
    shape = list(broadcast(c, *(_index_shape(it) for it in items if isinstance(it, (SymTensor, list)))))
    at = [i for i, p in enumerate(parts) if p is None]
    basic = [p for p in parts if p is not None]
    if at == list(range(at[0], at[-1] + 1)):
        return tuple(basic[:at[0]] + shape + basic[at[0]:])
    return tuple(shape + basic)


@register("getitem")
def getitem(c: OpCall) -> list[Sizes] | None:
    if len(c.args) != 2 or not isinstance(c.args[0], SymTensor):
        return None
    out = index_sizes(c, c.args[0], c.args[1])
    if out is None:
        out = advanced_index_sizes(c, c.args[0], c.args[1])
    return None if out is None else [out]


# -- cat, stack, split ---------------------------------------------------------------------------


def _tensor_list(c: OpCall, value: Any) -> list[SymTensor]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ShapeError(f"{c.name()} expects a non-empty list of tensors")
    return [as_tensor(t, "a list element") for t in value]


@register("cat", "concat", "concatenate")
def cat(c: OpCall) -> list[Sizes] | None:
    """Sizes agree except along `dim`, which adds up; 1-D empty tensors are skipped (legacy)."""
    dim = c.kwargs.get("dim", c.kwargs.get("axis", c.args[1] if len(c.args) > 1 else 0))
    tensors = _tensor_list(c, c.args[0] if c.args else c.kwargs.get("tensors"))
    kept = [t for t in tensors if t.sizes != (ZERO,)]
    if not kept:
        return [(ZERO,)]
    first = kept[0]
    d = c.dim(dim, first.ndim)
    if first.ndim == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated")
    out = list(first.sizes)
    for t in kept[1:]:
        if t.ndim != first.ndim:
            raise ShapeError("cat: tensors must have the same number of dims")
        for i in range(first.ndim):
            if i != d:
                out[i] = c.equal(out[i], t.sizes[i], f"cat sizes of dim {i}")
    out[d] = sum((t.sizes[d] for t in kept), ZERO)
    return [tuple(out)]


@register("stack")
def stack(c: OpCall) -> list[Sizes] | None:
    dim = c.kwargs.get("dim", c.args[1] if len(c.args) > 1 else 0)
    tensors = _tensor_list(c, c.args[0] if c.args else c.kwargs.get("tensors"))
    out = list(tensors[0].sizes)
    for t in tensors[1:]:
        if t.ndim != len(out):
            raise ShapeError("stack expects each tensor to be equal size")
        out = [c.equal(a, b, "stack sizes") for a, b in zip(out, t.sizes)]
    d = c.dim(dim, len(out) + 1)
    return [tuple(out[:d]) + (sympy.Integer(len(tensors)),) + tuple(out[d:])]


def _with_dim(sizes: Sizes, d: int, length: Any) -> Sizes:
    return sizes[:d] + (sympy.sympify(length),) + sizes[d + 1 :]


@register("split", "split_with_sizes")
def split(c: OpCall) -> list[Sizes] | None:
    """A list of sizes must add up to the dim; an int split size reads the dim's value."""
    a = c.bind("input", "split_size_or_sections", "dim", dim=0)
    if "split_size" in c.kwargs or "split_sizes" in c.kwargs:
        return None
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        raise ShapeError("split of a 0-d tensor")
    d = c.dim(a["dim"], x.ndim)
    sections = a["split_size_or_sections"]
    if isinstance(sections, (list, tuple)):
        if not all(is_size(s) for s in sections):
            raise ShapeError("split sizes must be ints")
        # the data-dependent sizes' check is one runtime assert (one node, not one per size)
        unbacked = [sympy.Ge(s, 0, evaluate=False) for s in sections if c.env.unbacked_in(s)]
        if unbacked:
            c.require(sympy.And(*unbacked), "split sizes must be non-negative")
        for s in sections:
            if not c.env.unbacked_in(s):
                c.require(sympy.Ge(s, 0, evaluate=False), "split sizes must be non-negative")
        # one Add of all the sizes (a running sum is quadratic in sympy for hundreds of them)
        c.equal(sympy.Add(*(sympy.sympify(s) for s in sections)), x.sizes[d], "split sizes add up to the dim")
        return [_with_dim(x.sizes, d, s) for s in sections]
    n = c.value(x.sizes[d], "the number of outputs of split")
    pieces = torch.empty(n, device="meta").split(c.value(sections, "a split size"))
    return [_with_dim(x.sizes, d, p.shape[0]) for p in pieces]


@register("chunk")
def chunk(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "chunks", "dim", dim=0)
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        raise ShapeError("chunk of a 0-d tensor")
    d = c.dim(a["dim"], x.ndim)
    chunks = c.value(a["chunks"], "a chunk count")
    n = c.value(x.sizes[d], "the number of outputs of chunk")
    pieces = torch.empty(n, device="meta").chunk(chunks)
    return [_with_dim(x.sizes, d, p.shape[0]) for p in pieces]


@register("unbind")
def unbind(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", dim=0)
    x = as_tensor(a["input"], "input")
    if x.ndim == 0:
        raise ShapeError("unbind of a 0-d tensor")
    d = c.dim(a["dim"], x.ndim)
    n = c.value(x.sizes[d], "the number of outputs of unbind")
    return [x.sizes[:d] + x.sizes[d + 1 :]] * n


@register("getattr")
def tensor_attribute(c: OpCall) -> list[Sizes] | None:
    """`x.T`, `x.mT`, `x.real`, ...: recorded as getattr(x, name) nodes."""
    x, name = c.args[0], c.args[1]
    if not isinstance(x, SymTensor):
        return None
    if name in ("real", "imag", "data"):
        return [x.sizes]
    if name in ("T", "H"):
        return [tuple(reversed(x.sizes))]
    if name in ("mT", "mH") and x.ndim >= 2:
        return [(*x.sizes[:-2], x.sizes[-1], x.sizes[-2])]
    return None
