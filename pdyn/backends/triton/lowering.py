"""The lowering registry and the pointwise family: math with broadcasting and torch's type
promotion (low precision computed in float32), where, clamp, casts, constants.

A lowering is `fn(lx, node, *args, **kwargs)` with the node's arguments already lowered (tensors
are Pointwise values, sizes Scalars); it raises NotLowered to leave the node to torch.
"""

from __future__ import annotations

from typing import Any, Callable

import sympy
import torch

from pdyn.backends.triton.graph_lowering import GraphLowering, NotLowered
from pdyn.backends.triton.ir import Handler, Index, Pointwise, Scalar, Val, compute_dtype
from pdyn.backends.triton.kernel_builder import DIVISION_MESSAGE
from pdyn.backends.triton.triton_ops import in_domain
from pdyn.ops import Op, op_of, row

LOWERINGS: dict[Op, Callable[..., Any]] = {}


def register(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Lower each named row of the op table (pdyn/ops/catalogue.py) with `fn`, whatever its spelling."""

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            op = row(name)
            assert op not in LOWERINGS, f"second lowering for {name}"
            LOWERINGS[op] = fn
        return fn

    return add


Loader = Callable[[Handler, Index], Val]
INT_DIVISIONS = frozenset({"floordiv_int", "mod_int", "truncdiv_int"})  # a divisor of 0 raises in eager


def operand(x: Any, ranges: list[sympy.Expr], dtype: torch.dtype) -> tuple[Loader, frozenset[str], int]:
    """A loader for `x` broadcast to `ranges`, cast to `dtype`; its reads and op count."""
    if isinstance(x, Pointwise):
        lead = len(ranges) - len(x.ranges)
        if lead < 0:
            raise NotLowered("operand has more dims than the result")
        sizes = list(x.ranges)
        for n, r in zip(sizes, ranges[lead:]):
            # a size only the data decides (u0) may be 1 where the result's is not: eager broadcasts
            # it, an index without stride 0 would read past it
            if n != 1 and n != r and any(_is_unbacked(s) for s in sympy.sympify(n).free_symbols):
                raise NotLowered(f"an operand's size {n} may be 1 where the result's is {r} (data-dependent)")

        rounds = dtype in (torch.float16, torch.bfloat16) and x.dtype != dtype

        def load(h: Handler, idx: Index) -> Val:
            inner = [sympy.Integer(0) if n == 1 else i for n, i in zip(sizes, idx[lead:])]
            v = x.fn(h, inner)
            return h.cast(round_to(h, v, dtype) if rounds else v, dtype)

        return load, x.reads, x.ops
    if isinstance(x, Scalar):
        expr = x.expr
        if x.is_float and not expr.is_number and dtype == torch.float64:
            raise NotLowered("Triton passes a float argument as float32")
        if dtype in (torch.float16, torch.bfloat16):  # a size as float16 rounds (2049 is 2048)
            return (lambda h, idx: round_to(h, h.scalar(expr, torch.float32), dtype)), frozenset(), 0
        return (lambda h, idx: h.scalar(expr, dtype)), frozenset(), 0
    if isinstance(x, (bool, int, float)):
        return (lambda h, idx: h.constant(x, dtype)), frozenset(), 0
    raise NotLowered(f"operand {type(x).__name__}")


def _is_unbacked(symbol: sympy.Symbol) -> bool:
    return symbol.name.startswith("u")   # the ShapeEnv's names: s0 backed, u0 data-dependent


def check_fill_scalars(dtype: torch.dtype, *values: Any) -> None:
    """Ops that store a scalar as an element (where, masked_fill, clamp, full) raise in eager
    where an int does not fit an integer dtype ("value cannot be converted to type int without
    overflow"); such a node (or a size argument whose value may not fit) is left to torch."""
    if dtype.is_floating_point or dtype == torch.bool:
        return
    info = torch.iinfo(dtype)
    for v in values:
        if isinstance(v, Scalar) and not v.is_float and dtype != torch.int64:
            raise NotLowered(f"a size stored as {dtype} may overflow")
        low = -info.max if info.min == 0 else info.min  # unsigned: eager wraps negatives in range
        if isinstance(v, int) and not isinstance(v, bool) and not low <= v <= info.max:
            raise NotLowered(f"{v} overflows {dtype}")


def fits(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether every value of `src` converts to `dst` without the overflow eager's checked
    conversion (masked_fill's value, fill_) raises for: unsigned `dst` takes negatives as wraps."""
    if dst == torch.bool or src == torch.bool:
        return True
    lo, hi = (-torch.finfo(src).max, torch.finfo(src).max) if src.is_floating_point else \
        (torch.iinfo(src).min, torch.iinfo(src).max)
    if dst.is_floating_point:
        return torch.finfo(dst).max >= max(-lo, hi)
    if src.is_floating_point:
        return False
    info = torch.iinfo(dst)
    return (-info.max if info.min == 0 else info.min) <= lo and hi <= info.max


def round_to(h: Handler, v: Val, dtype: torch.dtype) -> Val:
    """`v` rounded to float16/bfloat16 (its values are computed in float32 or float64, so a
    conversion to one must round explicitly): from the value's own float dtype, one rounding."""
    if not v.dtype.is_floating_point:
        v = h.cast(v, torch.float32)
    return h.op("round_" + str(dtype).removeprefix("torch."), v.dtype, v)


def meta_like(x: Any) -> Any:
    """A stand-in for torch.result_type: 0-dim tensors and Python scalars promote as in eager."""
    if isinstance(x, Pointwise):
        return torch.empty([1] * len(x.ranges), dtype=x.dtype, device="meta")
    if isinstance(x, Scalar):
        return 1.0 if x.is_float else 2
    return x


def promoted(*xs: Any) -> torch.dtype:
    metas = [meta_like(x) for x in xs]
    if len(metas) == 1:
        m = metas[0]
        return m.dtype if isinstance(m, torch.Tensor) else torch.result_type(torch.empty(()), m)
    dtype = torch.result_type(metas[0], metas[1])
    for m in metas[2:]:
        dtype = torch.promote_types(dtype, m.dtype if isinstance(m, torch.Tensor) else dtype)
    return dtype


def pointwise(lx: GraphLowering, node: Any, name: str, inputs: list[Any],
              compute: torch.dtype | None = None) -> Pointwise:
    """`name` applied elementwise; operands cast to `compute` (default: the result dtype)."""
    fake = lx.fake(node)
    ranges, out_dtype = lx.ranges(node), fake.dtype
    compute = compute_dtype(compute or out_dtype)
    if not in_domain(name, compute):
        raise NotLowered(f"{name} in {compute}")
    parts = [operand(x, ranges, compute) for x in inputs]
    result = compute_dtype(out_dtype)
    divides = name in INT_DIVISIONS and lx.device.type == "cpu"
    if divides and isinstance(inputs[1], (bool, int)) and inputs[1] == 0:
        raise NotLowered("an integer division by a constant 0: torch raises")

    def fn(h: Handler, idx: Index) -> Val:
        vals = [load(h, idx) for load, _, _ in parts]
        if divides:  # eager's CPU kernels raise for a divisor of 0 (its CUDA kernels do not)
            h.check(h.op("ne", torch.bool, vals[1], h.constant(0, compute)), list(idx), RuntimeError,
                    DIVISION_MESSAGE)
        return h.op(name, result, *vals)

    reads = frozenset().union(*[r for _, r, _ in parts])
    value = Pointwise(ranges, out_dtype, fn, reads, 1 + sum(n for _, _, n in parts))
    return lx.maybe_realize(node, value)


def composite(lx: GraphLowering, node: Any, inputs: list[Any], compute: torch.dtype,
              body: Callable[..., Val]) -> Pointwise:
    """A pointwise whose element is `body(h, *operand_vals)` (several ops in one closure)."""
    ranges = lx.ranges(node)
    parts = [operand(x, ranges, compute) for x in inputs]
    out_dtype = lx.fake(node).dtype

    def fn(h: Handler, idx: Index) -> Val:
        return h.cast(body(h, *[load(h, idx) for load, _, _ in parts]), out_dtype)

    reads = frozenset().union(*[r for _, r, _ in parts])
    value = Pointwise(ranges, out_dtype, fn, reads, 3 + sum(n for _, _, n in parts))
    return lx.maybe_realize(node, value)


def _binary(name: str) -> Callable[..., Any]:
    def lower(lx: GraphLowering, node: Any, a: Any, b: Any, *, alpha: Any = 1) -> Pointwise:
        if alpha != 1:
            if name not in ("add", "sub"):
                raise NotLowered("alpha")
            b = _scaled(lx, node, b, alpha)
        if name == "add" and lx.fake(node).dtype == torch.bool:
            return pointwise(lx, node, "or", [a, b])  # torch saturates (True + True is True)
        return pointwise(lx, node, name, [a, b])

    return lower


def _scaled(lx: GraphLowering, node: Any, b: Any, alpha: Any) -> Any:
    if isinstance(b, (int, float)):
        return b * alpha
    # NOTE: alpha * b in the result's dtype, as eager (an int8 b times 3 added to float16 does not wrap)
    dtype = compute_dtype(lx.fake(node).dtype)
    load, reads, ops = operand(b, list(b.ranges), dtype)
    fn = lambda h, idx: h.op("mul", dtype, load(h, idx), h.constant(alpha, dtype))  # noqa: E731
    return Pointwise(list(b.ranges), dtype, fn, reads, ops + 1)


def _compare(name: str) -> Callable[..., Any]:
    def lower(lx: GraphLowering, node: Any, a: Any, b: Any) -> Pointwise:
        dtype = promoted(a, b)
        if dtype in (torch.float16, torch.bfloat16):
            # eager's comparison kernels cast both operands to the common dtype: a scalar or a
            # 0-dim float32 tensor rounds first (float16 0.1 == 0.1 is True)
            return composite(lx, node, [a, b], dtype, lambda h, x, y: h.op(name, torch.bool, x, y))
        return pointwise(lx, node, name, [a, b], compute=dtype)

    return lower


for _name, _rows in {"add": ("add",), "sub": ("sub", "subtract"), "mul": ("mul", "multiply")}.items():
    register(*_rows)(_binary(_name))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    register(_name)(_compare(_name))


@register("maximum", "minimum", "fmax", "fmin")
def lower_max_min(lx: GraphLowering, node: Any, a: Any, b: Any) -> Pointwise:
    op = op_of(node).name  # also torch.max(a, b), from lower_max_dim
    name = "maximum" if op in ("maximum", "max") else "minimum"
    if op in ("fmax", "fmin"):
        raise NotLowered("fmax/fmin ignore nan")
    return pointwise(lx, node, name, [a, b])


@register("logical_and", "bitwise_and", "logical_or", "bitwise_or", "logical_xor", "bitwise_xor")
def lower_logical(lx: GraphLowering, node: Any, a: Any, b: Any) -> Pointwise:
    target = op_of(node).name
    name = "and" if "and" in target else "or" if "or" in target and "xor" not in target else "xor"
    if "logical" in target:
        return pointwise(lx, node, name, [a, b], compute=torch.bool)
    if promoted(a, b).is_floating_point:
        raise NotLowered("bitwise op on floats")
    return pointwise(lx, node, name, [a, b])


@register("div", "true_divide", "divide")
def lower_div(lx: GraphLowering, node: Any, a: Any, b: Any, *, rounding_mode: Any = None) -> Pointwise:
    if rounding_mode is None:
        return pointwise(lx, node, "truediv", [a, b])
    kind = "int" if not promoted(a, b).is_floating_point else "float"
    name = {"floor": "floordiv", "trunc": "truncdiv"}[rounding_mode]
    return pointwise(lx, node, f"{name}_{kind}", [a, b])


@register("floor_divide", "remainder")
def lower_floor_ops(lx: GraphLowering, node: Any, a: Any, b: Any) -> Pointwise:
    kind = "int" if not promoted(a, b).is_floating_point else "float"
    base = "floordiv" if op_of(node).name == "floor_divide" else "mod"
    return pointwise(lx, node, f"{base}_{kind}", [a, b])


@register("pow")
def lower_pow(lx: GraphLowering, node: Any, a: Any, b: Any) -> Pointwise:
    if not isinstance(a, Pointwise):
        raise NotLowered("scalar base")
    if not lx.fake(node).dtype.is_floating_point:
        raise NotLowered("integer pow")
    special = {2: "square", 0.5: "sqrt", 1: "identity", -1: "reciprocal"}
    if isinstance(b, (int, float)) and b in special:
        return pointwise(lx, node, special[b], [a])
    if isinstance(b, (int, float)) and b == 3:
        return composite(lx, node, [a], compute_dtype(lx.fake(node).dtype),
                         lambda h, x: h.op("mul", x.dtype, h.op("square", x.dtype, x), x))
    return pointwise(lx, node, "pow", [a, b])


UNARY = """exp exp2 log log2 sqrt rsqrt sin cos tanh erf sigmoid reciprocal log1p expm1 square abs neg
floor ceil sign""".split()


def _unary(name: str) -> Callable[..., Any]:
    def lower(lx: GraphLowering, node: Any, x: Any) -> Pointwise:
        if _unchanged(name, x.dtype):
            return pointwise(lx, node, "identity", [x])
        return pointwise(lx, node, name, [x])

    return lower


def _unchanged(name: str, dtype: torch.dtype) -> bool:
    """floor and ceil of integers, sign of bools: eager returns a copy of the values."""
    if name in ("floor", "ceil"):
        return not dtype.is_floating_point
    return name == "sign" and dtype == torch.bool


for _name in UNARY:
    register(_name)(_unary(_name))


@register("relu")
def lower_relu(lx: GraphLowering, node: Any, x: Any, inplace: bool = False) -> Pointwise:
    if inplace:
        raise NotLowered("inplace")
    return pointwise(lx, node, "relu", [x])


@register("silu")
def lower_silu(lx: GraphLowering, node: Any, x: Any, inplace: bool = False) -> Pointwise:
    if inplace:
        raise NotLowered("inplace")
    return pointwise(lx, node, "silu", [x])


@register("gelu")
def lower_gelu(lx: GraphLowering, node: Any, x: Any, approximate: str = "none") -> Pointwise:
    return pointwise(lx, node, "gelu" if approximate == "none" else "gelu_tanh", [x])


@register("isnan")
def lower_isnan(lx: GraphLowering, node: Any, x: Any) -> Pointwise:
    return pointwise(lx, node, "isnan", [x], compute=x.dtype)


@register("logical_not", "bitwise_not")
def lower_not(lx: GraphLowering, node: Any, x: Any) -> Pointwise:
    if op_of(node).name == "logical_not" or x.dtype == torch.bool:
        return pointwise(lx, node, "not", [x], compute=torch.bool)
    return pointwise(lx, node, "invert", [x])


@register("where")
def lower_where(lx: GraphLowering, node: Any, cond: Any, a: Any = None, b: Any = None) -> Pointwise:
    if a is None:
        raise NotLowered("where(cond) is nonzero")
    if node.op == "call_method":  # x.where(cond, y) is torch.where(cond, x, y)
        cond, a = a, cond
    out = lx.fake(node).dtype
    check_fill_scalars(out, a, b)
    dtype = compute_dtype(out)
    # NOTE: operands as `out` (a float scalar rounds to float16 as eager converts it), computed in `dtype`
    return composite(lx, node, [cond, a, b], out, lambda h, c, x, y: h.op(
        "where", dtype, h.cast(c, torch.bool), x, y))


@register("clamp", "clip")
def lower_clamp(lx: GraphLowering, node: Any, x: Any, min: Any = None, max: Any = None) -> Pointwise:
    dtype = compute_dtype(lx.fake(node).dtype)
    check_fill_scalars(lx.fake(node).dtype, min, max)
    if any(isinstance(v, float) and v != v for v in (min, max)):
        raise NotLowered("a NaN bound: eager's CPU kernel gives NaN, its CUDA kernel ignores one")
    bounds = [v for v in (min, max) if v is not None]

    # NOTE: max(v, lo) then min(v, hi), as eager: a NaN in v or in a tensor bound wins, and a tie
    # (-0.0 against a 0.0 bound) gives the bound as eager's vectorized kernels do (on the GPU,
    # Triton's compiled select gives +0.0 for min(+0.0, -0.0), as in torch.minimum's lowering)
    def body(h: Handler, v: Val, *bs: Val) -> Val:
        it = iter(bs)
        if min is not None:
            v = h.op("maximum", dtype, v, next(it))
        if max is not None:
            v = h.op("minimum", dtype, v, next(it))
        return v

    return composite(lx, node, [x, *bounds], dtype, body)


CASTS = {"float": torch.float32, "double": torch.float64, "half": torch.float16,
         "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64, "bool": torch.bool}


@register(*CASTS, "to", "type", "type_as")
def lower_cast(lx: GraphLowering, node: Any, x: Any, *args: Any, **kwargs: Any) -> Pointwise:
    fake = lx.fake(node)
    if not isinstance(x, Pointwise) or fake.device != lx.device:
        raise NotLowered("device move")
    if kwargs.get("memory_format") not in (None, torch.preserve_format, torch.contiguous_format):
        raise NotLowered("memory format")
    if fake.dtype == x.dtype and op_of(node).name in ("to", "type", "type_as") + tuple(CASTS):
        if kwargs.get("copy"):  # eager copies: the result must not alias the input
            return Pointwise(list(x.ranges), x.dtype, x.fn, x.reads, x.ops)
        if any(a is True for a in args):  # a positional non_blocking or copy: which, torch knows
            raise NotLowered("positional copy flag")
        return x  # eager returns the input itself
    return cast_value(lx, node, x, fake.dtype)


def cast_value(lx: GraphLowering, node: Any, x: Pointwise, dtype: torch.dtype) -> Pointwise:
    """`x` converted to `dtype`. float16/bfloat16 are computed in float32, so a cast to one must
    round explicitly (`x.half().float()` is not `x`), from the source's own compute dtype (one
    rounding, as eager's, not float64 -> float32 -> float16)."""
    if dtype in (torch.float16, torch.bfloat16) and x.dtype != dtype:
        return composite(lx, node, [x], compute_dtype(x.dtype), lambda h, v: round_to(h, v, dtype))
    return pointwise(lx, node, "identity", [x], compute=dtype)


@register("clone")
def lower_copy(lx: GraphLowering, node: Any, x: Any, *args: Any, **kwargs: Any) -> Pointwise:
    if not isinstance(x, Pointwise):
        raise NotLowered("clone of a non-tensor")
    return Pointwise(list(x.ranges), x.dtype, x.fn, x.reads, x.ops)


@register("full", "zeros", "ones", "full_like", "zeros_like", "ones_like", "new_zeros", "new_ones", "new_full")
def lower_full(lx: GraphLowering, node: Any, *args: Any, **kwargs: Any) -> Pointwise:
    fake = lx.fake(node)
    name = op_of(node).name
    value = {"zeros": 0, "ones": 1}.get(name.replace("new_", "").replace("_like", ""))
    if value is None:
        value = args[-1] if args else kwargs["fill_value"]
    if not isinstance(value, (bool, int, float)) or fake.device != lx.device:
        raise NotLowered("fill value")
    if kwargs.get("requires_grad"):
        raise NotLowered("requires_grad")
    dtype = fake.dtype
    check_fill_scalars(dtype, value)
    fn = lambda h, idx: h.constant(value, dtype)  # noqa: E731
    return Pointwise(lx.ranges(node), dtype, fn, frozenset(), 1)


from pdyn.backends.triton import (  # noqa: E402,F401  # registers
    fallbacks, lowering_indexing, lowering_losses, lowering_reductions, lowering_views,
)
