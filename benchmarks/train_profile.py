"""Where one training step's time goes (issue 29), eager against pdyn in the same run, at one shape
of benchmarks/train_gpu.py's sequence: wall time per step, the time the host takes to enqueue a
step, the GPU kernels' summed time and count (torch.profiler), and the host's heaviest Python
functions (cProfile, by own time). A step whose enqueue time exceeds its kernel time is host-bound.

    python benchmarks/train_profile.py [--model gpt2] [--shape 0] [--top 15] [--smoke]

--shape indexes train_gpu's shapes (0: the smallest, -1: the largest). --smoke: tiny configs, one
warm-up step, on the CPU too (kernels under Triton's interpreter: minutes, and no GPU columns).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import pathlib
import pstats
import sys
import time
from typing import Any, Callable

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import train_gpu  # noqa: E402  (sets TRITON_INTERPRET on the CPU before triton is imported)

import torch  # noqa: E402

import pdyn  # noqa: E402


def step_of(column: str, base: torch.nn.Module, inputs: dict[str, Any]) -> Callable[[], None]:
    model = copy.deepcopy(base).to(train_gpu.DEVICE).train()
    fn = train_gpu.frontend(column, model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        fn(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return step


def gpu_kernels(step: Callable[[], None]) -> tuple[float, int]:
    """(summed kernel ms, kernels) of one step; (0, 0) without a GPU."""
    if train_gpu.DEVICE != "cuda":
        return 0.0, 0
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        train_gpu.sync()
    events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(e.self_device_time_total for e in events) / 1e3, sum(e.count for e in events)


def profile_column(column: str, step: Callable[[], None], repeats: int, top: int) -> str:
    for _ in range(min(repeats, 3)):  # compile and warm up
        step()
    train_gpu.sync()
    start = time.perf_counter()
    for _ in range(repeats):
        step()
    train_gpu.sync()
    wall = 1e3 * (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    step()
    enqueue = 1e3 * (time.perf_counter() - start)
    train_gpu.sync()
    kernel_ms, kernels = gpu_kernels(step)
    profiler = cProfile.Profile()
    profiler.enable()
    step()
    train_gpu.sync()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    heaviest = [line for line in text.getvalue().splitlines() if line.strip()[:1].isdigit()][:top]
    return (f"| {column} | {wall:.2f} | {enqueue:.2f} | {kernel_ms:.2f} | {kernels} |\n"
            + "\n".join(f"    {line.strip()[:150]}" for line in heaviest))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gpt2", choices=train_gpu.TRAINED)
    parser.add_argument("--shape", type=int, default=0)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    torch.manual_seed(0)
    base, make, shapes = train_gpu.build(args.model, args.smoke)
    batch, size = shapes[args.shape]
    inputs = train_gpu.to_device(make(batch, size, 0))
    print(f"{args.model} at {batch}x{size} on {train_gpu.DEVICE}, torch {torch.__version__}")
    print("| column | wall ms/step | enqueue ms | GPU kernels ms | kernels |")
    print("| --- | --- | --- | --- | --- |")
    for column in ("eager", "pdyn"):
        pdyn.reset()
        torch.manual_seed(0)
        print(profile_column(column, step_of(column, base, inputs), 1 if args.smoke else 10, args.top), flush=True)


if __name__ == "__main__":
    main()
