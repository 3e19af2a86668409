"""Which way a kernel walks memory, from the addresses it loads and stores (sympy, over the loop
index symbols, with pdyn's stride facts: a dim of stride 1 has coefficient 1).

- A pointwise kernel runs 1-D over its elements in row-major order of its ranges. When some access
  is contiguous along an earlier dim and strided along the last one (a transposed operand, a
  channels-last input, an output eager lays out transposed), it runs 2-D: tiles of y (the dims up
  to that contiguous one) by x (the dims after it), so each access reads whole lines of its
  contiguous dim; Triton transposes the tile in shared memory.
- A reduction kernel's launch (`inner`) follows whether its loads are contiguous along r or x, not
  which logical dim is reduced.
"""

from __future__ import annotations

import sympy


def _unit_dims(expr: sympy.Expr, syms: list[sympy.Expr]) -> list[int]:
    """Positions of the symbols along which `expr` is contiguous (coefficient exactly 1)."""
    out = []
    for k, s in enumerate(syms):
        if isinstance(s, sympy.Symbol) and expr.coeff(s) == 1:
            out.append(k)
    return out


def pointwise_split(accesses: list[sympy.Expr], xs: list[sympy.Expr]) -> int | None:
    """The number of leading dims that form the y group of a 2-D tiling, or None (1-D is right):
    the first access that is strided along the last real dim and contiguous along an earlier one
    decides."""
    real = [k for k, s in enumerate(xs) if isinstance(s, sympy.Symbol)]
    if len(real) < 2:
        return None
    last = xs[real[-1]]
    for e in accesses:
        c = e.coeff(last)
        if c == 0 or c == 1 or last not in e.free_symbols:
            continue
        units = [k for k in _unit_dims(e, xs) if k != real[-1]]
        if units:
            return units[-1] + 1
    return None


def reduction_inner(accesses: list[sympy.Expr], xs: list[sympy.Expr], rs: list[sympy.Expr],
                    default: bool) -> bool:
    """Whether the loads are mostly contiguous along r (inner) or along x (outer)."""
    along_r = sum(1 for e in accesses if _unit_dims(e, rs))
    along_x = sum(1 for e in accesses if _unit_dims(e, xs) and not _unit_dims(e, rs))
    if along_r == along_x:
        return default
    return along_r > along_x


def tiled_head() -> list[str]:
    """Program ids of a 2-D tiled pointwise kernel: one program per (y tile, x tile), x fastest."""
    return ["    xprogs = tl.cdiv(xnumel, XBLOCK)",
            "    if INDEX64:",
            "        pid = tl.program_id(0).to(tl.int64)",
            "    else:",
            "        pid = tl.program_id(0)",
            "    xoffset = (pid % xprogs) * XBLOCK",
            "    yoffset = (pid // xprogs) * YBLOCK",
            "    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]",
            "    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]",
            "    ymask = yindex < ynumel",
            "    xmask = xindex < xnumel"]
