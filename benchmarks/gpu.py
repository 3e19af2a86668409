"""GPU benchmark of pdyn's Triton backend against eager and torch.compile (issue 5).

Workloads: a pointwise chain, softmax, layernorm, a column sum, linear+bias+gelu, a transformer MLP
block, each over several batch sizes. Columns: eager, torch.compile(dynamic=False),
torch.compile(dynamic=True), pdyn: median ms and achieved TB/s per size, first-call time, compiles,
per-call time on a tiny (8x8) input; plus the device's measured copy bandwidth. Prints a markdown
table for docs/benchmarks.md.

Device time is the replay of a CUDA graph holding one call per input set (sets rotate so reads
come from memory, not L2), so host overhead is out of it; host overhead is the 8x8 column. `--quick` runs tiny sizes (on CPU: kernels under Triton's interpreter).

    python benchmarks/gpu.py            # on the GPU machine
    python benchmarks/gpu.py --quick    # anywhere, a smoke test of every path
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from typing import Any, Callable

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # NOTE: before anything imports triton

import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pdyn  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def median_ms(fn: Callable[[], Any], reps: int) -> float:
    """Median over `reps` timed calls after warm-up (CUDA events on GPU, wall time on CPU)."""
    for _ in range(3):
        fn()
    sync()
    times = []
    for _ in range(reps):
        if DEVICE == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


L2_BYTES = 50 << 20  # H100's L2; input sets rotate over at least 3x this, so reads come from memory


def input_sets(make: Callable[[], tuple], quick: bool) -> list[tuple]:
    first = make()
    size = sum(t.numel() * t.element_size() for t in first if isinstance(t, torch.Tensor))
    count = 1 if quick else min(32, max(2, -(-3 * L2_BYTES // max(size, 1))))
    return [first] + [make() for _ in range(count - 1)]


def device_ms(fn: Callable[..., Any], sets: list[tuple], reps: int) -> tuple[float, str]:
    """Device time of one call: a CUDA graph holding one call per input set is replayed `reps`
    times (launch gaps and host work removed, as METHOD.md asks for small launches); the median
    replay over the number of calls in it. Where capture fails, back-to-back calls between events."""
    if DEVICE != "cuda":
        return median_ms(lambda: fn(*sets[0]), reps), "wall"
    for args in sets:
        fn(*args)
    sync()
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # NOTE: warm-up on a side stream before capture (torch docs)
            for args in sets:
                fn(*args)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outs = [fn(*args) for args in sets]
        del outs
        return median_ms(graph.replay, reps) / len(sets), "graph"
    except Exception:  # noqa: BLE001  # a column that cannot be captured is timed without a graph
        sync()
        calls = max(1, 8 // len(sets))
        return median_ms(lambda: [fn(*args) for _ in range(calls) for args in sets], reps) / (
            calls * len(sets)), "events"


def host_us(fn: Callable[[], Any], reps: int, trials: int = 15) -> float:
    """Per-call host time in microseconds: `reps` back-to-back calls synchronized once, the least
    over `trials` (the host is shared; the least disturbed trial is the one to compare)."""
    for _ in range(min(reps, 20)):
        fn()
    sync()
    means = []
    for _ in range(trials):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        means.append((time.perf_counter() - t0) / reps * 1e6)
    return min(means)


# -- workloads: (function, make_args(rows, hidden), bytes moved) ------------------------------------
def pointwise_chain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = x * y + 1.0
    return torch.sigmoid(a) * torch.tanh(x) - a * 0.5


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b)


def column_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0)


def linear_gelu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.gelu(F.linear(x, w, b))


def mlp_block(x: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor,
              w2: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    h = F.layer_norm(x, (x.shape[-1],), g, beta)
    return x + F.linear(F.gelu(F.linear(h, w1, b1)), w2, b2)


def transposed_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (x.t() + y) * 0.5  # x (n, h), y (h, n): the operands disagree on the contiguous dim


def strided_sum(x: torch.Tensor) -> torch.Tensor:
    return x.t().sum(-1)  # reduces x (n, h) over its strided dim n


def strided_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=0)  # reduces and writes along the strided dim


def masked_softmax(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    return x.masked_fill(m, float("-inf")).softmax(-1)


def cross_entropy(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return (torch.logsumexp(x, -1) - x.gather(1, t[:, None])[:, 0]).mean()


def r(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.randn(*shape, device=DEVICE, dtype=dtype)


def workloads(dtype: torch.dtype) -> dict[str, tuple[Callable[..., Any], Callable[[int, int], tuple]]]:
    return {
        "pointwise chain": (pointwise_chain, lambda n, h: (r(n, h, dtype=dtype), r(h, dtype=dtype))),
        "softmax": (softmax, lambda n, h: (r(n, h, dtype=dtype),)),
        "layernorm": (layernorm, lambda n, h: (r(n, h, dtype=dtype), r(h, dtype=dtype), r(h, dtype=dtype))),
        "column sum": (column_sum, lambda n, h: (r(n, h, dtype=dtype),)),
        "linear+bias+gelu": (linear_gelu, lambda n, h: (r(n, h, dtype=dtype), r(4 * h, h, dtype=dtype),
                                                        r(4 * h, dtype=dtype))),
        "MLP block": (mlp_block, lambda n, h: (r(n, h, dtype=dtype), r(h, dtype=dtype), r(h, dtype=dtype),
                                               r(4 * h, h, dtype=dtype), r(4 * h, dtype=dtype),
                                               r(h, 4 * h, dtype=dtype), r(h, dtype=dtype))),
        "transposed add": (transposed_add, lambda n, h: (r(n, h, dtype=dtype), r(h, n, dtype=dtype))),
        "strided sum": (strided_sum, lambda n, h: (r(n, h, dtype=dtype),)),
        "softmax over dim 0": (strided_softmax, lambda n, h: (r(n, h, dtype=dtype),)),
        "masked softmax": (masked_softmax, lambda n, h: (r(n, h, dtype=dtype),
                                                         torch.rand(n, h, device=DEVICE) < 0.1)),
        "cross-entropy (logsumexp+gather)": (cross_entropy, lambda n, h: (
            r(n, h, dtype=dtype), torch.randint(0, h, (n,), device=DEVICE))),
    }


MEMORY_BOUND = {"pointwise chain", "softmax", "layernorm", "column sum", "transposed add", "strided sum",
                "softmax over dim 0", "masked softmax", "cross-entropy (logsumexp+gather)"}


def bytes_moved(args: tuple, out: Any) -> int:
    """Compulsory traffic: every input read once, the output written once."""
    outs = out if isinstance(out, (tuple, list)) else [out]
    return sum(t.numel() * t.element_size() for t in (*args, *outs) if isinstance(t, torch.Tensor))


# -- the compilers ----------------------------------------------------------------------------------
class Column:
    """One way of running a workload; `compiles()` counts graphs compiled so far."""

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name, self.base = name, fn
        self.first_call_s = float("nan")
        self.fn = self.make(fn)

    def make(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        if self.name == "eager":
            return fn
        if self.name.startswith("torch.compile"):
            torch._dynamo.reset()
            return torch.compile(fn, dynamic=self.name.endswith("True)"))
        return pdyn.optimize(fn, backend="triton")

    def compiles(self) -> str:
        if self.name == "pdyn":
            return str(pdyn.stats(self.fn)["compiles"])
        if self.name.startswith("torch.compile"):
            from torch._dynamo.utils import counters

            return str(counters["stats"]["unique_graphs"])
        return "-"


COLUMNS = ("eager", "torch.compile(dynamic=False)", "torch.compile(dynamic=True)", "pdyn")


def copy_bandwidth(quick: bool) -> float:
    n = (1 << 16) if quick else (1 << 28)
    src, dst = torch.empty(n, device=DEVICE, dtype=torch.float32), torch.empty(n, device=DEVICE, dtype=torch.float32)
    ms = median_ms(lambda: dst.copy_(src), 5 if quick else 50)
    return 2 * n * 4 / (ms * 1e-3) / 1e12


def run_workload(name: str, fn: Callable[..., Any], make: Callable[[int, int], tuple], sizes: list[int],
                 hidden: int, reps: int, skip: set[str]) -> list[str]:
    rows = []
    for col_name in COLUMNS:
        if col_name in skip:
            rows.append(f"| {name} | {col_name} | skipped | | | |")
            continue
        try:
            rows.append(run_column(name, col_name, fn, make, sizes, hidden, reps))
        except Exception as e:  # noqa: BLE001  # a failing column is reported, the rest still run
            rows.append(f"| {name} | {col_name} | error: {type(e).__name__}: {str(e)[:80]} | | | |")
        if col_name.startswith("torch.compile"):
            torch._dynamo.reset()
    return rows


def run_column(name: str, col_name: str, fn: Callable[..., Any], make: Callable[[int, int], tuple],
               sizes: list[int], hidden: int, reps: int) -> str:
    from torch._dynamo.utils import counters

    counters.clear()
    col = Column(col_name, fn)
    cells = []
    with torch.no_grad():
        for i, n in enumerate(sizes):
            sets = input_sets(lambda: make(n, hidden), reps < 10)
            args = sets[0]
            if i == 0:
                sync()
                t0 = time.perf_counter()
                col.fn(*args)
                sync()
                col.first_call_s = time.perf_counter() - t0
            out = col.fn(*args)
            ref = fn(*args)
            torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-2)
            ms, how = device_ms(col.fn, sets, reps)
            tbs = bytes_moved(args, out) / (ms * 1e-3) / 1e12
            cells.append(f"{ms:.4f} ms / {tbs:.2f} TB/s" + ("" if how == "graph" else f" ({how})"))
            del sets, args, out, ref
        tiny = make(8, 8)
        tiny_us = host_us(lambda: col.fn(*tiny), 2, 2) if reps < 10 else host_us(lambda: col.fn(*tiny), 500)
    return (f"| {name} | {col_name} | {' · '.join(cells)} | {col.first_call_s:.2f} s | "
            f"{col.compiles()} | {tiny_us:.1f} µs |")


def header(quick: bool) -> str:
    import triton

    device = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU (Triton interpreter)"
    return (f"pdyn GPU benchmark, {datetime.date.today()}, {device}, Python {sys.version.split()[0]}, "
            f"torch {torch.__version__}, Triton {triton.__version__}{' (--quick)' if quick else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes; runs on CPU under the interpreter")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--skip", default="", help="comma-separated columns to skip")
    opts = parser.parse_args()
    dtype = getattr(torch, opts.dtype)
    quick = opts.quick
    sizes, hidden, reps = ([2, 3, 5, 7, 9], 16, 3) if quick else ([256, 1024, 4096, 16384, 65536], 1024, 30)
    skip = {s.strip() for s in opts.skip.split(",") if s.strip()}
    if DEVICE == "cpu" and not quick:
        sys.exit("no GPU: run with --quick")
    print(header(quick))
    print(f"\nmeasured copy bandwidth: {copy_bandwidth(quick):.3f} TB/s (read + write)")
    print(f"sizes (rows × {hidden}, dtype {opts.dtype}): {sizes}\n")
    print("| workload | column | median ms / TB/s at each size | first call | compiles | 8x8 call |")
    print("| --- | --- | --- | --- | --- | --- |")
    only = {s.strip() for s in opts.only.split(",") if s.strip()}
    for name, (fn, make) in workloads(dtype).items():
        if only and name not in only:
            continue
        for row in run_workload(name, fn, make, sizes, hidden, reps, skip):
            print(row, flush=True)
    print(f"\nmemory-bound workloads (TB/s compared with the copy bandwidth): {sorted(MEMORY_BOUND)}")
    from pdyn.backends.triton import runtime

    bound = runtime.launch._FAST not in (False, None)
    print(f"pdyn launch path: {'bound CompiledKernel launchers' if bound else 'Triton JITFunction calls'}"
          " (PDYN_TRITON_FAST_LAUNCH=0 turns the bound path off)")


if __name__ == "__main__":
    main()
