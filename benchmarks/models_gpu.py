"""Whole models on the GPU (issue 15): the suite's GPT-2, Llama and BERT (tests/models/cases.py)
scaled to 6 layers, 512 wide, fp16, in inference over a serving-like sequence of calls whose batch
size and sequence length change. Columns: eager, pdyn (Triton), pdyn with CUDA graphs
(mode="reduce-overhead"), torch.compile mode="reduce-overhead", default and dynamic=True, and the eager
model captured by hand into a CUDA graph per shape (eager_cg: its steady time is the replay).

For each: first call (s, compile included), total over the sequence (s, compiles included), steady
per-call time (ms: the sequence run STEADY_PASSES more times with every shape warm and captured,
synchronized after each call as a server would; the mean over shapes of each shape's median) and
compiles. Outputs are checked against eager's (fp16 tolerance); a column whose output differs shows
"wrong", one that raises "error". Rows print as they finish.

    python benchmarks/models_gpu.py [--quick] [--only gpt2,llama] [--columns eager,pdyn,pdyn_cg]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import pathlib
import random
import sys
import tempfile
import time
from typing import Any, Callable

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # NOTE: before anything imports triton

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # the suite lives in tests/models

import pdyn  # noqa: E402
from pdyn.backends.triton.runtime import cache as kernel_cache  # noqa: E402
from tests.models import cases  # noqa: E402
from tests.models.harness import text_inputs  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
MODELS = {"gpt2": cases.gpt2, "llama": cases.llama, "bert": cases.bert}
STEADY_PASSES = 5
COLUMNS = ["eager", "eager_cg", "pdyn", "pdyn_cg", "tc_reduce_overhead", "tc_default", "tc_dynamic"]


def serving_calls(n: int, max_batch: int, max_seq: int, seed: int = 0) -> list[tuple[int, int]]:
    """`n` (batch, seq) pairs as requests arrive: batches of 1..max_batch, lengths 8..max_seq."""
    rng = random.Random(seed)
    return [(rng.randint(1, max_batch), rng.randint(8, max_seq)) for _ in range(n)]


def scale(layers: int, hidden: int, heads: int) -> None:
    """The suite's configs read these module globals when a model is built."""
    cases.LAYERS, cases.HIDDEN, cases.HEADS, cases.FFN = layers, hidden, heads, 4 * hidden


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def output_of(out: Any) -> torch.Tensor:
    t = out.logits if hasattr(out, "logits") and out.logits is not None else out[0]
    return t.detach().float().clone()


def compiled(column: str, model: torch.nn.Module) -> Callable[..., Any]:
    if column == "eager":
        return model
    if column == "eager_cg":
        return HandCaptured(model)
    if column in ("pdyn", "pdyn_cg"):
        pdyn.reset()
        # each pdyn column compiles cold: its own kernel directories and no kernel module kept in
        # memory (else the second column reuses the first's binaries)
        kernel_cache._MODULES.clear()
        cold = tempfile.mkdtemp(prefix=f"pdyn_{column}_")
        pdyn.config.cache_dir = os.path.join(cold, "pdyn")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(cold, "triton")
        return pdyn.optimize(model.forward, mode="reduce-overhead" if column == "pdyn_cg" else None)
    torch._dynamo.reset()
    if column == "tc_reduce_overhead":
        return torch.compile(model, mode="reduce-overhead")
    return torch.compile(model, dynamic=True if column == "tc_dynamic" else None)


def compiles(column: str) -> int | str:
    if column.startswith("pdyn"):
        return pdyn.stats()["compiles"]
    if column.startswith("tc"):
        from torch._dynamo.utils import counters

        return int(counters["stats"]["unique_graphs"])
    return 0


class CudagraphLog(logging.Handler):
    """Counts what pdyn's `cudagraphs` topic said during one column: captures, and why graphs ran
    uncaptured or were captured per size."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def summary(self) -> str:
        captures = sum(m.startswith("captured shape") for m in self.messages)
        reasons = sorted({m for m in self.messages if "uncaptured" in m or "padding" in m})
        per_size = len({m.split(":")[0] for m in self.messages if "captured per size" in m})
        return f"{captures} captures; {per_size} symbols captured per size; " + "; ".join(r[:160] for r in reasons[:4])


class HandCaptured:
    """The eager model captured by hand into one CUDA graph per shape (static inputs copied in,
    the graph replayed): the floor the issue's "1.5x of hand-captured" target is measured against."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.graphs: dict[Any, tuple[torch.cuda.CUDAGraph, dict[str, Any], Any]] = {}
        self.pool = torch.cuda.graph_pool_handle()

    def __call__(self, **kwargs: Any) -> Any:
        key = tuple((k, tuple(v.shape)) if isinstance(v, torch.Tensor) else (k, v) for k, v in kwargs.items())
        if key not in self.graphs:
            static = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.model(**static)  # warmup outside capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self.pool):
                out = self.model(**static)
            self.graphs[key] = (graph, static, out)
        graph, static, out = self.graphs[key]
        for k, v in kwargs.items():
            if isinstance(v, torch.Tensor):
                static[k].copy_(v)
        graph.replay()
        return out


