"""Small calls with CUDA graphs (issue 15, item 3): a 3-linear MLP and a small attention block at
batch sizes 1 to 16, where launches dominate. Columns: eager, the eager module captured by hand
into one CUDA graph per batch size (its per-call time is the replay: the floor), torch.compile
mode="reduce-overhead", and pdyn mode="reduce-overhead". Per call: median of synchronized calls
(a server waiting for each result), in microseconds, after every batch size has run and been
captured; then pdyn's captures over the sweep (padding buckets: a new batch size inside a bucket
captures nothing). Outputs are checked against eager's.

    python benchmarks/cudagraphs_small.py [--calls 200]
"""

from __future__ import annotations

import argparse
import logging
import pathlib
import statistics
import sys
import time
from typing import Any, Callable

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import pdyn  # noqa: E402
from benchmarks.cuda_capture import CudagraphLog, HandCaptured  # noqa: E402

BATCHES = (1, 2, 4, 8, 16)
HIDDEN, HEADS, SEQ = 512, 8, 32


class MLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Attention(torch.nn.Module):
    """Pre-norm self-attention with a residual: layer norm, qkv, SDPA, projection."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(HIDDEN)
        self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = torch.nn.Linear(HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, s, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.proj(y.transpose(1, 2).reshape(b, s, HIDDEN))


WORKLOADS: dict[str, tuple[Callable[[], torch.nn.Module], Callable[[int], torch.Tensor]]] = {
    "3-linear MLP": (MLP, lambda b: torch.randn(b, HIDDEN, device="cuda", dtype=torch.float16)),
    "attention block": (Attention, lambda b: torch.randn(b, SEQ, HIDDEN, device="cuda", dtype=torch.float16)),
}


def column(name: str, model: torch.nn.Module) -> Callable[[torch.Tensor], Any]:
    if name == "eager":
        return model
    if name == "captured by hand":
        hand = HandCaptured(model)
        return lambda x: hand(x=x)
    if name == "torch.compile reduce-overhead":
        torch._dynamo.reset()
        return torch.compile(model, mode="reduce-overhead")
    pdyn.reset()
    return pdyn.optimize(model.forward, mode="reduce-overhead")


def per_call_us(fn: Callable[[torch.Tensor], Any], x: torch.Tensor, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 1e6 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}; fp16, hidden {HIDDEN}; "
          f"median of {args.calls} synchronized calls, us")
    print("| workload | column | " + " | ".join(f"batch {b}" for b in BATCHES) + " |")
    print("|---|---|" + "---|" * len(BATCHES))
    for workload, (make, inputs) in WORKLOADS.items():
        torch.manual_seed(0)
        model = make().cuda().half().eval()
        xs = {b: inputs(b) for b in BATCHES}
        with torch.no_grad():
            refs = {b: model(x).float() for b, x in xs.items()}
            for name in ("eager", "captured by hand", "torch.compile reduce-overhead", "pdyn reduce-overhead"):
                log = CudagraphLog()
                pdyn_log = logging.getLogger("pdyn.cudagraphs")
                pdyn_log.addHandler(log)
                pdyn_log.setLevel(logging.DEBUG)
                fn = column(name, model)
                for _ in range(3):  # compile, warm up, capture every batch size
                    for b, x in xs.items():
                        out = fn(x)
                        torch.cuda.synchronize()
                        if not torch.allclose(out.float(), refs[b], rtol=2e-2, atol=2e-2):
                            raise SystemExit(f"{workload} / {name}: output differs from eager at batch {b}")
                row = [per_call_us(fn, xs[b], args.calls) for b in BATCHES]
                pdyn_log.removeHandler(log)
                print(f"| {workload} | {name} | " + " | ".join(f"{t:.1f}" for t in row) + " |", flush=True)
                if name.startswith("pdyn"):
                    print(f"<!-- {workload}: {log.summary()} -->", flush=True)


if __name__ == "__main__":
    main()
