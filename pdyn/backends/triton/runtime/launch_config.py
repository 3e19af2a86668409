"""Launch-time choices from the actual sizes, at every call: block sizes and warps of a pointwise
kernel; the variant of a reduction (persistent, looped or split over r) and its blocks; the split's
second stage; 32- or 64-bit indexing; how Triton specializes each int argument. The tables are
tuned on an H100 (benchmarks/launch_configs.py sweeps them).
"""

from __future__ import annotations

from typing import Any

import torch

INT32_MAX = 2**31 - 1
PERSISTENT_MAX = 4096  # reduced elements that one block holds in registers


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def cdiv(a: int, b: int) -> int:
    return -(a // -b)


def _extent(t: torch.Tensor) -> int:
    return 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()) if n > 0)


def needs_int64(numel: int, *tensors: torch.Tensor) -> bool:
    """64-bit indexing when an index could pass int32: the iteration space or any buffer's extent.
    A storage under 2 GiB bounds every extent in it, so the exact extent is computed only past that."""
    if numel > INT32_MAX:
        return True
    for t in tensors:
        if t.untyped_storage().nbytes() > INT32_MAX and _extent(t) > INT32_MAX:
            return True
    return False


# -- block sizes from the actual sizes, at every call ---------------------------------------------
# (at least this many elements, XBLOCK, num_warps), largest first: few variants, so a handful of
# compiles cover every size; large inputs get 1024-element blocks (8 elements per thread:
# vectorized loads) to reach memory bandwidth. benchmarks/launch_configs.py sweeps these.
POINTWISE_CONFIGS = [(1 << 18, 1024, 8), ((1 << 13) + 1, 512, 4), (0, 128, 4)]


def pointwise_config(xnumel: int) -> tuple[int, int]:
    """(XBLOCK, num_warps) for `xnumel` elements."""
    for least, xblock, warps in POINTWISE_CONFIGS:
        if xnumel >= least:
            return xblock, warps
    return POINTWISE_CONFIGS[-1][1:]  # type: ignore[return-value]


TILE_MAX = 64  # a 2-D tile's side: 64 fp32 = two 128-byte lines per row of either layout
TILE_ELEMENTS = 4096  # elements per tile at most (a thin x gets a longer y)