def measure(column: str, model: torch.nn.Module, inputs: list[dict[str, Any]],
            refs: list[torch.Tensor] | None) -> dict[str, Any]:
    fn = compiled(column, model)
    log = CudagraphLog()
    logger = logging.getLogger("pdyn.cudagraphs")
    logger.addHandler(log)
    logger.setLevel(logging.DEBUG)
    if column.startswith("tc"):
        from torch._dynamo.utils import counters

        counters.clear()
    outs: list[torch.Tensor] = []
    with torch.no_grad():
        sync()
        start = time.perf_counter()
        first = 0.0
        for i, kwargs in enumerate(inputs):
            outs.append(output_of(fn(**kwargs)))  # NOTE: a copy: a replayed graph overwrites its output
            sync()
            if i == 0:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        n_compiles = compiles(column)
        for kwargs in inputs:  # every shape again: CUDA-graph columns capture here
            fn(**kwargs)
        sync()
        times: list[list[float]] = [[] for _ in inputs]
        for _ in range(STEADY_PASSES):  # NOTE: one pass is noisy on a shared host: each shape's median
            for kwargs, per_shape in zip(inputs, times):
                t0 = time.perf_counter()
                fn(**kwargs)
                sync()
                per_shape.append(time.perf_counter() - t0)
        steady = [statistics.median(t) for t in times]
    logger.removeHandler(log)
    wrong = refs is not None and any(not torch.allclose(o, r, rtol=2e-2, atol=2e-2) for o, r in zip(outs, refs))
    return {"first": first, "total": total, "steady_ms": 1000 * sum(steady) / len(steady),
            "compiles": n_compiles, "wrong": wrong, "outs": outs,
            "cudagraphs": log.summary() if column == "pdyn_cg" else ""}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny models, few calls (a smoke run)")
    parser.add_argument("--only", default=",".join(MODELS))
    parser.add_argument("--columns", default=",".join(COLUMNS))
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--max-batch", type=int, default=16)
    parser.add_argument("--max-seq", type=int, default=128)
    args = parser.parse_args()
    if args.quick:
        scale(2, 64, 4)
        calls = serving_calls(4, 3, 16)
        dtype = torch.float32
    else:
        scale(6, 512, 8)
        calls = serving_calls(args.calls, args.max_batch, args.max_seq)
        dtype = torch.float16
    columns = args.columns.split(",")
    print(f"# {DEVICE} {torch.cuda.get_device_name() if DEVICE == 'cuda' else ''} torch {torch.__version__}; "
          f"calls (batch, seq): {calls}", flush=True)
    print("| model | column | first call s | total s | steady ms/call | compiles |", flush=True)
    print("|---|---|---|---|---|---|", flush=True)
    for name in args.only.split(","):
        torch.manual_seed(0)
        model = MODELS[name]().to(DEVICE, dtype).eval()
        inputs = [{k: v.to(DEVICE) for k, v in text_inputs(b, s, seed=i).items()} | {"use_cache": False}
                  if name != "bert" else {k: v.to(DEVICE) for k, v in text_inputs(b, s, seed=i).items()}
                  for i, (b, s) in enumerate(calls)]
        refs = None
        for column in (["eager"] if "eager" not in columns else []) + columns:
            try:
                r = measure(column, model, inputs, refs)
            except Exception as e:  # noqa: BLE001  # a column that fails shows "error" and the rest still run
                print(f"| {name} | {column} | error: {type(e).__name__}: {str(e)[:120]} |", flush=True)
                continue
            if column == "eager":
                refs = r["outs"]
                if "eager" not in columns:
                    continue
            mark = " (wrong)" if r["wrong"] else ""
            print(f"| {name} | {column}{mark} | {r['first']:.3f} | {r['total']:.3f} | {r['steady_ms']:.3f} | "
                  f"{r['compiles']} |", flush=True)
            if r["cudagraphs"]:
                print(f"<!-- {name} pdyn_cg: {r['cudagraphs']} -->", flush=True)


if __name__ == "__main__":
    main()
