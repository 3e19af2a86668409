"""The accumulate-and-finish text of each reduction kind, persistent or looped.

Looped: an accumulator block per (x, r) lane, updated under the mask in the loop and reduced over r
after it. Persistent: the masked block reduced at once. Arg-reductions keep the first index of the
extreme value, as torch does.
"""

from __future__ import annotations

from pdyn.backends.triton.ir import Reduction, Val
from pdyn.backends.triton.kernel_builder import KernelBuilder
from pdyn.backends.triton.triton_ops import dtype_text

BIG_INDEX = "9223372036854775807"
FINAL = {"sum": "tl.sum({0}, 1)", "max": "tl.reduce({0}, 1, _max_combine)",
         "min": "tl.reduce({0}, 1, _min_combine)",
         "prod": "tl.reduce({0}, 1, _prod_combine)"}
COMBINE = {"sum": "{0} + {1}", "prod": "{0} * {1}",
           "max": "tl.where(({0} > {1}) | ({0} != {0}), {0}, {1})",
           "min": "tl.where(({0} < {1}) | ({0} != {0}), {0}, {1})"}


def emit_reduction(b: KernelBuilder, red: Reduction, val: Val,
                   persistent: bool) -> tuple[list[str], Val]:
    """Emit the in-loop part into the current scope; return lines to run after the loop (empty when
    persistent, where the result is emitted at once) and the result value, shape [XBLOCK, 1]."""
    from pdyn.backends.triton.codegen import neutral

    acc_dtype = red.acc_dtype
    val = b.cast(val, acc_dtype)
    tl_dtype = dtype_text(acc_dtype)
    init = neutral(red.kind, acc_dtype)
    if red.kind in ("argmax", "argmin"):
        return _arg_reduction(b, red, val, persistent, init)
    if persistent:
        masked = b.emit(f"tl.where(xmask & rmask, {val.text}, {init})", acc_dtype)
        return [], b.emit(FINAL[red.kind].format(masked.text) + "[:, None]", acc_dtype, cse=False)
    acc = f"acc{b.counter}"
    b.counter += 1
    b.top.lines.append(f"{acc} = tl.full([XBLOCK, RBLOCK], {init}, {tl_dtype})")
    combined = COMBINE[red.kind].format(acc, val.text)
    b.line(f"{acc} = tl.where(xmask & rmask, {combined}, {acc})")
    result = f"res{b.counter}"
    b.counter += 1
    return [f"{result} = {FINAL[red.kind].format(acc)}[:, None]"], Val(result, acc_dtype)


def _arg_reduction(b: KernelBuilder, red: Reduction, val: Val, persistent: bool,
                   init: str) -> tuple[list[str], Val]:
    better = ">" if red.kind == "argmax" else "<"
    n = b.counter
    b.counter += 1
    acc, idx = f"accv{n}", f"acci{n}"
    v = val.text
    if red.acc_dtype.is_floating_point:
        # NaN is both the max and the min, and the first NaN wins (torch): a NaN beats a number,
        # and NaNs tie (`==` is never true of them)
        wins = f"({v} {better} {acc}) | (({v} != {v}) & ({acc} == {acc}))"
        ties = f"({v} == {acc}) | (({v} != {v}) & ({acc} != {acc}))"
    else:
        wins, ties = f"{v} {better} {acc}", f"{v} == {acc}"
    take = f"(xmask & rmask) & (({wins}) | (({ties}) & (rindex < {idx})))"
    update = [f"take{n} = {take}",
              f"{idx} = tl.where(take{n}, rindex.to(tl.int64), {idx})",
              f"{acc} = tl.where(take{n}, {val.text}, {acc})"]
    start = [f"{acc} = tl.full([XBLOCK, RBLOCK], {init}, {dtype_text(red.acc_dtype)})",
             f"{idx} = tl.full([XBLOCK, RBLOCK], {BIG_INDEX}, tl.int64)"]
    best = f"best{n}"
    is_best = f"({acc} == {best})"
    reduce_text = f"{'tl.max' if red.kind == 'argmax' else 'tl.min'}({acc}, 1)"
    if red.acc_dtype.is_floating_point:  # tl.max may drop a NaN; the combine keeps it
        reduce_text = f"tl.reduce({acc}, 1, {'_max_combine' if red.kind == 'argmax' else '_min_combine'})"
        is_best = f"({is_best} | (({acc} != {acc}) & ({best} != {best})))"
    final = [f"{best} = {reduce_text}[:, None]",
             f"res{n} = tl.min(tl.where({is_best}, {idx}, {BIG_INDEX}), 1)[:, None]"]
    import torch

    if persistent:
        b.scope.lines.extend(start + update + final)
        return [], Val(f"res{n}", torch.int64)
    b.top.lines.extend(start)
    b.scope.lines.extend(update)
    return final, Val(f"res{n}", torch.int64)
