"""Each elementwise op as Triton text, in two variants: `gpu` (libdevice where it is the accurate
or only spelling) and `interpret` (core `tl` only; Triton's interpreter has no libdevice).

Templates take the operands' Triton expressions as {0}, {1}, {2}; `dtype_text` maps torch dtypes.
Integer `//` and `%` truncate in Triton, so floor semantics go through the helpers in PREAMBLE.
"""

from __future__ import annotations

import torch

TL_DTYPE = {
    torch.float32: "tl.float32", torch.float16: "tl.float16", torch.bfloat16: "tl.bfloat16",
    torch.float64: "tl.float64", torch.int8: "tl.int8", torch.int16: "tl.int16",
    torch.int32: "tl.int32", torch.int64: "tl.int64", torch.uint8: "tl.uint8", torch.bool: "tl.int1",
}


class NoTritonSpelling(Exception):
    """A dtype or op that Triton cannot express; the graph then runs with torch (logged)."""


def dtype_text(dtype: torch.dtype) -> str:
    if dtype not in TL_DTYPE:
        raise NoTritonSpelling(f"no Triton dtype for {dtype}")
    return TL_DTYPE[dtype]


# Helpers every kernel module carries; each is @triton.jit so Triton inlines it.
PREAMBLE = '''
@triton.jit
def _floordiv_int(a, b):
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)


@triton.jit
def _mod_int(a, b):
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _trunc(q):
    return tl.where(q < 0, tl.ceil(q), tl.floor(q))


@triton.jit
def _pow_safe(x, y):
    # |x|**y as exp(y*log|x|), then C's pow special cases (torch.pow is std::pow / libdevice.pow)
    y = tl.zeros_like(x) + y  # NOTE: a scalar exponent as a block: its tests combine with x's by `&`
    ax = tl.abs(x)
    r = tl.exp(y * tl.log(ax))
    y_int = tl.floor(y) == y  # an infinite y counts as an even integer
    y_odd = y_int & ((tl.floor(y * 0.5) * 2.0) != y)
    sign_bit = (x < 0) | ((x == 0) & ((1.0 / x) < 0))  # -0.0 too: (-0.0)**-1 is -inf
    r = tl.where(sign_bit & y_odd, r * -1.0, r)  # NOTE: not `-r`: Triton's negation is 0 - r, losing -0.0
    r = tl.where((x < 0) & (ax != float("inf")) & (y_int == 0), float("nan"), r)
    r = tl.where((ax == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)  # (-1)**inf is 1, not exp(nan)
    return tl.where((x == 1.0) | (y == 0), 1.0, r)


@triton.jit
def _floordiv_float(a, b, mod):
    # torch's div_floor_floating: `mod` is fmod(a, b); an infinite a gives nan, not floor(inf)
    div = (a - mod) / b
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
    fl = tl.where(div == 0, (a / b) * 0.0, fl)  # a zero with the sign of a / b
    return tl.where(b == 0, a / b, fl)


@triton.jit
def _mod_float(b, mod):
    # torch's remainder: fmod, moved into b's sign (x % inf is x or inf, -3.5 % -3.5 is -0.0)
    return tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


@triton.jit
def _round_bf16(x):
    # interpreter only: its float32 -> bfloat16 cast truncates; round to nearest even by hand
    x = x.to(tl.float32)
    bits = x.to(tl.uint32, bitcast=True)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return tl.where(x != x, x, bits.to(tl.float32, bitcast=True))


@triton.jit
def _tanh_safe(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _prod_combine(a, b):
    return a * b


@triton.jit
def _max_combine(a, b):
    # NaN wins, as in torch (tl.max may drop it)
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _min_combine(a, b):
    return tl.where((a < b) | (a != a), a, b)
'''

