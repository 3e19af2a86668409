"""Run-time support for generated wrappers: loading kernel modules (cached per source text in
process and on disk), Triton's interpreter where there is no GPU, launch-time choices (persistent or
looped reduction, 32- or 64-bit indexing, block sizes) and calls into torch.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.fx

_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()
INT32_MAX = 2**31 - 1
PERSISTENT_MAX = 4096  # reduced elements that one block holds in registers


def use_interpreter() -> bool:
    """Triton's interpreter runs the kernels on CPU tensors where there is no GPU."""
    return not torch.cuda.is_available() or os.environ.get("TRITON_INTERPRET") == "1"


def prepare_interpreter() -> None:
    """Triton's library functions (tl.sum, tl.sigmoid, ...) are interpreted only if TRITON_INTERPRET
    was set when triton was imported. Set it if triton is not imported yet; otherwise let a jit
    function called inside an interpreted kernel run interpreted too."""
    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
        return
    from triton.runtime import interpreter, jit

    if getattr(jit.JITFunction, "_pdyn_interpreted", False):
        return
    cache: dict[Any, Any] = {}

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.fn not in cache:
            cache[self.fn] = interpreter.InterpretedFunction(self.fn)
        return cache[self.fn](*args, **kwargs)

    jit.JITFunction.__call__ = call
    jit.JITFunction._pdyn_interpreted = True


def cache_dir() -> Path:
    root = os.environ.get("PDYN_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"pdyn_{os.getuid()}")
    path = Path(root) / "triton"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_kernel(source: str, interpret: bool) -> ModuleType:
    """Import the module holding `source`; written once under the cache dir (Triton reads kernel
    source from files, and its own cache then finds the compiled binary in a later process)."""
    key = hashlib.sha256(f"{interpret}\n{source}".encode()).hexdigest()[:32]
    with _LOCK:
        if key in _MODULES:
            return _MODULES[key]
        path = cache_dir() / f"k{key}.py"
        if not path.exists():
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)  # NOTE: atomic, so a concurrent process never reads half a file
        module = _import(path, f"pdyn_kernel_{key}", interpret)
        _MODULES[key] = module
        return module


def _import(path: Path, name: str, interpret: bool) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # triton.jit reads TRITON_INTERPRET when it decorates, so it is set only while importing
    previous = os.environ.get("TRITON_INTERPRET")
    if interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        if previous is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = previous
    return module


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
FEW_PROGRAMS = 512  # a persistent reduction with fewer blocks than this doubles their warps


