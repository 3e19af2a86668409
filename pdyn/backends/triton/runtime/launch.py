"""`KernelLauncher`: launches one generated kernel on every call of the wrapper. It picks the
variant and blocks from the actual sizes (a `LaunchPlan` per size, cached), the index width from
the actual extents, and launches through the bound C launcher where the call specializes as an
earlier one did, else through Triton.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import torch

from pdyn.backends.triton.kernel_builder import CHECK_MESSAGES, INDEX_ERRORS
from pdyn.backends.triton.runtime.cache import load_kernel
from pdyn.backends.triton.runtime.fast_launch import (
    BoundLauncher, FastLaunch, ReadyLaunch, direct_entry, make_fast_launch,
)
from pdyn.backends.triton.runtime.launch_config import (
    INT32_MAX, cdiv, dynamic_ints, finish_config, int_spec, needs_int64, next_pow2, pointwise_config,
    reduction_config, tile_config,
)
from pdyn.backends.triton.runtime.split_finish import finish_source

INT32_MIN = -(2 ** 31)  # Triton passes an int in [INT32_MIN, INT32_MAX] as i32


def debug_options(fn: Any) -> dict[str, Any]:
    """A kernel compiled with device asserts (an index check) keeps Triton's integer-overflow
    asserts off: they would check every index add (Triton versions that have them)."""
    if getattr(fn, "debug", None) is not True:
        return {}
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return {}
    fields = getattr(CUDAOptions, "__dataclass_fields__", {})
    return {"sanitize_overflow": False} if "sanitize_overflow" in fields else {}


# Bounds on the per-launcher caches: past them a cache starts over (sizes that never repeat must
# not grow memory without end; a real workload sees a few dozen sizes).
MAX_PLANS = 1024  # sizes with a launch plan
MAX_BOUND_PER_PLAN = 256  # int arguments with a bound launcher, per plan
MAX_READY = 1024  # sizes with a prepared direct launch


@dataclass(slots=True, eq=False)
class LaunchPlan:
    """How one kernel variant launches for one actual size, decided once per size."""

    function: Any  # the @triton.jit function of the variant
    grid: tuple[int, int, int]
    trailing_ints: tuple[int, ...]  # int arguments after the sizes: xnumel (, rnumel (, rchunk | chunks))
    constexprs: tuple  # (XBLOCK[, RBLOCK], INDEX64) with 32-bit indexing
    warps: int
    index64: bool  # the iteration space alone needs 64-bit indices
    bound: dict[tuple, BoundLauncher] = field(default_factory=dict)  # int arguments -> launcher
    finish: LaunchPlan | None = None  # a split reduction's second stage

    def constexprs_with(self, index64: bool) -> tuple:
        return self.constexprs[:-1] + (index64,)


# A launch of fewer elements is bound by its latency: vector loads (a multiple of 16) do not pay
# for a compile of their own there (benchmarks/gpu.py: 256 rows of 1024 run in about 3 us either way)
VECTOR_MIN_ELEMENTS = 1 << 20
_TWINS: dict[Any, Any] = {}  # kernel function -> its dynamic twin (None: none), for the process
_TWIN_LOCK = threading.Lock()

def _distance(a: tuple[tuple[int, ...], int], b: tuple[tuple[int, ...], int]) -> float:
    """How far apart two (blocks, warps) configurations are: factors of two, summed."""
    (blocks_a, warps_a), (blocks_b, warps_b) = a, b
    return sum(abs(math.log2(x / y)) for x, y in zip(blocks_a + (warps_a,), blocks_b + (warps_b,)))


# The fast path: False until first asked for, then a FastLaunch or None (Triton's path only).
_FAST: Any = False


def _fast() -> FastLaunch | None:
    global _FAST
    if _FAST is False:
        _FAST = make_fast_launch()
    return _FAST  # type: ignore[no-any-return]


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
            self.finish = getattr(load_kernel(finish_source(interpret), interpret), f"finish_{split.kind}")
        # (function, constexprs, warps, device, int specialization) -> bound launcher
        self.compiled: dict[tuple, BoundLauncher] = {}
        self.plans: dict[Any, LaunchPlan] = {}  # actual size(s) -> launch plan
        self.configs: dict[str, list[tuple[tuple[int, ...], int]]] = {}  # variant -> (blocks, warps) planned
        self.ready: dict[Any, ReadyLaunch] = {}  # (sizes, xnumel[, rnumel]) -> a direct launch
        self.fast_launches = 0  # observed by tests
        # sizes whose residues may change (codegen's DYNAMIC_<function>) and the twin that declares them dynamic
        self.changing = {f: tuple(getattr(module, f"DYNAMIC_{f.fn.__name__}", ())) for f in self.functions.values()}
        self.twins: dict[Any, Any] = {}
        self.changing_positions: dict[tuple, tuple] = {}  # (function, pointers) -> (changing, extents) in ints

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
            plan = self.pointwise_plan(xnumel)
        ints = sizes + plan.trailing_ints
        if not self._fast_call(plan, ptrs, ints, (sizes, xnumel)):
            index64 = plan.index64 or needs_int64(xnumel, *ptrs)
            self.launch(plan.function, plan.grid, ptrs, ints, plan.constexprs_with(index64), plan.warps)

    def tiled(self, ptrs: tuple, sizes: tuple, ynumel: int, xnumel: int) -> None:
        """A 2-D tiled pointwise kernel: tiles from the actual extents of y and x."""
        ready = self.ready.get((sizes, ynumel, xnumel))
        if ready is not None and self._launch_ready(ready, ptrs):
            return
        plan = self.plans.get((ynumel, xnumel))
        if plan is None:
            if xnumel <= 0 or ynumel <= 0:
                return
            plan = self.tiled_plan(ynumel, xnumel)
        ints = sizes + plan.trailing_ints
        if not self._fast_call(plan, ptrs, ints, (sizes, ynumel, xnumel)):
            index64 = plan.index64 or needs_int64(xnumel * ynumel, *ptrs)
            self.launch(plan.function, plan.grid, ptrs, ints, plan.constexprs_with(index64), plan.warps,
                        ("YBLOCK", "XBLOCK", "INDEX64"))

    def reduce(self, ptrs: tuple, sizes: tuple, xnumel: int, rnumel: int) -> None:
        ready = self.ready.get((sizes, xnumel, rnumel))
        if ready is not None and self._launch_ready(ready, ptrs):
            return
        plan = self.plans.get((xnumel, rnumel))
        if plan is None:
            if xnumel <= 0:
                return
            plan = self._reduction_plan(xnumel, rnumel)
        if plan.finish is not None:
            self._split(plan, ptrs, sizes, xnumel, rnumel)
            return
        ints = sizes + plan.trailing_ints
        if not self._fast_call(plan, ptrs, ints, (sizes, xnumel, rnumel)):
            index64 = plan.index64 or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(plan.function, plan.grid, ptrs, ints, plan.constexprs_with(index64), plan.warps)

    # Plans for a new size (the launch's, and the compiles ahead's: both go through these).
    def pointwise_plan(self, xnumel: int) -> LaunchPlan:
        xblock, warps = pointwise_config(xnumel)
        (xblock,), warps = self._reuse("pointwise", (xblock,), warps, xnumel)
        return self._remember(xnumel, LaunchPlan(
            self.functions["pointwise"], (cdiv(xnumel, xblock), 1, 1), (xnumel,), (xblock, False), warps,
            xnumel > INT32_MAX))

    def tiled_plan(self, ynumel: int, xnumel: int) -> LaunchPlan:
        yblock, xblock, warps = tile_config(ynumel, xnumel)
        (yblock, xblock), warps = self._reuse("tiled", (yblock, xblock), warps, ynumel * xnumel)
        return self._remember((ynumel, xnumel), LaunchPlan(
            self.functions["pointwise"], (cdiv(xnumel, xblock) * cdiv(ynumel, yblock), 1, 1),
            (ynumel, xnumel), (yblock, xblock, False), warps, xnumel * ynumel > INT32_MAX))

    def _reduction_plan(self, xnumel: int, rnumel: int) -> LaunchPlan:
        variant, xblock, rblock, warps, chunks = reduction_config(
            xnumel, rnumel, self.inner, self.finish is not None)
        big = xnumel * max(rnumel, 1) > INT32_MAX
        if variant != "split":
            # a persistent block must hold the whole reduced extent; a looped one walks any
            least = next_pow2(max(rnumel, 1)) if variant == "persistent" else 0
            (xblock, rblock), warps = self._reuse(variant, (xblock, rblock), warps, xnumel * max(rnumel, 1),
                                                  lambda blocks: blocks[1] >= least)
            return self._remember((xnumel, rnumel), LaunchPlan(
                self.functions[variant], (cdiv(xnumel, xblock), 1, 1), (xnumel, rnumel),
                (xblock, rblock, False), warps, big))
        rchunk = cdiv(cdiv(rnumel, chunks), rblock) * rblock
        fblock, cblock = finish_config(xnumel, chunks)
        finish = LaunchPlan(self.finish, (cdiv(xnumel, fblock), 1, 1), (xnumel, chunks), (fblock, cblock, False),
                            4, big)
        return self._remember((xnumel, rnumel), LaunchPlan(
            self.functions["split"], (cdiv(xnumel, xblock), chunks, 1), (xnumel, rnumel, rchunk),
            (xblock, rblock, False), warps, big, finish=finish))

    def _reuse(self, variant: str, blocks: tuple[int, ...], warps: int, elements: int,
               fits: Callable[[tuple[int, ...]], bool] = lambda blocks: True) -> tuple[tuple[int, ...], int]:
        """The blocks and warps a new size launches with: the table's (`blocks`, `warps`), unless
        the launch is bound by its latency and this kernel has planned another configuration that
        `fits`: then the nearest of those, already compiled (or being compiled ahead), rather than a
        new compile. So a serving sequence whose sizes cross the table's thresholds compiles a
        configuration per variant once, not once per threshold; large launches keep the table's."""
        planned = self.configs.setdefault(variant, [])
        if (blocks, warps) in planned:
            return blocks, warps
        if elements < VECTOR_MIN_ELEMENTS:
            near = [c for c in planned if fits(c[0])]
            if near:
                return min(near, key=lambda c: _distance(c, (blocks, warps)))
        planned.append((blocks, warps))
        return blocks, warps

    def _remember(self, key: Any, plan: LaunchPlan) -> LaunchPlan:
        if len(self.plans) > MAX_PLANS:
            self.plans.clear()
        self.plans[key] = plan
        return plan

    def _launch_ready(self, ready: ReadyLaunch, ptrs: tuple) -> bool:
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

    def _fast_call(self, plan: LaunchPlan, ptrs: tuple, ints: tuple, key: Any = None) -> bool:
        if plan.index64 or self.interpret:
            return False
        fast = _FAST if _FAST is not False else _fast()
        if fast is None:
            return False
        if max(ints) > INT32_MAX or min(ints) < INT32_MIN:  # NOTE: a negative int (an offset such as
            return False                                    # -s4) is an i32 specialized as a positive one
        addresses = []
        for t in ptrs:  # NOTE: Triton specializes on 16-byte alignment; storage < 2 GiB: 32-bit ok
            address = t.data_ptr()
            if address & 15 or t.untyped_storage().nbytes() > INT32_MAX:
                return False
            addresses.append(address)
        device = fast.device()
        bound = plan.bound.get(ints)  # the same sizes again: no specialization to recompute
        if bound is None or bound.device != device:
            # NOTE: the variant `launch` would compile, not any compiled one: a large launch of a
            # twin compiled by smaller ones would lose its vector loads
            function = self.choose(plan.function, plan.constexprs, plan.warps, ints, len(ptrs))
            bound = self._bound(function, plan, ints, len(ptrs), device)
            if bound is None:
                return False
            if len(plan.bound) > MAX_BOUND_PER_PLAN:
                plan.bound.clear()
            plan.bound[ints] = bound
        if fast.hooks():
            return False  # a profiler's launch hooks: Triton's path calls them
        run, function, metadata, enter, leave, _, direct = bound
        grid, consts = plan.grid, plan.constexprs
        try:
            if direct is not None:
                launch, cooperative, pdl = direct
                launch(grid[0], grid[1], grid[2], fast.stream(device), function, cooperative, pdl, None, None,
                       metadata, None, None, None, *addresses, *ints, *consts)
                if key is not None:
                    if len(self.ready) > MAX_READY:
                        self.ready.clear()
                    self.ready[key] = ReadyLaunch(launch, grid[0], grid[1], grid[2], device, function, cooperative,
                                                  pdl, metadata, ints + consts)
            else:
                run(grid[0], grid[1], grid[2], fast.stream(device), function, metadata, None, enter, leave,
                    *ptrs, *ints, *consts)
        except TypeError:  # NOTE: a launcher that takes other arguments (another Triton): the
            _disable_fast()  # arguments are parsed before anything is enqueued, so Triton's
            return False     # path can still launch this call
        self.fast_launches += 1
        return True

    def _split(self, plan: LaunchPlan, ptrs: tuple, sizes: tuple, xnumel: int, rnumel: int) -> None:
        """Stage 1: partial results per r chunk into a [chunks, xnumel] buffer; stage 2: combine."""
        out = ptrs[self.split.out]
        partial = torch.empty((plan.grid[1], xnumel), dtype=self.split.acc_dtype, device=out.device)
        stage1, ints = ptrs + (partial,), sizes + plan.trailing_ints
        index64 = plan.index64
        if not self._fast_call(plan, stage1, ints):
            index64 = index64 or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(plan.function, plan.grid, stage1, ints, plan.constexprs_with(index64), plan.warps)
        finish = plan.finish
        assert finish is not None, "a split plan has a second stage"
        if not self._fast_call(finish, (partial, out), finish.trailing_ints):
            index64 = index64 or needs_int64(xnumel * max(rnumel, 1), *ptrs)
            self.launch(finish.function, finish.grid, (partial, out), finish.trailing_ints,
                        finish.constexprs_with(index64), finish.warps)

    def _bound(self, fn: Any, plan: LaunchPlan, ints: tuple, pointers: int, device: int) -> BoundLauncher | None:
        spec = int_spec(ints, dynamic_ints(fn, pointers))
        return self.compiled.get((fn, plan.constexprs, plan.warps, device, spec))

    def twin(self, fn: Any) -> Any:
        """`fn` with the sizes its kernel lists as changing declared do_not_specialize: one compile
        serves every residue of them (None: no such size, or the interpreter). One per function
        in the process: layers whose kernel text is the same share it, and its compiles."""
        twin = self.twins.get(fn, False)
        if twin is False:
            with _TWIN_LOCK:
                twin = _TWINS.get(fn, False)
                if twin is False:
                    twin = None
                    if not self.interpret and self.changing.get(fn):
                        from triton.runtime.jit import JITFunction

                        declared = list(getattr(fn, "do_not_specialize", None) or ())
                        twin = JITFunction(fn.fn, do_not_specialize=declared + list(self.changing[fn]),
                                           debug=getattr(fn, "debug", None))
                    _TWINS[fn] = twin
            self.twins[fn] = twin
        return twin

    def choose(self, fn: Any, consts: tuple, warps: int, ints: tuple, pointers: int) -> Any:
        """The variant a launch with `ints` compiles: `fn`, specialized by Triton, when the launch
        is large enough to be bound by memory bandwidth and every size that may change is a
        multiple of 16 (what vector loads need); else the twin. Triton's specialization of other
        values says nothing a dynamic int does not (bar == 1), and a small launch is bound by its
        latency, so a serving sequence's sizes cost at most two compiles per kernel, not one per
        residue pattern, while large multiples of 16 keep their vector loads."""
        twin = self.twin(fn)
        if twin is None:
            return fn
        key = (fn, pointers)
        found = self.changing_positions.get(key)
        if found is None:
            names = list(fn.arg_names)
            changing = tuple(names.index(n) - pointers for n in self.changing[fn])
            extents = tuple(names.index(n) - pointers for n in ("ynumel", "xnumel", "rnumel") if n in names)
            found = self.changing_positions[key] = (changing, extents)
        changing, extents = found
        if math.prod(ints[p] for p in extents) < VECTOR_MIN_ELEMENTS:
            return twin
        return fn if all(ints[p] % 16 == 0 and ints[p] != 1 for p in changing) else twin

    def launch(self, fn: Any, grid: tuple[int, int, int], ptrs: tuple, ints: tuple,
               consts: tuple, warps: int, names: tuple[str, ...] | None = None) -> None:
        """The general path: through Triton (binding, specialization, compile on a miss); where the
        call qualifies for the bound path, the compiled kernel's launcher is kept for later calls."""
        fn = self.choose(fn, consts, warps, ints, len(ptrs))
        # NOTE: an empty tensor's pointer may be null or dangling: the interpreter crashes on a masked
        # load of it, and a GPU kernel over an empty dim hit an illegal address. A one-element
        # stand-in is a real allocation; such a launch is not kept for the bound path.
        empty = any(t.numel() == 0 for t in ptrs)
        if empty:
            ptrs = tuple(t if t.numel() else _one_element(t) for t in ptrs)
        fast = None if self.interpret or empty else _fast()
        try:
            kernel = self._slow(fn, grid, ptrs, ints, consts, warps, names)
        except Exception as e:
            # the interpreter wraps what a kernel's check raised: eager's error, unwrapped
            cause = e.__cause__
            if self.interpret and isinstance(cause, INDEX_ERRORS) and str(cause) in CHECK_MESSAGES:
                raise cause from None
            raise
        if fast is None or max(ints) > INT32_MAX or min(ints) < INT32_MIN or \
                any(t.data_ptr() & 15 for t in ptrs):
            return
        try:
            device = fast.device()
            direct = direct_entry(kernel.run) if fast.direct else None
            bound = BoundLauncher(kernel.run, kernel.function, kernel.packed_metadata, None, None, device, direct)
        except Exception:  # noqa: BLE001  # a Triton without these attributes: this path only
            return
        self.compiled[(fn, consts, warps, device, int_spec(ints, dynamic_ints(fn, len(ptrs))))] = bound

    @staticmethod
    def _slow(fn: Any, grid: tuple[int, int, int], ptrs: tuple, ints: tuple, consts: tuple,
              warps: int, names: tuple[str, ...] | None = None) -> Any:
        if names is None:
            names = ("XBLOCK", "INDEX64") if len(consts) == 2 else ("XBLOCK", "RBLOCK", "INDEX64")
        return fn[grid](*ptrs, *ints, **dict(zip(names, consts)), **debug_options(fn), num_warps=warps)


def _one_element(t: torch.Tensor) -> torch.Tensor:
    """A stand-in for an empty tensor a kernel is launched with: every access to it is masked
    off (a reduction over an empty dim, a store of zero elements), so its contents are never read."""
    return torch.zeros(1, dtype=t.dtype, device=t.device)
