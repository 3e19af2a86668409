"""Where a steady pdyn call of a whole model spends host time (issue 15): cProfile over steady
calls, the guard check alone, the generated wrapper alone, and the CUDA kernels per call (torch
profiler), beside eager's per-call time.

    python benchmarks/host_profile.py [--model gpt2] [--batch 8] [--seq 64]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pathlib
import pstats
import sys
import time
from typing import Any

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import pdyn  # noqa: E402
from benchmarks.model_cases import Size, cases  # noqa: E402
from pdyn.backends.triton import triton_backend  # noqa: E402


def per_call_us(fn: Any, n: int = 50) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def kernels_per_call(fn: Any) -> tuple[int, str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = prof.key_averages()
    n = sum(e.count for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
    return n, events.table(sort_by="self_cpu_time_total", row_limit=18)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="gpt2")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    size = Size(layers=6)
    case = cases(size)[args.model]
    torch.manual_seed(0)
    model = case.build(size).cuda().half().eval()
    kw = {k: v.cuda() if isinstance(v, torch.Tensor) else v for k, v in case.inputs(args.batch, args.seq, 0).items()}
    got: list[Any] = []

    def backend(gm: Any, ex: Any) -> Any:
        c = triton_backend(gm, ex)
        got.append(c)
        return c

    f = pdyn.optimize(model.forward, backend=backend)
    with torch.no_grad():
        f(**kw)
        print(f"{args.model} b{args.batch} s{args.seq}: eager {per_call_us(lambda: model(**kw)):.0f} us/call, "
              f"pdyn {per_call_us(lambda: f(**kw)):.0f} us/call, stats {pdyn.stats()}", flush=True)
        call = got[0]
        frame = f._pdyn_frame  # type: ignore[attr-defined]
        check, run = frame.cache.checks[0]
        seen: list[Any] = []
        frame.cache.checks[0] = (lambda L, G: seen.append((L, G)) or check(L, G), run)
        f(**kw)
        frame.cache.checks[0] = (check, run)
        L, G = seen[-1]
        t = time.perf_counter()
        for _ in range(200):
            check(L, G)
        print(f"guard check {(time.perf_counter() - t) / 200 * 1e6:.1f} us", flush=True)
        inputs: list[Any] = []
        scope = run.__globals__
        scope["compiled_graph"] = lambda *a: inputs.append(a) or call(*a)
        f(**kw)
        scope["compiled_graph"] = call
        a = inputs[-1]
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(50):
            call(*a)
        host = (time.perf_counter() - t) / 50 * 1e6
        torch.cuda.synchronize()
        print(f"wrapper call host {host:.0f} us; synced {per_call_us(lambda: call(*a)):.0f} us; "
              f"kernels {call.pdyn_triton.kernel_count}, fast launches so far "
              f"{sum(x.fast_launches for x in call.pdyn_triton.launchers)}", flush=True)
        for label, fn in (("eager", lambda: model(**kw)), ("pdyn", lambda: f(**kw))):
            n, table = kernels_per_call(fn)
            print(f"{label}: {n} CUDA kernels per call\n{table}", flush=True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(50):
            f(**kw)
        torch.cuda.synchronize()
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue(), flush=True)


if __name__ == "__main__":
    main()
