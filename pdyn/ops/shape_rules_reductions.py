"""Shape rules for reductions, matrix products and factory functions.

Registered into `pdyn.ops.shape_rules.RULES` on import (shape_rules imports this module); the registry,
`OpCall` and the guard helpers live there.
"""

from __future__ import annotations

import logging
from typing import Any

import sympy
import torch

from pdyn.ops.shape_rules import (
    ONE,
    OpCall,
    ShapeError,
    Sizes,
    SymTensor,
    as_int,
    as_tensor,
    broadcast,
    is_size,
    register,
    sizes_arg,
)
from pdyn.ops.catalogue import LIKE
from pdyn.shapes.shape_env import CeilDiv

log = logging.getLogger(__name__)



# -- reductions ----------------------------------------------------------------------------------


def reduce_sizes(
    c: OpCall, x: SymTensor, dim: Any, keepdim: Any, nonempty: bool = False, empty_is_all: bool = True
) -> Sizes:
    """Sizes after reducing `dim` (None, an int, or a sequence; an empty sequence means all dims,
    or none for any/all). `nonempty`: the op has no identity (max), so a reduced dim must not be 0.
    """
    if isinstance(dim, (list, tuple)) and len(dim) == 0 and not empty_is_all:
        return x.sizes
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        dims = list(range(x.ndim))
    elif isinstance(dim, (list, tuple)):
        dims = [c.dim(d, x.ndim) for d in dim]
    else:
        dims = [c.dim(dim, x.ndim)]
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{c.name()}: dim {dims} appears more than once")
    if nonempty:
        for d in dims if x.ndim else []:
            if c.is_zero(x.sizes[d]):
                raise ShapeError(f"{c.name()}: cannot reduce dim {d} of size 0")
    if keepdim:
        return tuple(ONE if i in dims else s for i, s in enumerate(x.sizes))
    return tuple(s for i, s in enumerate(x.sizes) if i not in dims)