def reduction_config(xnumel: int, rnumel: int, inner: bool, can_split: bool) -> tuple[str, int, int, int, int]:
    """(variant, XBLOCK, RBLOCK, num_warps, chunks): persistent when the reduced extent fits one
    block, split over r (`chunks` > 1) when the kept extent is too short to fill the GPU and the
    reduced one is long, looped otherwise."""
    if rnumel <= (PERSISTENT_MAX if inner else OUTER_PERSISTENT_MAX):
        rblock = next_pow2(max(rnumel, 1))
        xblock = max(1, min(32 if inner else 64, 4096 // rblock))
        floor = 1 if inner else min(xblock, 16)  # outer: keep 64-byte row segments (coalesced)
        while xblock > floor and cdiv(xnumel, xblock) < MIN_PROGRAMS:
            xblock //= 2
        warps = min(max(xblock * rblock // PERSISTENT_ELEMENTS_PER_WARP, 1), PERSISTENT_MAX_WARPS)
        if cdiv(xnumel, xblock) < FEW_PROGRAMS:
            warps = min(warps * 2, 8)  # few blocks: more warps each keep more loads in flight
        return "persistent", xblock, rblock, warps, 1
    xblock, rblock = LOOPED_INNER if inner else LOOPED_OUTER
    warps = LOOPED_WARPS
    if not inner and not (can_split and rnumel >= SPLIT_MIN_R):
        # too short to split: narrower column blocks (still whole 32-byte sectors) for more programs
        while xblock > 8 and cdiv(xnumel, xblock) < OUTER_MIN_PROGRAMS:
            xblock, rblock = xblock // 2, min(rblock * 2, next_pow2(rnumel))
    if can_split and rnumel >= SPLIT_MIN_R:
        xprograms = cdiv(xnumel, xblock)
        if xprograms * 4 < SPLIT_TARGET_PROGRAMS:
            chunks = min(cdiv(SPLIT_TARGET_PROGRAMS, xprograms), cdiv(rnumel, 2 * rblock))
            if chunks > 1:
                rchunk = cdiv(cdiv(rnumel, chunks), rblock) * rblock
                return "split", xblock, rblock, warps, cdiv(rnumel, rchunk)
    return "looped", xblock, rblock, warps, 1


# How the second stage combines: a reduction of a [chunks, columns] tile along the chunks, then the
# running value; masked-off chunks load a neutral value (max and min: the first chunk's value).
SPLIT_FINISH = {
    "sum": ("0", "tl.sum(v, 0)[None, :]", "acc + part"),
    "prod": ("1", "tl.reduce(v, 0, _prod)[None, :]", "acc * part"),
    "max": ("first", "tl.reduce(v, 0, _max)[None, :]", "_max(acc, part)"),
    "min": ("first", "tl.reduce(v, 0, _min)[None, :]", "_min(acc, part)"),
}


def _finish_source() -> str:
    """Second stage of a split reduction: combine `chunks` rows of partial results per column,
    RBLOCK chunks at a time (one wide load, not a chain of dependent ones)."""
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
            "    for c0 in range(1, chunks, RBLOCK):",
            "        c = c0 + cbase",
            "        mask = xmask & (c < chunks)",
            f"        v = tl.load(src + (c * xnumel + xindex), mask, other={other if other != 'first' else 0})",
            f"        v = {masked}",
            f"        part = {part}",
            f"        acc = {combine}",
            "    tl.store(dst + xindex, acc.to(dst.dtype.element_ty), xmask)",
        ]
    return "\n".join(parts) + "\n"


def finish_config(xnumel: int, chunks: int) -> tuple[int, int]:
    """(XBLOCK, RBLOCK) of the second stage: enough column blocks to spread over the GPU, and 32
    chunks per load (fixed, so the chunk count never picks another compile)."""
    return min(128, max(16, next_pow2(cdiv(xnumel, 128)))), 32


def int_spec(ints: tuple) -> tuple:
    """How Triton specializes each int argument: equal to 1, a multiple of 16, or neither. Sizes
    are specialized, not declared dynamic: a multiple of 16 lets Triton vectorize masked and
    strided loads, and Triton checks it on every call (the bound path keys on it). A float (a
    value a torch call returned) is an fp32 argument, never specialized."""
    return tuple(["f" if isinstance(v, float) else 1 if v == 1 else (16 if v & 15 == 0 else 0)
                  for v in ints])


# -- launching -------------------------------------------------------------------------------------
class _Fast:
    """Triton's launch path without JITFunction.run's per-call binding and specialization: after a
    variant's first launch through Triton, its CompiledKernel's launcher is called directly. Only
    used where the call would specialize exactly as that first one did (every pointer 16-byte
    aligned, every int argument an i32); anything else goes through Triton's own path."""

    enabled = os.environ.get("PDYN_TRITON_FAST_LAUNCH", "1") != "0"

    def __init__(self) -> None:
        from triton import knobs
        from triton.runtime.driver import driver

        # NOTE: torch's own getter is the same answer as Triton's driver, without two Python layers
        self.device = getattr(torch._C, "_cuda_getDevice", None) or driver.active.get_current_device
        self.stream = driver.active.get_current_stream
        self.knobs = knobs.runtime
        self.direct = _direct_launch_layout()

    def hooks(self) -> bool:
        """Whether launch hooks are installed (None or an empty HookChain means none)."""
        k = self.knobs
        enter, leave = k.launch_enter_hook, k.launch_exit_hook
        return bool(getattr(enter, "calls", enter) or getattr(leave, "calls", leave))


# The C launcher's leading arguments in the Triton releases whose CudaLauncher we call past:
# grid x/y/z, stream, function, cooperative, pdl, global and profile scratch, metadata,
# launch metadata, enter and exit hooks; then the kernel's arguments.
_DIRECT_FORMAT = "iiiKKppOOOOOO"


def _direct_launch_layout() -> bool:
    """Whether Triton's CUDA launcher has the C entry point whose arguments pdyn knows; then a
    launch skips the Python layer in front of it and passes pointers as integers, which also skips
    one driver query per pointer (pdyn has already checked the device by its guards)."""
    try:
        from triton.backends.nvidia import driver as nvidia
    except Exception:  # noqa: BLE001  # no CUDA backend in this Triton
        return False
    return getattr(nvidia, "_BASE_ARGS_FORMAT", None) == _DIRECT_FORMAT


def _direct_entry(launcher: Any) -> tuple | None:
    """(C launch, cooperative, pdl) of a bound CudaLauncher that needs no scratch memory, else None."""
    try:
        if launcher.global_scratch_size or launcher.profile_scratch_size:
            return None
        return launcher.launch, launcher.launch_cooperative_grid, launcher.launch_pdl
    except AttributeError:
        return None


def _fast() -> _Fast | None:
    global _FAST
    if _FAST is False:
        try:
            _FAST = _Fast() if _Fast.enabled else None
        except Exception:  # noqa: BLE001  # another Triton layout: Triton's own launch path
            _FAST = None
    return _FAST  # type: ignore[return-value]


_FAST: Any = False


def _disable_fast() -> None:
    global _FAST
    _FAST = None


class KernelLauncher:
    """Launches one generated kernel (bound once at compile time, called by the wrapper on every
    call): picks the variant and block sizes from the actual sizes, the index width from the
    actual extents, and launches through a cached compiled launcher where it can."""

    def __init__(self, module: ModuleType, reduction: bool, inner: bool,
                 split: Any = None, interpret: bool = False) -> None:
        self.module, self.reduction, self.inner, self.split = module, reduction, inner, split
        self.interpret = interpret
        self.functions = {name: getattr(module, f"kernel_{name}") for name in
                          ("persistent", "looped", "split") if hasattr(module, f"kernel_{name}")}
        if not reduction:
            self.functions = {"pointwise": module.kernel}
        self.finish = None
        if split is not None:
            self.finish = getattr(load_kernel(_finish_source(), interpret), f"finish_{split.kind}")
        # (function, constexprs, warps, device, int specialization) -> bound launcher
        self.compiled: dict[tuple, tuple] = {}
        self.plans: dict[Any, list] = {}  # actual size(s) -> launch plan
        self.ready: dict[Any, tuple] = {}  # (sizes, xnumel[, rnumel]) -> a direct launch, all but pointers
        self.fast_launches = 0  # observed by tests

    # Per call: a plan per actual size (variant, grid, constexprs; cached, bounded), then the bound
    # launcher if every argument specializes as at its first launch, else the general path.
    def pointwise(self, ptrs: tuple, sizes: tuple, xnumel: int) -> None:
        ready = self.ready.get((sizes, xnumel))
        if ready is not None and self._launch_ready(ready, ptrs):
            return
        plan = self.plans.get(xnumel)
        if plan is None:
            if xnumel <= 0:
                return
            xblock, warps = pointwise_config(xnumel)
            plan = self._plan(xnumel, [self.functions["pointwise"], (cdiv(xnumel, xblock), 1, 1),
                                       (xnumel,), (xblock, False), warps, xnumel > INT32_MAX])
        ints = sizes + plan[2]
        if not self._fast_call(plan, ptrs, ints, (sizes, xnumel)):
            self.launch(plan[0], plan[1], ptrs, ints,
                        (plan[3][0], plan[5] or needs_int64(xnumel, *ptrs)), plan[4])

    def reduce(self, ptrs: tuple, sizes: tuple, xnumel: int, rnumel: int) -> None:
        ready = self.ready.get((sizes, xnumel, rnumel))
        if ready is not None and self._launch_ready(ready, ptrs):
            return
        plan = self.plans.get((xnumel, rnumel))
        if plan is None:
            if xnumel <= 0:
                return
            plan = self._reduction_plan(xnumel, rnumel)
        if len(plan) > 7:
            self._split(plan, ptrs, sizes, xnumel, rnumel)
            return
        ints = sizes + plan[2]
        if not self._fast_call(plan, ptrs, ints, (sizes, xnumel, rnumel)):
            index64 = plan[5] or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(plan[0], plan[1], ptrs, ints, plan[3][:2] + (index64,), plan[4])

    def _reduction_plan(self, xnumel: int, rnumel: int) -> list:
        variant, xblock, rblock, warps, chunks = reduction_config(
            xnumel, rnumel, self.inner, self.finish is not None)
        big = xnumel * max(rnumel, 1) > INT32_MAX
        if variant != "split":
            return self._plan((xnumel, rnumel), [
                self.functions[variant], (cdiv(xnumel, xblock), 1, 1), (xnumel, rnumel),
                (xblock, rblock, False), warps, big])
        rchunk = cdiv(cdiv(rnumel, chunks), rblock) * rblock
        plan = self._plan((xnumel, rnumel), [
            self.functions["split"], (cdiv(xnumel, xblock), chunks, 1), (xnumel, rnumel, rchunk),
            (xblock, rblock, False), warps, big])
        fblock, cblock = finish_config(xnumel, chunks)
        plan.append([self.finish, (cdiv(xnumel, fblock), 1, 1), (xnumel, chunks), (fblock, cblock, False), 4,
                     big, {}])
        return plan

    def _plan(self, key: Any, plan: list) -> list:
        """[function, grid, trailing ints, constexprs (32-bit), warps, needs int64,
        {int arguments: bound launcher}]"""
        if len(self.plans) > 1024:
            self.plans.clear()
        plan.append({})
        self.plans[key] = plan
        return plan

    def _launch_ready(self, ready: tuple, ptrs: tuple) -> bool:
        """The per-call path once a size has launched directly: everything but the pointers and
        the stream was decided then. The wrapper has made the graph's device current, the device
        this entry was bound on."""
        addresses = []
        for t in ptrs:  # NOTE: the same two checks as _fast_call: 16-byte aligned, 32-bit extents
            address = t.data_ptr()
            if address & 15 or t.untyped_storage().nbytes() > INT32_MAX:
                return False
            addresses.append(address)
        fast = _FAST
        if not fast or fast.hooks():
            return False
        launch, g0, g1, g2, device, function, cooperative, pdl, metadata, tail = ready
        launch(g0, g1, g2, fast.stream(device), function, cooperative, pdl, None, None, metadata, None, None,
               None, *addresses, *tail)
        self.fast_launches += 1
        return True

    def _fast_call(self, plan: list, ptrs: tuple, ints: tuple, key: Any = None) -> bool:
        if plan[5] or self.interpret:
            return False
        fast = _FAST if _FAST is not False else _fast()
        if fast is None:
            return False
        if max(ints) > INT32_MAX or min(ints) < 0:
            return False
        addresses = []
        for t in ptrs:  # NOTE: Triton specializes on 16-byte alignment; storage < 2 GiB: 32-bit ok
            address = t.data_ptr()
            if address & 15 or t.untyped_storage().nbytes() > INT32_MAX:
                return False
            addresses.append(address)
        device = fast.device()
        bound = plan[6].get(ints)  # the same sizes again: no specialization to recompute
        if bound is None or bound[5] != device:
            bound = self.compiled.get((plan[0], plan[3], plan[4], device, int_spec(ints)))
            if bound is None:
                return False
            if len(plan[6]) > 256:
                plan[6].clear()
            plan[6][ints] = bound
        if fast.hooks():
            return False  # a profiler's launch hooks: Triton's path calls them
        run, function, metadata, enter, leave, _, direct = bound
        grid = plan[1]
        try:
            if direct is not None:
                launch, cooperative, pdl = direct
                launch(grid[0], grid[1], grid[2], fast.stream(device), function, cooperative, pdl, None, None,
                       metadata, None, None, None, *addresses, *ints, *plan[3])
                if key is not None:
                    if len(self.ready) > 1024:
                        self.ready.clear()
                    self.ready[key] = (launch, grid[0], grid[1], grid[2], device, function, cooperative, pdl,
                                       metadata, ints + plan[3])
            else:
                run(grid[0], grid[1], grid[2], fast.stream(device), function, metadata, None, enter, leave,
                    *ptrs, *ints, *plan[3])
        except TypeError:  # NOTE: a launcher that takes other arguments (another Triton): the
            _disable_fast()  # arguments are parsed before anything is enqueued, so Triton's
            return False     # path can still launch this call
        self.fast_launches += 1
        return True

    def _split(self, plan: list, ptrs: tuple, sizes: tuple, xnumel: int, rnumel: int) -> None:
        """Stage 1: partial results per r chunk into a [chunks, xnumel] buffer; stage 2: combine."""
        out = ptrs[self.split.out]
        partial = torch.empty((plan[1][1], xnumel), dtype=self.split.acc_dtype, device=out.device)
        stage1, ints = ptrs + (partial,), sizes + plan[2]
        index64 = plan[5]
        if not self._fast_call(plan, stage1, ints):
            index64 = index64 or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(plan[0], plan[1], stage1, ints, plan[3][:2] + (index64,), plan[4])
        finish = plan[7]
        if not self._fast_call(finish, (partial, out), finish[2]):
            index64 = index64 or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(finish[0], finish[1], (partial, out), finish[2], finish[3][:2] + (index64,), 4)

    def launch(self, fn: Any, grid: tuple[int, int, int], ptrs: tuple, ints: tuple,
               consts: tuple, warps: int) -> None:
        """The general path: through Triton (binding, specialization, compile on a miss); where the
        call qualifies for the bound path, the compiled kernel's launcher is kept for later calls."""
        fast = None if self.interpret else _fast()
        kernel = self._slow(fn, grid, ptrs, ints, consts, warps)
        if fast is None or max(ints) > INT32_MAX or min(ints) < 0 or \
                any(t.data_ptr() & 15 for t in ptrs):
            return
        try:
            device = fast.device()
            direct = _direct_entry(kernel.run) if fast.direct else None
            bound = (kernel.run, kernel.function, kernel.packed_metadata, None, None, device, direct)
        except Exception:  # noqa: BLE001  # a Triton without these attributes: this path only
            return
        self.compiled[(fn, consts, warps, device, int_spec(ints))] = bound

    @staticmethod
    def _slow(fn: Any, grid: tuple[int, int, int], ptrs: tuple, ints: tuple, consts: tuple,
              warps: int) -> Any:
        names = ("XBLOCK", "INDEX64") if len(consts) == 2 else ("XBLOCK", "RBLOCK", "INDEX64")
        return fn[grid](*ptrs, *ints, **dict(zip(names, consts)), num_warps=warps)


def allocator(device: torch.device) -> Any:
    """`empty(size, stride, dtype)` on `device`: torch's C++ entry that Inductor's wrappers call
    (no Python argument parsing; about 2.5x cheaper per call), else torch.empty_strided. The CUDA
    one allocates on the current device, which the wrapper has made `device`."""
    fast = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    entry = getattr(fast, f"_empty_strided_{device.type}", None)
    if entry is not None:
        return entry

    def empty(size: tuple, stride: tuple, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty_strided(size, stride, dtype=dtype, device=device)

    return empty


def contiguous(t: Any) -> Any:
    return t.contiguous() if isinstance(t, torch.Tensor) and not t.is_contiguous() else t


class TorchOp:
    """One fx node run with torch: `values` replace the node's input nodes in order."""

    def __init__(self, node: torch.fx.Node, gm: torch.fx.GraphModule, target: Any = None,
                 args: Any = None, kwargs: Any = None) -> None:
        self.inputs = list(node.all_input_nodes)
        self.op = node.op
        self.target = node.target if target is None else target
        self.args = node.args if args is None else args
        self.kwargs = node.kwargs if kwargs is None else kwargs
        if self.op in ("get_attr", "call_module"):
            self.target = _fetch_attr(gm, node.target)
        if target is not None:
            self.op = "call_function"
        self.plan = self._plan()

    def _plan(self) -> tuple[list, dict] | None:
        """Where each argument comes from, decided once: (True, input position) for a node, (False,
        value) for a constant. None where a node sits inside a container (map_arg then)."""
        if self.op != "call_function":
            return None
        pos = {n: i for i, n in enumerate(self.inputs)}

        def spec(a: Any) -> tuple[bool, Any] | None:
            if isinstance(a, torch.fx.Node):
                return (True, pos[a])
            found: list[Any] = []
            torch.fx.node.map_arg(a, found.append)
            return None if found else (False, a)

        args = [spec(a) for a in self.args]
        kwargs = {k: spec(v) for k, v in self.kwargs.items()}
        if any(a is None for a in args) or any(v is None for v in kwargs.values()):
            return None
        return args, kwargs  # type: ignore[return-value]

    def __call__(self, *values: Any) -> Any:
        plan = self.plan
        if plan is not None:  # NOTE: the per-call path: no dict, no recursive map_arg
            args = [values[a] if node else a for node, a in plan[0]]
            if plan[1]:
                return self.target(*args, **{k: values[a] if node else a
                                             for k, (node, a) in plan[1].items()})
            return self.target(*args)
        if self.op == "get_attr":
            return self.target
        env = dict(zip(self.inputs, values))
        args = torch.fx.node.map_arg(self.args, env.__getitem__)
        kwargs = torch.fx.node.map_arg(self.kwargs, env.__getitem__)
        if self.op == "call_method":
            return getattr(args[0], self.target)(*args[1:], **kwargs)
        return self.target(*args, **kwargs)  # a function, or the submodule of a call_module node


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj
