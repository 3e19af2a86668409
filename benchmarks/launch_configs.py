"""Sweep of the launch-configuration tables in pdyn.backends.triton.runtime on the GPU: each
variant's device time (CUDA-graph replay, as benchmarks/gpu.py times) next to
torch.compile(dynamic=False) measured in the same run. Used to pick the defaults.

    python benchmarks/launch_configs.py     # on the GPU machine
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu  # noqa: E402

import pdyn  # noqa: E402
from pdyn.backends.triton.runtime import launch_config  # noqa: E402

VARIANTS: dict[str, list[dict[str, Any]]] = {
    "pointwise chain": [
        {}, {"POINTWISE_CONFIGS": [(1 << 20, 1024, 8), (0, 512, 4)]},
        {"POINTWISE_CONFIGS": [(1 << 20, 1024, 8), (0, 256, 4)]},
    ],
    "softmax": [
        {}, {"PERSISTENT_MAX_WARPS": 8}, {"PERSISTENT_MAX_WARPS": 8, "PERSISTENT_ELEMENTS_PER_WARP": 64},
        {"PERSISTENT_MAX_WARPS": 16, "PERSISTENT_ELEMENTS_PER_WARP": 64},
    ],
    "column sum": [
        {}, {"SPLIT_MIN_R": 2048}, {"SPLIT_MIN_R": 4096}, {"SPLIT_MIN_R": 2048, "OUTER_MIN_PROGRAMS": 256},
    ],
    "softmax over dim 0": [{}, {"PHASED_MIN_R": 1 << 40}, {"PHASED_MIN_R": 2048}, {"PHASED_MIN_R": 8192},
                           {"PHASED_MIN_R": 16384}],
}
SIZES = {"pointwise chain": [256, 1024, 4096], "softmax": [256, 1024, 4096],
         "column sum": [512, 1024, 2048, 4096, 8192], "softmax over dim 0": [1024, 4096, 8192, 16384, 65536]}
LAYERNORM_VARIANTS = VARIANTS["softmax"]


def time_sizes(fn: Callable[..., Any], make: Callable[[int, int], tuple], sizes: list[int]) -> list[float]:
    out = []
    with torch.no_grad():
        for n in sizes:
            sets = gpu.input_sets(lambda: make(n, 1024), False)
            out.append(gpu.device_ms(fn, sets, 30)[0] * 1e3)
    return out


def main() -> None:
    table = gpu.workloads(torch.float32)
    defaults = {k: getattr(launch_config, k) for v in VARIANTS.values() for d in v for k in d}
    print("| workload | variant | µs at each size (rows × 1024) |\n| --- | --- | --- |")
    only = sys.argv[1:]  # workload names to sweep; all by default
    for name in [*VARIANTS, "layernorm"]:
        if only and name not in only:
            continue
        fn, make = table[name]
        sizes = SIZES.get(name, SIZES["softmax"])
        torch._dynamo.reset()
        ref = time_sizes(torch.compile(fn, dynamic=False), make, sizes)
        print(f"| {name} | torch.compile(dynamic=False) | {' · '.join(f'{t:.2f}' for t in ref)} |", flush=True)
        torch._dynamo.reset()
        for variant in VARIANTS.get(name, LAYERNORM_VARIANTS):
            for key, value in {**defaults, **variant}.items():
                setattr(launch_config, key, value)
            pdyn.reset()
            times = time_sizes(pdyn.optimize(fn, backend="triton"), make, sizes)
            ratios = " · ".join(f"{t:.2f} ({r / t:.2f}x)" for t, r in zip(times, ref))
            print(f"| {name} | {variant or 'default'} | {ratios} |", flush=True)


if __name__ == "__main__":
    main()