def _keepdim(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ShapeError(f"keepdim must be a bool, got {value!r}")
    return value


@register("sum", "mean", "nansum", "nanmean", "prod", "any", "all", "count_nonzero")
def sum_like(c: OpCall) -> list[Sizes] | None:
    if c.target in ("count_nonzero", torch.count_nonzero, torch.Tensor.count_nonzero):
        a = c.bind("input", "dim", dim=None)
        return [reduce_sizes(c, as_tensor(a["input"], "input"), a["dim"], False)]
    a = c.bind("input", "dim", "keepdim", "dtype", dim=None, keepdim=False)
    x = as_tensor(a["input"], "input")
    name = c.name()
    if isinstance(a["dim"], torch.dtype):  # x.sum(torch.float64)
        return [()]
    if name in ("any", "all"):
        return [reduce_sizes(c, x, a["dim"], _keepdim(a["keepdim"]), empty_is_all=False)]
    if "keepdim" in c.kwargs and len(c.args) < 2 and "dim" not in c.kwargs:
        raise ShapeError(f"{name}: keepdim needs a dim")
    if name == "prod" and ("dim" in c.kwargs or len(c.args) > 1) and as_int(a["dim"]) is None:
        raise ShapeError("prod: dim must be an int")
    return [reduce_sizes(c, x, a["dim"], _keepdim(a["keepdim"]))]


@register("amax", "amin")
def amax(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "keepdim", dim=(), keepdim=False)
    return [reduce_sizes(c, as_tensor(a["input"], "input"), a["dim"], _keepdim(a["keepdim"]), True)]


@register("logsumexp")
def logsumexp(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "keepdim", keepdim=False)
    if a["dim"] is None:
        raise ShapeError("logsumexp needs a dim")
    if isinstance(a["dim"], (list, tuple)) and not a["dim"]:
        return None  # dim=() keeps every dim as 1 on meta; not worth a rule
    return [reduce_sizes(c, as_tensor(a["input"], "input"), a["dim"], _keepdim(a["keepdim"]))]


@register("argmax", "argmin")
def argmax(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "dim", "keepdim", dim=None, keepdim=False)
    x = as_tensor(a["input"], "input")
    if a["dim"] is not None and as_int(a["dim"]) is None and not isinstance(a["dim"], sympy.Expr):
        raise ShapeError(f"{c.name()}: dim must be an int")
    if a["dim"] is None:
        if x.ndim and c.is_zero(sympy.Mul(*x.sizes)):
            raise ShapeError(f"{c.name()} of an empty tensor")
        return [tuple(ONE for _ in x.sizes) if _keepdim(a["keepdim"]) else ()]
    return [reduce_sizes(c, x, a["dim"], _keepdim(a["keepdim"]), True)]


@register("max", "min")
def max_min(c: OpCall) -> list[Sizes] | None:
    """`max(x)`: a scalar; `max(x, other)`: pointwise; `max(x, dim)`: (values, indices)."""
    x = as_tensor(c.args[0] if c.args else c.kwargs.get("input"), "input")
    rest = list(c.args[1:]) + [v for k, v in c.kwargs.items() if k in ("other",)]
    if any(isinstance(v, SymTensor) for v in rest):
        return [broadcast(c, x.sizes, *(v.sizes for v in rest if isinstance(v, SymTensor)))]
    if not rest and "dim" not in c.kwargs:
        if "keepdim" in c.kwargs:
            raise ShapeError(f"{c.name()}: keepdim needs a dim")
        if x.ndim and c.is_zero(sympy.Mul(*x.sizes)):
            raise ShapeError(f"{c.name()} of an empty tensor")
        return [()]
    a = c.bind("input", "dim", "keepdim", keepdim=False)
    if as_int(a["dim"]) is None and not isinstance(a["dim"], sympy.Expr):
        raise ShapeError(f"{c.name()}: dim must be an int")
    out = reduce_sizes(c, x, a["dim"], _keepdim(a["keepdim"]), True)
    return [out, out]


def _var_args(c: OpCall) -> dict[str, Any]:
    """var/std(input, dim, unbiased, keepdim) or (input, unbiased) or with correction=."""
    args = list(c.args)
    if len(args) >= 2 and isinstance(args[1], bool):
        args.insert(1, None)  # var(x, True): unbiased, all dims
    call = OpCall(c.env, c.target, tuple(args), {k: v for k, v in c.kwargs.items()}, c.loc)
    return call.bind("input", "dim", "unbiased", "keepdim", "correction", dim=None, keepdim=False)


@register("var", "std")
def var(c: OpCall) -> list[Sizes] | None:
    a = _var_args(c)
    return [reduce_sizes(c, as_tensor(a["input"], "input"), a["dim"], _keepdim(a["keepdim"]))]


@register("var_mean", "std_mean")
def var_mean(c: OpCall) -> list[Sizes] | None:
    out = var(c)
    assert out is not None
    return out + out


@register("norm")
def norm(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "p", "dim", "keepdim", "dtype", p="fro", dim=None, keepdim=False)
    x = as_tensor(a["input"], "input")
    if a["p"] == "nuc":
        return None
    if isinstance(a["p"], str) and isinstance(a["dim"], (list, tuple)) and len(a["dim"]) > 2:
        raise ShapeError("norm: a matrix norm takes at most 2 dims")
    return [reduce_sizes(c, x, a["dim"], _keepdim(a["keepdim"]))]


# -- matrix products -----------------------------------------------------------------------------


def matmul_sizes(c: OpCall, a: Sizes, b: Sizes) -> Sizes:
    """torch.matmul: 1-D operands gain then lose a dim; batch dims broadcast."""
    if not a or not b:
        raise ShapeError(f"{c.name()}: both arguments need at least 1 dim")
    a2 = a if len(a) > 1 else (ONE, *a)
    b2 = b if len(b) > 1 else (*b, ONE)
    c.equal(a2[-1], b2[-2], "the inner dims of a matrix product")
    batch = broadcast(c, a2[:-2], b2[:-2])
    return batch + (a2[-2],) * (len(a) > 1) + (b2[-1],) * (len(b) > 1)


@register("matmul")
def matmul(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "other")
    return [matmul_sizes(c, as_tensor(a["input"], "input").sizes, as_tensor(a["other"], "other").sizes)]


@register("__rmatmul__")
def rmatmul(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "other")
    return [matmul_sizes(c, as_tensor(a["other"], "other").sizes, as_tensor(a["input"], "input").sizes)]


def _ndims(c: OpCall, tensors: dict[str, Any], ndim: int) -> list[Sizes]:
    out = []
    for name, t in tensors.items():
        t = as_tensor(t, name)
        if t.ndim != ndim:
            raise ShapeError(f"{c.name()}: {name} must have {ndim} dims, has {t.ndim}")
        out.append(t.sizes)
    return out


@register("cdist")
def cdist(c: OpCall) -> list[Sizes] | None:
    """(*batch, P, M) and (*batch, R, M) give (*batch, P, R), the batches broadcast."""
    a = c.bind("x1", "x2", "p", "compute_mode")
    x, y = as_tensor(a["x1"], "x1").sizes, as_tensor(a["x2"], "x2").sizes
    if len(x) < 2 or len(y) < 2:
        raise ShapeError("cdist: x1 and x2 must have at least 2 dims")
    c.equal(x[-1], y[-1], "cdist: x1 and x2 must have the same number of columns")
    return [broadcast(c, x[:-2], y[:-2]) + (x[-2], y[-2])]


@register("broadcast_tensors")
def broadcast_tensors(c: OpCall) -> list[Sizes] | None:
    """Every tensor to the broadcast of all: `torch.broadcast_tensors(a, b)` or `_VF`'s one list."""
    tensors = list(c.args[0]) if len(c.args) == 1 and isinstance(c.args[0], (list, tuple)) else list(c.args)
    if c.kwargs or not all(isinstance(t, SymTensor) for t in tensors):
        return None
    out = broadcast(c, *(t.sizes for t in tensors))
    return [out] * len(tensors)


@register("mm", "bmm", "dot", "vdot", "mv")
def mm(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "mat2" if c.name() in ("mm", "bmm") else ("vec" if c.name() == "mv" else "other"))
    name = c.name()
    ndims = {"mm": (2, 2), "bmm": (3, 3), "dot": (1, 1), "vdot": (1, 1), "mv": (2, 1)}[name]
    x, y = (_ndims(c, {k: v}, n)[0] for (k, v), n in zip(a.items(), ndims))
    if name == "bmm":
        c.equal(x[0], y[0], "bmm batch sizes")
    return [matmul_sizes(c, x, y)]


def expand_to(c: OpCall, sizes: Sizes, target: Sizes, what: str) -> None:
    """`sizes` must broadcast to exactly `target` (addmm's input, an in-place result)."""
    if len(sizes) > len(target):
        raise ShapeError(f"{c.name()}: {what} has more dims than the result")
    for s, t in zip(reversed(sizes), reversed(target)):
        c.stretch(s, t, what)


@register("addmm", "baddbmm", "addmv")
def addmm(c: OpCall) -> list[Sizes] | None:
    first, second = {"addmm": ("mat1", "mat2"), "baddbmm": ("batch1", "batch2"), "addmv": ("mat", "vec")}[c.name()]
    a = c.bind("input", first, second, "beta", "alpha", beta=1, alpha=1)  # torch's keyword names
    kind = {"addmm": (2, 2), "baddbmm": (3, 3), "addmv": (2, 1)}[c.name()]
    m1, m2 = _ndims(c, {first: a[first]}, kind[0])[0], as_tensor(a[second], second).sizes
    if len(m2) != kind[1]:
        raise ShapeError(f"{c.name()}: second operand must have {kind[1]} dims")
    if c.name() == "baddbmm":
        c.equal(m1[0], m2[0], "baddbmm batch sizes")
    out = matmul_sizes(c, m1, m2)
    expand_to(c, as_tensor(a["input"], "input").sizes, out, "the added input")
    return [out]


@register("linear")
def linear(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "weight", "bias", bias=None)
    x, w = as_tensor(a["input"], "input").sizes, as_tensor(a["weight"], "weight").sizes
    if len(w) not in (1, 2) or (len(w) == 1 and a["bias"] is not None):
        raise ShapeError("linear: weight must have 2 dims (or 1 without a bias)")
    out = matmul_sizes(c, x, tuple(reversed(w)))
    if a["bias"] is not None:
        bias = as_tensor(a["bias"], "bias").sizes
        if len(x) == 2:
            expand_to(c, bias, out, "the bias")
        else:
            out = broadcast(c, out, bias)
    return [out]


@register("outer", "ger")
def outer(c: OpCall) -> list[Sizes] | None:
    a = c.bind("input", "vec2")
    x, y = _ndims(c, {"input": a["input"], "vec2": a["vec2"]}, 1)
    return [(x[0], y[0])]


def _subscripts(c: OpCall, term: str) -> list[str]:
    """'b...ij' -> ['b', '...', 'i', 'j']."""
    labels = term.replace("...", ".").strip()
    if not all(ch.isalpha() or ch == "." for ch in labels) or labels.count(".") > 1:
        raise ShapeError(f"einsum: invalid subscripts {term!r}")
    return ["..." if ch == "." else ch for ch in labels]


@register("einsum")
def einsum(c: OpCall) -> list[Sizes] | None:
    """Each label's size (equal within an operand, broadcast across them); `...` dims broadcast."""
    if not c.args or not isinstance(c.args[0], str) or c.kwargs:
        return None
    operands = list(c.args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    lhs, arrow, rhs = c.args[0].replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands) or not operands:
        raise ShapeError("einsum: one subscript term per operand")
    label_sizes: dict[str, list[Sizes]] = {}
    ellipses: list[Sizes] = []
    counts: dict[str, int] = {}
    for term, t in zip(terms, operands):
        t = as_tensor(t, "an operand")
        labels = _subscripts(c, term)
        n_ellipsis = t.ndim - (len(labels) - 1) if "..." in labels else 0
        if n_ellipsis < 0 or ("..." not in labels and len(labels) != t.ndim):
            raise ShapeError(f"einsum: subscripts {term!r} do not fit {t.ndim} dims")
        i, mine = 0, {}
        for label in labels:
            if label == "...":
                ellipses.append(t.sizes[i : i + n_ellipsis])
                i += n_ellipsis
                continue
            mine[label] = c.equal(mine[label], t.sizes[i], f"einsum: sizes of {label}") if label in mine \
                else t.sizes[i]
            counts[label] = counts.get(label, 0) + 1
            i += 1
        for label, size in mine.items():
            label_sizes.setdefault(label, []).append((size,))
    sizes = {label: broadcast(c, *shapes)[0] for label, shapes in label_sizes.items()}
    batch = broadcast(c, *ellipses) if ellipses else ()
    if arrow:
        out = _subscripts(c, rhs)
        named = [lab for lab in out if lab != "..."]
        if len(set(named)) != len(named) or any(lab not in sizes for lab in named):
            raise ShapeError(f"einsum: invalid output subscripts {rhs!r}")
        if "..." in out and not ellipses:
            out.remove("...")
    else:
        out = (["..."] if ellipses else []) + sorted(lab for lab, n in counts.items() if n == 1)
    return [tuple(d for lab in out for d in (batch if lab == "..." else (sizes[lab],)))]


# -- factories -----------------------------------------------------------------------------------


def new_sizes(c: OpCall, sizes: list[Any]) -> Sizes:
    """Sizes passed to a factory: ints or expressions, each >= 0."""
    for size in sizes:
        if not is_size(size):
            raise ShapeError(f"{c.name()}: sizes must be ints, got {size!r}")
        c.require(sympy.Ge(size, 0, evaluate=False), "sizes must be non-negative")
    return tuple(sympy.sympify(s) for s in sizes)


@register("empty", "zeros", "ones", "rand", "randn")
def factory(c: OpCall) -> list[Sizes] | None:
    if not c.args and "size" not in c.kwargs:
        raise ShapeError(f"{c.name()}() needs sizes")
    sizes = sizes_arg(c.args) if c.args else list(c.kwargs["size"])
    return [new_sizes(c, sizes)]


@register("full")
def full(c: OpCall) -> list[Sizes] | None:
    a = c.bind("size", "fill_value")
    return [new_sizes(c, list(a["size"]))]


@register("randint")
def randint(c: OpCall) -> list[Sizes] | None:
    sizes = c.kwargs.get("size", c.args[-1] if c.args else None)
    return [new_sizes(c, list(sizes))] if isinstance(sizes, (list, tuple, torch.Size)) else None


@register("new_zeros", "new_ones", "new_empty")
def new_factory(c: OpCall) -> list[Sizes] | None:
    sizes = sizes_arg(c.args[1:]) if len(c.args) > 1 else list(c.kwargs.get("size", ()))
    return [new_sizes(c, sizes)]


@register("new_full")
def new_full(c: OpCall) -> list[Sizes] | None:
    a = c.bind("self", "size", "fill_value")
    return [new_sizes(c, list(a["size"]))]




@register(*LIKE)
def like(c: OpCall) -> list[Sizes] | None:
    x = c.args[0] if c.args else c.kwargs.get("input")
    return [as_tensor(x, "input").sizes]


@register("eye")
def eye(c: OpCall) -> list[Sizes] | None:
    a = c.bind("n", "m", m=None)
    m = a["n"] if a["m"] is None else a["m"]
    return [new_sizes(c, [a["n"], m])]


@register("linspace", "logspace")
def linspace(c: OpCall) -> list[Sizes] | None:
    a = c.bind("start", "end", "steps", "base")
    return [new_sizes(c, [a["steps"]])]


@register("arange")
def arange(c: OpCall) -> list[Sizes] | None:
    """ceil((end - start) / step) values; floats or a symbolic step are read as values."""
    given = {k: c.kwargs[k] for k in ("start", "end", "step") if k in c.kwargs}
    if len(c.args) == 1 and not given:
        given = {"end": c.args[0]}   # arange(end)
    else:   # arange(start, end[, step]), each by position or keyword (torch checks the combination)
        given.update(zip(("start", "end", "step"), c.args))
    if "end" not in given:
        return None
    start, end, step = given.get("start", 0), given["end"], given.get("step", 1)
    if not all(is_size(v) or isinstance(v, float) for v in (start, end, step)):
        return None
    # a float-valued bound (`x.size(0) * 0.5`, a TrueDiv) is read as a value, as a float is
    floats = [isinstance(v, float) or (isinstance(v, sympy.Expr) and v.is_integer is not True)
              for v in (start, end, step)]
    if any(floats) or as_int(step) is None:
        values = [v if isinstance(v, float) else c.env.specialize(v, c.loc, "an arange bound") if f
                  else c.value(v, "an arange bound") for v, f in zip((start, end, step), floats)]
        return [tuple(sympy.Integer(n) for n in torch.arange(*values, device="meta").shape)]
    step = as_int(step)
    if step == 0:
        raise ShapeError("arange: step must be nonzero")
    span = sympy.sympify(end) - sympy.sympify(start)
    c.require((sympy.Ge if step > 0 else sympy.Le)(span, 0, evaluate=False), "bounds consistent with step")
    return [(CeilDiv(span, step),)]
