"""The kernels of a new graph compiled ahead of its first call, from the example call's sizes:
each kernel step's launch (pointer dtypes, size arguments, extents) evaluated at the hints, handed
to runtime.precompile. A kernel whose sizes have no hint (data-dependent, a stride symbol) is left
to compile at its launch."""

from __future__ import annotations

import logging
from typing import Any

import sympy
import torch

from pdyn.backends.triton.runtime import launch_config, precompile
from pdyn.backends.triton.scheduler import KernelGroup, Step
from pdyn.backends.triton.symbolic import SymbolicGraph

log = logging.getLogger("pdyn.lowering")


def _value(expr: Any, hints: dict[sympy.Symbol, int]) -> int | None:
    value = sympy.sympify(expr).xreplace(hints)
    return int(value) if value.is_Integer else None


def jobs_ahead(steps: list[Step], sym: SymbolicGraph) -> list[precompile.Job]:
    """The compiles the first call will need, one per launch (runtime.precompile drops repeats)."""
    hints = {s: sympy.Integer(v) for s, v in sym.hints.items()}
    jobs: list[precompile.Job] = []
    for group in _groups(steps, hints):
        source, launcher = group.source, group.launcher
        assert source is not None and launcher is not None
        t = source.tiling
        values = [_value(e, hints) for e in source.args.sizes]
        x = _value(sympy.Mul(*t.x_ranges), hints)
        dims: list[int | None] = [x]
        if source.ysplit is not None:
            dims = [_value(sympy.Mul(*t.x_ranges[:source.ysplit]), hints),
                    _value(sympy.Mul(*t.x_ranges[source.ysplit:]), hints)]
        elif t.is_reduction:
            dims.append(_value(sympy.Mul(*t.r_ranges), hints))
        if any(v is None for v in values + dims):
            continue
        ptrs = tuple(b.dtype for b in source.args.pointers.values())
        jobs += precompile.launcher_jobs(launcher, ptrs, tuple(values), tuple(dims),  # type: ignore[arg-type]
                                         source.ysplit is not None)
    return jobs


def _groups(steps: list[Step], hints: dict[sympy.Symbol, sympy.Integer]) -> list[KernelGroup]:
    """The kernel groups the first call launches: a phased group's nodes where the example's
    sizes choose them (launch_config.phased), else the fused kernel."""
    out = []
    for step in steps:
        if not isinstance(step, KernelGroup):
            continue
        source = step.source
        if step.phased is not None and source is not None:
            x = _value(sympy.Mul(*source.tiling.x_ranges), hints)
            r = _value(sympy.Mul(*source.tiling.r_ranges), hints)
            if x is not None and r is not None and launch_config.phased(x, r, source.inner):
                out += step.phased
                continue
        out.append(step)
    return out


def compile_ahead(jobs: list[precompile.Job], device: torch.device) -> None:
    if jobs:
        precompile.precompile(jobs, device=device.index or 0)
        log.debug("compiled ahead: %d launches (%s)", len(jobs), precompile.STATS)