COMMON = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "truediv": "{0} / {1}",
    "neg": "-{0}", "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}",
    "gt": "{0} > {1}", "ge": "{0} >= {1}", "and": "{0} & {1}", "or": "{0} | {1}",
    "xor": "{0} ^ {1}", "not": "{0} == 0", "invert": "~{0}",
    "where": "tl.where({0}, {1}, {2})", "identity": "{0}",
    "maximum": "tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})",
    "minimum": "tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})",
    "abs": "tl.abs({0})", "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})",
    "log2": "tl.log2({0})", "sqrt": "tl.sqrt({0})", "rsqrt": "(1.0 / tl.sqrt({0}))",
    "sin": "tl.sin({0})", "cos": "tl.cos({0})", "erf": "tl.erf({0})", "floor": "tl.floor({0})",
    "ceil": "tl.ceil({0})", "sigmoid": "tl.sigmoid({0})", "reciprocal": "1.0 / {0}",
    "isnan": "{0} != {0}", "relu": "tl.where({0} < 0, 0, {0})", "square": "{0} * {0}",
    "silu": "{0} * tl.sigmoid({0})", "sign": "(({0} > 0).to({0}.dtype) - ({0} < 0).to({0}.dtype))",
    "gelu": "0.5 * {0} * (1.0 + tl.erf({0} * 0.7071067811865476))",
    "floordiv_int": "_floordiv_int({0}, {1})", "mod_int": "_mod_int({0}, {1})",
    "truncdiv_int": "{0} // {1}", "truncdiv_float": "_trunc({0} / {1})",
    "log1p": "tl.log(1.0 + {0})", "expm1": "(tl.exp({0}) - 1.0)",
    # an explicit cast to a low-precision float rounds, though values are computed in float32
    "round_float16": "{0}.to(tl.float16).to({0}.dtype)",
    "round_bfloat16": "{0}.to(tl.bfloat16).to({0}.dtype)",
    "floordiv_float": "_floordiv_float({0}, {1}, {0} % {1})", "mod_float": "_mod_float({1}, {0} % {1})",
}

# NOTE: Triton's float `%` is fmod; on the GPU it lowers to a - b*trunc(a/b), inexact for large
# quotients, so the GPU spells fmod with libdevice (the interpreter's `%` is numpy's exact fmod)
GPU = {
    "floordiv_float": "_floordiv_float({0}, {1}, libdevice.fmod({0}, {1}))",
    "mod_float": "_mod_float({1}, libdevice.fmod({0}, {1}))",
    "tanh": "libdevice.tanh({0})", "pow": "libdevice.pow({0}, {1})",
    "log1p": "libdevice.log1p({0})", "expm1": "libdevice.expm1({0})",
    "gelu_tanh": "0.5 * {0} * (1.0 + libdevice.tanh(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))",
}

INTERPRET = {
    "round_bfloat16": "_round_bf16({0}).to({0}.dtype)",
    "tanh": "_tanh_safe({0})", "pow": "_pow_safe({0}, {1})",
    "gelu_tanh": "0.5 * {0} * (1.0 + _tanh_safe(0.7978845608028654 * ({0} + 0.044715 * {0} * {0} * {0})))",
}


# Operand domains: Triton rejects (or retypes) these ops on other operands, so a lowering computes
# them in a dtype of their domain or leaves the node to torch.
FLOAT_OPS = frozenset({
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf", "floor", "ceil", "sigmoid",
    "tanh", "gelu", "gelu_tanh", "silu", "pow", "log1p", "expm1", "reciprocal", "truediv",
    "floordiv_float", "mod_float", "truncdiv_float", "round_float16", "round_bfloat16"})
INTEGER_OPS = frozenset({"and", "or", "xor", "invert", "floordiv_int", "mod_int", "truncdiv_int"})
NUMBER_OPS = frozenset({"relu", "neg", "sign", "sub"})  # not on bool (torch and numpy refuse bool subtraction)
BOOL_RESULT_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "not", "isnan"})


def in_domain(name: str, dtype: torch.dtype) -> bool:
    """Whether op `name` computed on operands of `dtype` is valid Triton of that dtype."""
    if name in FLOAT_OPS:
        return dtype.is_floating_point
    if name in INTEGER_OPS:
        return not dtype.is_floating_point and (dtype != torch.bool or name in ("and", "or", "xor"))
    return dtype != torch.bool or name not in NUMBER_OPS


def op_text(name: str, args: list[str], interpret: bool) -> str:
    table = INTERPRET if interpret else GPU
    template = table.get(name) or COMMON.get(name)
    if template is None:
        raise NoTritonSpelling(f"no Triton spelling for op {name!r}")
    return template.format(*args)


def constant_text(value: object, dtype: torch.dtype) -> str:
    """A literal of `dtype`; inf and nan as Triton spells them."""
    if dtype == torch.bool:
        return "True" if value else "False"
    if dtype.is_floating_point:
        v = float(value)  # type: ignore[arg-type]  # a Python number by construction
        if v != v:
            return 'float("nan")'
        if v in (float("inf"), float("-inf")):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        return repr(v)
    return str(wrap_int(int(value), dtype))  # type: ignore[call-overload]  # a Python number by construction


def wrap_int(value: int, dtype: torch.dtype) -> int:
    """`value` as torch casts a Python int to `dtype`: two's complement wraparound (uint8 -1 is 255)."""
    bits = torch.iinfo(dtype).bits
    value &= (1 << bits) - 1
    signed = torch.iinfo(dtype).min < 0
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value