def tile_config(ynumel: int, xnumel: int) -> tuple[int, int, int]:
    """(YBLOCK, XBLOCK, num_warps) of a 2-D tiled pointwise kernel, from the actual extents."""
    xblock = min(TILE_MAX, next_pow2(xnumel))
    yblock = min(next_pow2(ynumel), max(TILE_MAX, TILE_ELEMENTS // xblock) if xblock < TILE_MAX else TILE_MAX)
    return yblock, xblock, 8 if xblock * yblock >= 4096 else 4


OUTER_PERSISTENT_MAX = 64  # an outer (strided) reduction keeps 64 columns per block: coalesced rows
SPLIT_MIN_R = 2048          # a split pays off only for long reductions (shorter ones narrow instead)
SPLIT_TARGET_PROGRAMS = 512  # about 4 blocks per SM
MIN_PROGRAMS = 1024  # row blocks shrink until a reduction has this many (about 8 per SM)
LOOPED_INNER = (1, 2048)  # (XBLOCK, RBLOCK) of a looped reduction over contiguous elements
LOOPED_OUTER = (64, 64)   # ... over strided rows: 64 contiguous columns per block
LOOPED_WARPS = 8
OUTER_MIN_PROGRAMS = 128  # an unsplit strided reduction narrows its column blocks to get this many
PERSISTENT_ELEMENTS_PER_WARP = 256  # a persistent block gets a warp per this many elements ...
PERSISTENT_MAX_WARPS = 4            # ... up to this many
FEW_PROGRAMS = 512  # a persistent reduction with fewer blocks than this doubles their warps ...
FEW_PROGRAMS_MAX_WARPS = 8  # ... up to this many
PERSISTENT_INNER_ROWS = 32  # rows of a persistent inner reduction per block, at most
# Many long rows: one row per program. On an H100 at 16k and 64k rows of 1024 fp32 this was 2-7%
# faster than 4 rows per program for a softmax, a layernorm and a logsumexp (at 4k rows, 0-7% slower)
ROW_PER_PROGRAM_MIN_R = 1024
ROW_PER_PROGRAM_MIN_ROWS = 16384
OUTER_MIN_XBLOCK = 8  # 8 fp32 columns: whole 32-byte sectors


def reduction_config(xnumel: int, rnumel: int, inner: bool, can_split: bool) -> tuple[str, int, int, int, int]:
    """(variant, XBLOCK, RBLOCK, num_warps, chunks): persistent when the reduced extent fits one
    block, split over r (`chunks` > 1) when the kept extent is too short to fill the GPU and the
    reduced one is long, looped otherwise."""
    if rnumel <= (PERSISTENT_MAX if inner else OUTER_PERSISTENT_MAX):
        rblock = next_pow2(max(rnumel, 1))
        xblock = max(1, min(PERSISTENT_INNER_ROWS if inner else OUTER_PERSISTENT_MAX, PERSISTENT_MAX // rblock))
        floor = 1 if inner else min(xblock, 16)  # outer: keep 64-byte row segments (coalesced)
        while xblock > floor and cdiv(xnumel, xblock) < MIN_PROGRAMS:
            xblock //= 2
        if inner and rblock >= ROW_PER_PROGRAM_MIN_R and xnumel >= ROW_PER_PROGRAM_MIN_ROWS:
            xblock = 1
        warps = min(max(xblock * rblock // PERSISTENT_ELEMENTS_PER_WARP, 1), PERSISTENT_MAX_WARPS)
        if cdiv(xnumel, xblock) < FEW_PROGRAMS:
            warps = min(warps * 2, FEW_PROGRAMS_MAX_WARPS)  # few blocks: more warps each keep more loads in flight
        return "persistent", xblock, rblock, warps, 1
    xblock, rblock = LOOPED_INNER if inner else LOOPED_OUTER
    warps = LOOPED_WARPS
    if not inner and not (can_split and rnumel >= SPLIT_MIN_R):
        # too short to split: narrower column blocks (still whole 32-byte sectors) for more programs
        while xblock > OUTER_MIN_XBLOCK and cdiv(xnumel, xblock) < OUTER_MIN_PROGRAMS:
            xblock, rblock = xblock // 2, min(rblock * 2, next_pow2(rnumel))
    if can_split and rnumel >= SPLIT_MIN_R:
        xprograms = cdiv(xnumel, xblock)
        if xprograms * 4 < SPLIT_TARGET_PROGRAMS:
            chunks = min(cdiv(SPLIT_TARGET_PROGRAMS, xprograms), cdiv(rnumel, 2 * rblock))
            if chunks > 1:
                rchunk = cdiv(cdiv(rnumel, chunks), rblock) * rblock
                return "split", xblock, rblock, warps, cdiv(rnumel, rchunk)
    return "looped", xblock, rblock, warps, 1


PHASED_MIN_R = 4096  # a strided kernel of several reductions runs one kernel per node from this reduced extent ...
PHASED_MIN_R_INNER = 8192  # ... an inner one (a row per program, a reduction to one value) from this one ...
PHASED_PROGRAMS = 264  # ... when its fused form would have fewer programs than this (2 per SM)


def phased(xnumel: int, rnumel: int, inner: bool) -> bool:
    """Whether a reduction kernel that cannot split runs as one kernel per node (each reduction
    split over r): a long reduced extent and too few kept elements to fill the GPU otherwise.
    Measured on an H100 (benchmarks/launch_configs.py, gpu.py): a softmax over dim 0 of 4096 x
    1024 gains phased (29.5 against 39.6 us); a cross-entropy's mean over 4096 rows loses (17.0
    against 16.0 us), over 16384 rows it is level with torch.compile phased."""
    programs = xnumel if inner else cdiv(xnumel, OUTER_MIN_XBLOCK)
    return rnumel >= (PHASED_MIN_R_INNER if inner else PHASED_MIN_R) and programs < PHASED_PROGRAMS


def finish_config(xnumel: int, chunks: int) -> tuple[int, int]:
    """(XBLOCK, RBLOCK) of the second stage: enough column blocks to spread over the GPU, and 32
    chunks per load (fixed, so the chunk count never picks another compile)."""
    return min(128, max(16, next_pow2(cdiv(xnumel, 128)))), 32


def int_spec(ints: tuple, dynamic: frozenset[int] = frozenset()) -> tuple:
    """How Triton specializes each int argument: equal to 1, a multiple of 16, or neither; "d"
    for one the kernel declares dynamic (`dynamic`: positions in `ints`, see `dynamic_ints`). The
    bound path keys on it. A float (a value a torch call returned) is an fp32 argument, never
    specialized."""
    return tuple(["f" if isinstance(v, float) else "d" if i in dynamic else 1 if v == 1 else
                  (16 if v & 15 == 0 else 0) for i, v in enumerate(ints)])


_DYNAMIC: dict[tuple[Any, int], frozenset[int]] = {}


def dynamic_ints(fn: Any, pointers: int) -> frozenset[int]:
    """Positions, among the int arguments after `pointers` pointers, of those `fn` declares
    do_not_specialize (codegen declares every size not a multiple of 16 on every call)."""
    key = (fn, pointers)
    found = _DYNAMIC.get(key)
    if found is None:
        names = list(getattr(fn, "arg_names", ()))  # NOTE: constexprs come last: positions hold
        declared = getattr(fn, "do_not_specialize", None)  # a JITFunction; the interpreter's keeps kwargs
        if declared is None:
            declared = getattr(fn, "kwargs", {}).get("do_not_specialize")
        indices = {d if isinstance(d, int) else names.index(d) for d in declared or () if d in names or
                   isinstance(d, int)}
        found = frozenset(i - pointers for i in indices if i >= pointers)
        _DYNAMIC[key] = found
    return found
