"""A graph's kernels compiled ahead of the launches that need them, several at once.

Triton compiles on a launch with a new specialization, one kernel after another as the wrapper
runs. The sizes of a call say which variant, blocks and int specialization every launch will use,
so `AheadCompiler` turns the call's size symbols into the compile jobs of all its launches (a
generated `plan` function: each kernel's size arguments and extents, a phased group's choice) and
runtime.precompile runs the new ones in a thread pool. It runs at compile time on the example's
sizes, and from the wrapper on each new tuple of sizes (one set lookup per call otherwise). A
kernel whose sizes the wrapper binds later (data-dependent) is left to compile at its launch.
"""

from __future__ import annotations

import logging
from typing import Any

import sympy
import torch

from pdyn.backends.triton.runtime import precompile
from pdyn.backends.triton.scheduler import KernelGroup, Step
from pdyn.backends.triton.symbolic import pexpr

log = logging.getLogger("pdyn.lowering")
MAX_SEEN = 4096  # size tuples remembered; past it the set starts over


def _product(ranges: list[sympy.Expr]) -> sympy.Expr:
    return sympy.Mul(*ranges) if ranges else sympy.Integer(1)


class AheadCompiler:
    """Called by the wrapper with the tuple of its bound size symbols (`names`, in order)."""

    def __init__(self, steps: list[Step], names: list[str], namespace: dict[str, Any],
                 device: torch.device | None) -> None:
        self.device = device
        self.seen: set[tuple] = set()
        self.forms: list[KernelGroup] = []
        bound = set(names)
        lines = [f"def plan({', '.join(names)}):", "    out = []"]
        for step in steps:
            if not isinstance(step, KernelGroup) or step.source is None:
                continue
            fused = self._append(step, bound)
            if step.phased is None or fused is None:
                lines += [f"    {fused}"] if fused else []
                continue
            t = step.source.tiling
            lines.append(f"    if not _rt.launch_config.phased({pexpr(_product(t.x_ranges))}, "
                         f"{pexpr(_product(t.r_ranges))}, {step.source.inner}):")
            lines.append(f"        {fused}")
            lines.append("    else:")
            lines += [f"        {line}" for sub in step.phased if (line := self._append(sub, bound))] or ["        pass"]
        lines.append("    return out")
        scope = dict(namespace)
        exec(compile("\n".join(lines), "<pdyn ahead plan>", "exec"), scope)  # noqa: S102  # our own text
        self.plan = scope["plan"]

    def _append(self, group: KernelGroup, bound: set[str]) -> str | None:
        """`out.append((form, sizes, dims))` for one kernel, or None if a size is bound later."""
        source = group.source
        assert source is not None
        t = source.tiling
        dims = [_product(t.x_ranges)]
        if source.ysplit is not None:
            dims = [_product(t.x_ranges[:source.ysplit]), _product(t.x_ranges[source.ysplit:])]
        elif t.is_reduction:
            dims.append(_product(t.r_ranges))
        exprs = [sympy.sympify(e) for e in list(source.args.sizes) + dims]
        if any(not {s.name for s in e.free_symbols} <= bound for e in exprs):
            return None
        self.forms.append(group)
        sizes = ", ".join(pexpr(e) for e in source.args.sizes)
        return (f"out.append(({len(self.forms) - 1}, ({sizes}{',' if len(source.args.sizes) == 1 else ''}), "
                f"({', '.join(pexpr(d) for d in dims)},)))")

    def jobs(self, key: tuple) -> list[precompile.Job]:
        jobs: list[precompile.Job] = []
        for form, sizes, dims in self.plan(*key):
            group = self.forms[form]
            source, launcher = group.source, group.launcher
            assert source is not None and launcher is not None
            ptrs = tuple(b.dtype for b in source.args.pointers.values())
            jobs += precompile.launcher_jobs(launcher, ptrs, tuple(int(s) for s in sizes),
                                             tuple(int(d) for d in dims), source.ysplit is not None)
        return jobs

    def __call__(self, key: tuple) -> None:
        """From the wrapper, on sizes not seen before: compile what their launches need."""
        if len(self.seen) > MAX_SEEN:
            self.seen.clear()
        self.seen.add(key)
        try:
            jobs = self.jobs(key)
        except Exception as e:  # noqa: BLE001  # the launches compile as before
            log.debug("no compile ahead for sizes %s: %s", key, e)
            return
        if jobs and self.device is not None:
            precompile.precompile(jobs, device=self.device.index or 0)
