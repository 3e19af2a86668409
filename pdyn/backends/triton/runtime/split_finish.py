"""The second stage of a split reduction, as kernel source: one Triton function per combine
(sum, prod, max, min) that folds a [chunks, columns] buffer of partial results into the output.
"""

from __future__ import annotations

# How the second stage combines: a reduction of a [chunks, columns] tile along the chunks, then the
# running value; masked-off chunks load a neutral value (max and min: the first chunk's value).
SPLIT_FINISH = {
    "sum": ("0", "tl.sum(v, 0)[None, :]", "acc + part"),
    "prod": ("1", "tl.reduce(v, 0, _prod)[None, :]", "acc * part"),
    "max": ("first", "tl.reduce(v, 0, _max)[None, :]", "_max(acc, part)"),
    "min": ("first", "tl.reduce(v, 0, _min)[None, :]", "_min(acc, part)"),
}


def finish_source(interpret: bool = False) -> str:
    """Second stage of a split reduction: combine `chunks` rows of partial results per column,
    RBLOCK chunks at a time (one wide load, not a chain of dependent ones)."""
    # NOTE: Triton 3.6's interpreter holds an int argument as a 1-element array (NumPy 2 refuses
    # int() of it), so the loop bound is read out of it there
    bound = "int(chunks.handle.data.reshape(-1)[0])" if interpret else "chunks"
    parts = ["import triton", "import triton.language as tl", "",
             "@triton.jit", "def _prod(a, b):", "    return a * b", "",
             "@triton.jit", "def _max(a, b):", "    return tl.where((a > b) | (a != a), a, b)", "",
             "@triton.jit", "def _min(a, b):", "    return tl.where((a < b) | (a != a), a, b)", ""]
    for kind, (other, part, combine) in SPLIT_FINISH.items():
        masked = "tl.where(mask, v, first)" if other == "first" else "v"
        parts += [
            "",
            "@triton.jit(do_not_specialize=['xnumel', 'chunks'])",
            f"def finish_{kind}(src, dst, xnumel, chunks, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr,",
            "                INDEX64: tl.constexpr):",
            "    if INDEX64:",
            "        xindex = tl.program_id(0).to(tl.int64) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
            "    else:",
            "        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[None, :]",
            "    xmask = xindex < xnumel",
            "    cbase = tl.arange(0, RBLOCK)[:, None]",
            "    first = tl.load(src + xindex, xmask, other=0)",
            "    acc = first",
            f"    for c0 in range(1, {bound}, RBLOCK):",
            "        c = c0 + cbase",
            "        mask = xmask & (c < chunks)",
            f"        v = tl.load(src + (c * xnumel + xindex), mask, other={other if other != 'first' else 0})",
            f"        v = {masked}",
            f"        part = {part}",
            f"        acc = {combine}",
            "    tl.store(dst + xindex, acc.to(dst.dtype.element_ty), xmask)",
        ]
    return "\n".join(parts) + "\n"
