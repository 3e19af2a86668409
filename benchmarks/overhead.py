"""Per-call overhead on a cache hit: a tiny function under eager, pdyn and torch.compile.

    .venv/bin/python benchmarks/overhead.py [--calls N] [--repeats R]

Each variant is warmed up (compiled) first, then timed with time.perf_counter over `calls`
back-to-back calls; the median of `repeats` such runs is reported in microseconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from typing import Any, Callable

import torch

import pdyn


def tiny(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def three(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return (a + b) * c


def per_call_us(variants: dict[str, Callable[..., Any]], args: tuple[Any, ...], calls: int,
                repeats: int) -> dict[str, float]:
    """Median microseconds per call of each variant; repeats interleave the variants, so that a
    noisy moment on the machine does not land on one variant only."""
    runs: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        for _ in range(100):
            fn(*args)
    for _ in range(repeats):
        for name, fn in variants.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            runs[name].append((time.perf_counter() - start) / calls * 1e6)
    return {name: statistics.median(r) for name, r in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=9)
    opts = parser.parse_args()
    torch.set_num_threads(1)
    args = (torch.randn(8),)
    variants: dict[str, Callable[..., Any]] = {"eager": tiny, "pdyn": pdyn.optimize(tiny, backend="eager")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        variants["torch.compile"] = torch.compile(tiny, backend="eager")
    times = per_call_us(variants, args, opts.calls, opts.repeats)
    hits = pdyn.stats(variants["pdyn"])
    assert hits["compiles"] == 1, f"pdyn recompiled during the benchmark: {hits}"
    eager = times["eager"]
    print(f"per-call time on a cache hit of `x + 1` on an 8-element tensor "
          f"(median of {opts.repeats} x {opts.calls} calls, torch {torch.__version__})")
    for name, us in times.items():
        print(f"  {name:<14} {us:8.2f} us   {us / eager:5.2f}x eager")
    print(f"  pdyn overhead over eager: {times['pdyn'] - eager:.2f} us per call; "
          f"pdyn / torch.compile: {times['pdyn'] / times['torch.compile']:.2f}x")
    dynamic_dims(opts.calls, opts.repeats)


def dynamic_dims(calls: int, repeats: int) -> None:
    """Three tensors whose batch dim varies: one pdyn entry with dynamic dims (bound once, checked
    equal); its guard function alone, next to the whole call and torch.compile's."""
    optimized = pdyn.optimize(three, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = torch.compile(three, backend="eager")
    for n in (5, 6, 7):  # torch.compile (dynamic=None) marks the dim dynamic on the second size
        args = tuple(torch.randn(n, 16) for _ in range(3))
        optimized(*args), compiled(*args)
    assert pdyn.stats(optimized)["compiles"] == 1, pdyn.stats(optimized)
    entry = optimized._pdyn_frame.cache.entries[0]
    L, G = dict(zip("abc", args)), three.__globals__
    variants = {"eager": three, "pdyn": optimized, "torch.compile": compiled,
                "pdyn guard only": lambda a, b, c: entry.guard.check(L, G)}
    times = per_call_us(variants, args, calls, repeats)
    eager = times["eager"]
    print(f"\n`(a + b) * c` on three (n, 16) tensors, n dynamic (one pdyn entry for n = 5, 6, 7)")
    for name, us in times.items():
        print(f"  {name:<16} {us:8.2f} us" + ("" if name == "pdyn guard only" else f"   {us / eager:5.2f}x eager"))
    print(f"  per-call overhead over eager: pdyn {times['pdyn'] - eager:.2f} us "
          f"(of which the guard {times['pdyn guard only']:.2f} us), "
          f"torch.compile {times['torch.compile'] - eager:.2f} us")


if __name__ == "__main__":
    main()
