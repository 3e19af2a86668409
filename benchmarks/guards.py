"""The guard check of a whole model's cache entry, per call, on the host (issue 15): the suite's
GPT-2 and Llama (benchmarks/model_cases.py), optimized on CPU, then
the entry's generated `check(L, G)` timed alone over many calls, and the whole steady call.

    python benchmarks/guards.py [--models gpt2,llama] [--layers 6] [--hidden 512] [--calls 2000]
        [--source]   # print the generated guard source of the first model
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from typing import Any

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import pdyn  # noqa: E402
from benchmarks.model_cases import Size, cases  # noqa: E402

SIZE = [Size()]  # set from the command line


def best_us(fn: Any, n: int, repeats: int = 5) -> float:
    """The best of `repeats` means over `n` calls (a shared machine: the minimum is the signal)."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n * 1e6)
    return best


def captured_frame(f: Any, kw: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The cache entry that `f(**kw)` runs and the (L, G) its guard is given. Decorated forwards
    share one wrapper code, and so one cache line, across models: the entry is the one that accepts."""
    frame = f._pdyn_frame  # type: ignore[attr-defined]
    seen: list[Any] = []
    saved = list(frame.cache.checks)
    frame.cache.checks[:] = [(lambda L, G, c=c: seen.append((L, G)) or c(L, G), r) for c, r in saved]
    f(**kw)
    frame.cache.checks[:] = saved
    return next((e, L, G) for L, G in seen for e in frame.cache.entries if e.guard.full_check(L, G) is None)


def measure(name: str, calls: int, show_source: bool) -> None:
    torch.manual_seed(0)
    case = cases(SIZE[0])[name]
    model = case.build(SIZE[0]).eval()
    kw = case.inputs(4, 32, 0)
    f = pdyn.optimize(model.forward)
    with torch.no_grad():
        f(**kw)
        entry, L, G = captured_frame(f, kw)
        code = entry.guard
        assert code.check(L, G) is None and code.full_check(L, G) is None, (code.check(L, G), code.full_check(L, G))
        if show_source:
            print(code.source)
        fast = best_us(lambda: code.check(L, G), calls)
        full = best_us(lambda: code.full_check(L, G), calls)
        call = best_us(lambda: f(**kw), max(calls // 100, 5), repeats=3)
    conditions = code.source.count("\n            return ")
    batched = len(code.tensors.guards) if code.tensors is not None else 0
    native = code.tensors is not None and code.tensors.native
    print(f"{name}: {conditions} conditions, {batched} tensors batched ({'torch C check' if native else 'Python'}): "
          f"guard check {fast:.1f} us per call, full Python check {full:.1f} us ({full / fast:.2f}x); "
          f"steady call {call:.0f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--source", action="store_true")
    args = parser.parse_args()
    SIZE[0] = Size(args.layers, args.hidden, 8)
    for i, name in enumerate(args.models.split(",")):
        measure(name, args.calls, args.source and i == 0)


if __name__ == "__main__":
    main()
