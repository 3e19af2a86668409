"""Training steps on the GPU (issue 29): GPT-2, Llama, BERT (masked LM) and a ViT classifier from
small configs, AdamW, a sequence of steps whose (batch, seq) or image size changes. Columns:
eager, torch.compile default, torch.compile dynamic=True, pdyn (Triton: forward and backward
graphs, pdyn/backends/autograd).

Per column: the first step (s, compile included), the total over the sequence (s, compiles
included), the steady step time (ms: the median of the steps after each shape's first), peak memory
(MiB, torch.cuda.max_memory_allocated; 0 on the CPU), the final loss's difference from eager's,
the GPU kernels one more step launches (torch.profiler; after the sequence, so not in the
timings), and pdyn's counters (graphs, backward_graphs, compiles). Every column starts from the same weights
and draws the same dropout masks (the same seed before each step). A column that raises shows
"error". Rows print as they finish.

    python benchmarks/train_gpu.py [--smoke] [--only gpt2,vit] [--columns eager,pdyn] [--steps 24]

--smoke: tiny configs, 4 steps, on the CPU too (kernels under Triton's interpreter): the test
suite runs it so the script cannot rot.
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import statistics
import sys
import time
from typing import Any, Callable

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # NOTE: before anything imports triton

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's pdyn
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # model_cases.py beside this script

import model_cases  # noqa: E402

import pdyn  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
COLUMNS = ["eager", "tc_default", "tc_dynamic", "pdyn"]
TEXT_SHAPES = [(8, 64), (8, 96), (16, 128), (4, 200), (12, 160), (16, 256)]
IMAGE_SHAPES = [(8, 64), (16, 96), (8, 128), (4, 112)]   # (batch, side): patches of 16
TRAINED = ("gpt2", "llama", "bert", "vit")
COUNTERS = ("graphs", "backward_graphs", "compiles", "graphs_on_torch", "kernels")  # "-": a counter this pdyn lacks


def with_labels(case: model_cases.Case, classes: int) -> Callable[[int, int, int], dict[str, Any]]:
    """The case's inputs plus labels: the ids (causal LM), every third id with the rest ignored
    (masked LM), a class per image."""
    def make(batch: int, length: int, seed: int) -> dict[str, Any]:
        kwargs = case.inputs(batch, length, seed)
        g = torch.Generator().manual_seed(seed + 1)
        if case.image:
            kwargs["labels"] = torch.randint(0, classes, (batch,), generator=g)
        elif case.name == "bert":
            ids = kwargs["input_ids"]
            kwargs["labels"] = ids.masked_fill(torch.arange(ids.shape[1]) % 3 != 0, -100)
        else:
            kwargs["labels"] = kwargs["input_ids"]
        return kwargs
    return make


def build(name: str, smoke: bool) -> tuple[torch.nn.Module, Callable[..., dict[str, Any]], list[tuple[int, int]]]:
    size = model_cases.Size(1, 32, 2, 128) if smoke else model_cases.Size(6, 512, 8, 16384)
    case = model_cases.cases(size)[name]
    model = case.build(size)
    if case.image:
        shapes = [(2, 32), (3, 48)] if smoke else IMAGE_SHAPES
    else:
        shapes = [(2, 8), (3, 6)] if smoke else TEXT_SHAPES
    return model, with_labels(case, 1000), shapes


def frontend(column: str, model: torch.nn.Module) -> Callable[..., Any]:
    if column == "pdyn":
        return pdyn.optimize(model, backend="triton")
    if column == "tc_default":
        return torch.compile(model)
    if column == "tc_dynamic":
        return torch.compile(model, dynamic=True)
    return model


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def to_device(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def run_column(column: str, base: torch.nn.Module, make: Callable[..., dict[str, Any]],
               steps: list[tuple[int, int]],
               wrap: Callable[[torch.nn.Module], torch.nn.Module] = lambda m: m) -> dict[str, Any]:
    """`wrap` goes around the model before the frontend (distributed_gpu.py: DDP)."""
    model = copy.deepcopy(base).to(DEVICE).train()
    step_fn = frontend(column, wrap(model))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    pdyn.reset()
    if DEVICE == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, seen, loss = [], set(), None
    for i, (batch, size) in enumerate(steps):
        inputs = to_device(make(batch, size, i))
        torch.manual_seed(i)
        sync()
        start = time.perf_counter()
        loss = step_fn(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        elapsed = time.perf_counter() - start
        times.append((elapsed, (batch, size) in seen))
        seen.add((batch, size))
    steady = [t for t, warm in times if warm] or [times[-1][0]]
    stats = pdyn.stats() if column == "pdyn" else {}
    peak = torch.cuda.max_memory_allocated() / 2**20 if DEVICE == "cuda" else 0.0
    return {"first": times[0][0], "total": sum(t for t, _ in times), "steady_ms": 1e3 * statistics.median(steady),
            "peak_mib": peak, "loss": float(loss.detach()), "stats": stats,
            "launches": kernels_per_step(step_fn, optimizer, to_device(make(*steps[-1], len(steps))))}


def kernels_per_step(step_fn: Callable[..., Any], optimizer: Any, inputs: dict[str, Any]) -> int | None:
    """GPU kernels one more step launches (forward, backward, optimizer), counted by torch.profiler;
    None on the CPU."""
    if DEVICE != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step_fn(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
    return sum(e.count for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA)


def row(name: str, column: str, result: dict[str, Any] | None, eager_loss: float | None) -> str:
    if result is None:
        return f"| {name} | {column} | error | | | | | | |"
    diff = "" if eager_loss is None else f"{abs(result['loss'] - eager_loss):.2e}"
    s = result["stats"]
    counters = "/".join(str(s.get(k, "-")) for k in COUNTERS) if s else ""
    return (f"| {name} | {column} | {result['first']:.2f} | {result['total']:.2f} | {result['steady_ms']:.1f} | "
            f"{result['peak_mib']:.0f} | {diff} | {result['launches'] if result['launches'] is not None else ''} | {counters} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny configs and 4 steps (runs on the CPU)")
    parser.add_argument("--only", default=",".join(TRAINED))
    parser.add_argument("--columns", default=None, help=f"a subset of {','.join(COLUMNS)}")
    parser.add_argument("--steps", type=int, default=None, help="steps over the cycle of shapes (default 24)")
    args = parser.parse_args()
    columns = (args.columns or ("eager,pdyn" if args.smoke else ",".join(COLUMNS))).split(",")
    print(f"device: {torch.cuda.get_device_name() if DEVICE == 'cuda' else 'cpu'}, torch {torch.__version__}")
    print("| model | column | first step (s) | total (s) | steady (ms) | peak (MiB) | loss - eager's | kernels/step | "
          "pdyn graphs/backward_graphs/compiles/graphs_on_torch/kernels |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only.split(","):
        torch.manual_seed(0)
        base, make, shapes = build(name, args.smoke)
        n = args.steps or (4 if args.smoke else 24)
        steps = [shapes[i % len(shapes)] for i in range(n)]
        eager_loss = None
        for column in columns:
            try:
                result = run_column(column, base, make, steps)
            except Exception as e:  # noqa: BLE001  # a column that raises shows "error"
                print(f"{name} {column}: {type(e).__name__}: {e}", file=sys.stderr)
                result = None
            if column == "eager" and result is not None:
                eager_loss = result["loss"]
            print(row(name, column, result, None if column == "eager" else eager_loss), flush=True)


if __name__ == "__main__":
    main()
