"""The guard check of a whole model's cache entry, per call, on the host (issue 15): the suite's
GPT-2 and Llama (tests/models/cases.py) scaled like benchmarks/models_gpu.py, optimized on CPU, then
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
from benchmarks.models_gpu import MODELS, scale  # noqa: E402
from tests.models.harness import text_inputs  # noqa: E402


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
    """The entry of `f`'s only cache line and the (L, G) one call passes to its guard."""
    frame = f._pdyn_frame  # type: ignore[attr-defined]
    check, run = frame.cache.checks[0]
    seen: list[Any] = []
    frame.cache.checks[0] = (lambda L, G: seen.append((L, G)) or check(L, G), run)
    f(**kw)
    frame.cache.checks[0] = (check, run)
    return frame.cache.entries[0], *seen[-1]


def measure(name: str, calls: int, show_source: bool) -> None:
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    kw = text_inputs(4, 32, seed=0)
    kw["use_cache"] = False
    f = pdyn.optimize(model.forward)
    with torch.no_grad():
        f(**kw)
        entry, L, G = captured_frame(f, kw)
        code = entry.guard
        assert code.check(L, G) is None, (code.check(L, G), code.full_check(L, G))
        lines = code.source.count("\n    return ") if hasattr(code, "source") else 0
        if show_source:
            print(code.source)
        hit = best_us(lambda: code.check(L, G), calls)
        full = getattr(code, "full_check", code.check)
        slow = best_us(lambda: full(L, G), calls)
        call = best_us(lambda: f(**kw), max(calls // 50, 5))
        print(pdyn.stats(), len(f._pdyn_frame.cache.entries), code.tensors and code.tensors.native, code.fast and code.fast.state.keys())
    print(f"{name}: {lines} conditions; guard check (as the call runs it) {hit:.1f} us, "
          f"full Python check {slow:.1f} us; steady call {call:.0f} us", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--source", action="store_true")
    args = parser.parse_args()
    scale(args.layers, args.hidden, 8)
    for i, name in enumerate(args.models.split(",")):
        measure(name, args.calls, args.source and i == 0)


if __name__ == "__main__":
    main()
