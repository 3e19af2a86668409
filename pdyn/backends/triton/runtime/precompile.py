"""Compile a graph's kernels before its first call launches them, several at once.

Triton compiles a kernel on its first launch with a new specialization, one after another as the
wrapper runs. At compile time the example call's sizes already say which variant, blocks and int
specialization every launch of the first call will use, so each distinct (function, arguments'
specialization, options) is compiled ahead in a thread pool (`JITFunction.warmup`, with dtypes for
pointers), once even where layers repeat (identical kernel text is one module, so one function).
The launch then finds the binary in Triton's cache. Anything that goes wrong here only means the
launch compiles as before. `PDYN_TRITON_COMPILE_THREADS` sets the pool (0: off).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from pdyn.backends.triton.runtime.launch import KernelLauncher, LaunchPlan, debug_options
from pdyn.backends.triton.runtime.launch_config import INT32_MAX, dynamic_ints

log = logging.getLogger("pdyn.lowering")

STATS = {"jobs": 0, "compiled": 0, "seconds": 0.0, "failed": 0}  # observed by benchmarks and tests
_LOCK = threading.Lock()
_DONE: set[tuple] = set()  # jobs compiled (or tried) in this process
MAX_DONE = 1 << 16


def threads() -> int:
    value = os.environ.get("PDYN_TRITON_COMPILE_THREADS")
    if value is not None:
        return max(0, int(value))
    return min(16, os.cpu_count() or 1)


@dataclass(frozen=True)
class Job:
    """One compile: `function` specialized for these arguments and options."""

    function: Any
    grid: tuple[int, int, int]
    args: tuple  # torch dtypes for pointers, ints as the launch passes them
    constexprs: tuple[tuple[str, Any], ...]
    warps: int

    def key(self) -> tuple:
        """What Triton compiles for: the function, each argument's dtype or int class (1, a
        multiple of 16, other), the constexprs and warps."""
        pointers = next((i for i, a in enumerate(self.args) if not isinstance(a, torch.dtype)), len(self.args))
        dynamic = dynamic_ints(self.function, pointers)
        spec = tuple(str(a) if i < pointers or not isinstance(a, int) else "d" if i - pointers in dynamic else
                     "1" if a == 1 else "16" if a % 16 == 0 else "" for i, a in enumerate(self.args))
        return (self.function, spec, self.constexprs, self.warps)

    def run(self) -> None:
        options = dict(self.constexprs) | debug_options(self.function)
        kernel = self.function.warmup(*self.args, grid=self.grid, **options, num_warps=self.warps)
        load = getattr(kernel, "_init_handles", None)
        if load is not None:  # NOTE: builds the C launcher (a C compiler run per new signature, 0.2-0.4 s)
            load()            # and loads the binary here, in parallel, not at the first launch


def _job(launcher: KernelLauncher, plan: LaunchPlan, ptrs: tuple, ints: tuple, names: tuple[str, ...]) -> Job:
    function = launcher.choose(plan.function, plan.constexprs, plan.warps, ints, len(ptrs))
    return Job(function, plan.grid, ptrs + ints, tuple(zip(names, plan.constexprs)), plan.warps)


def launcher_jobs(launcher: KernelLauncher, ptrs: tuple[torch.dtype, ...], sizes: tuple[int, ...],
                  dims: tuple[int, ...], tiled: bool) -> list[Job]:
    """The compiles `launcher` will need for a launch with these pointer dtypes, size arguments and
    extents ((x,), (x, r) or (y, x)): the plan it will choose for them, as KernelLauncher does."""
    if any(d <= 0 for d in dims) or max(sizes + dims, default=0) > INT32_MAX:
        return []
    if tiled:
        plan = launcher.plans.get(dims) or launcher.tiled_plan(*dims)
        return [_job(launcher, plan, ptrs, sizes + plan.trailing_ints, ("YBLOCK", "XBLOCK", "INDEX64"))]
    if not launcher.reduction:
        plan = launcher.plans.get(dims[0]) or launcher.pointwise_plan(dims[0])
        return [_job(launcher, plan, ptrs, sizes + plan.trailing_ints, ("XBLOCK", "INDEX64"))]
    xnumel, rnumel = dims
    plan = launcher.plans.get((xnumel, rnumel)) or launcher._reduction_plan(xnumel, rnumel)
    if plan.index64:
        return []
    names = ("XBLOCK", "RBLOCK", "INDEX64")
    if plan.finish is None:
        return [_job(launcher, plan, ptrs, sizes + plan.trailing_ints, names)]
    acc = launcher.split.acc_dtype
    out = ptrs[launcher.split.out]
    return [_job(launcher, plan, ptrs + (acc,), sizes + plan.trailing_ints, names),
            _job(launcher, plan.finish, (acc, out), plan.finish.trailing_ints, names)]


def precompile(jobs: list[Job], workers: int | None = None, device: int | None = None) -> None:
    """Compile each distinct job once, `workers` at a time, for CUDA device `device` (each pool
    thread makes it current: Triton keeps compiled kernels per device); failures are left to
    the launch."""
    workers = threads() if workers is None else workers
    if workers <= 0:
        return
    unique = [job for key, job in {job.key(): job for job in jobs}.items() if key not in _DONE]
    if not unique:
        return
    if len(_DONE) > MAX_DONE:
        _DONE.clear()
    _DONE.update(job.key() for job in unique)
    start = time.perf_counter()

    def run(job: Job) -> None:
        try:
            if device is None:
                job.run()
            else:
                with torch.cuda.device(device):
                    job.run()
            ok = True
        except Exception as e:  # noqa: BLE001  # the launch compiles it instead
            log.debug("precompile of %s failed: %s", getattr(job.function, "__name__", job.function), e)
            ok = False
        with _LOCK:
            STATS["compiled" if ok else "failed"] += 1

    if workers == 1 or len(unique) == 1:
        for job in unique:
            run(job)
    else:
        with ThreadPoolExecutor(min(workers, len(unique)), thread_name_prefix="pdyn-compile") as pool:
            list(pool.map(run, unique))
    STATS["jobs"] += len(unique)
    STATS["seconds"] += time.perf_counter() - start
