"""Whole models on the GPU with their default settings (KV cache on), beside eager and torch.compile
in the same run: GPT-2, Llama, Qwen2 (grouped-query attention), BERT (masked LM), T5 (full forward
with decoder inputs) and ViT (changing image sizes, `interpolate_pos_encoding=True`), built by
`benchmarks/model_cases.py`, fp16, over a sequence of changing (batch, length) calls; then greedy
`generate()` of 32 new tokens on the decoders.

Columns: eager, torch.compile default, dynamic=True, mode="reduce-overhead", pdyn, pdyn
mode="reduce-overhead". Per column: first call (s, compile included), total over the sequence (s,
compiles included), steady per-call time (ms: every shape warm, synchronized after each call, the
mean over shapes of each shape's median), max |error| against eager, GPU kernels per call (from
torch.profiler, on the last shape; pdyn's own kernels in brackets) and pdyn's counters.

    python benchmarks/models_gpu.py [--quick] [--only gpt2,llama] [--columns eager,pdyn] [--no-generate]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # NOTE: before anything imports triton

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pdyn  # noqa: E402
from model_cases import Case, Size, cases  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
COLUMNS = ["eager", "tc_default", "tc_dynamic", "tc_reduce_overhead", "pdyn", "pdyn_cg"]
GENERATE_COLUMNS = ["eager", "tc_default", "pdyn", "pdyn_cg"]
STEADY_PASSES = 3
COUNTERS = ("compiles", "graphs", "graph_breaks", "kernels", "graphs_on_torch", "nodes_on_torch")


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def calls_of(case: Case, n: int, max_batch: int, max_len: int, seed: int = 0) -> list[tuple[int, int]]:
    """`n` (batch, length) pairs as requests arrive; image sides are multiples of the 16-pixel patch."""
    rng = random.Random(seed)
    if case.image:
        return [(rng.randint(1, max_batch), 16 * rng.randint(8, 16)) for _ in range(n)]
    return [(rng.randint(1, max_batch), rng.randint(8, max_len)) for _ in range(n)]


def logits_of(out: Any) -> torch.Tensor:
    t = out.logits if hasattr(out, "logits") else out[0]
    return t.detach().float().clone()  # NOTE: a copy: a replayed CUDA graph overwrites its output


def fresh_pdyn(column: str) -> None:
    """Each pdyn column compiles cold: its own kernel folders, nothing kept in memory."""
    pdyn.reset()
    from pdyn.backends.triton.runtime import cache as kernel_cache

    getattr(kernel_cache, "_MODULES", {}).clear()
    cold = tempfile.mkdtemp(prefix=f"pdyn_{column}_")
    pdyn.config.cache_dir = os.path.join(cold, "pdyn")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cold, "triton")


def compiled(column: str, forward: Callable[..., Any]) -> Callable[..., Any]:
    if column == "eager":
        return forward
    if column.startswith("pdyn"):
        fresh_pdyn(column)
        return pdyn.optimize(forward, mode="reduce-overhead" if column == "pdyn_cg" else None)
    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    if column == "tc_reduce_overhead":
        return torch.compile(forward, mode="reduce-overhead")
    return torch.compile(forward, dynamic=True if column == "tc_dynamic" else None)


def counters_of(column: str) -> dict[str, Any]:
    if column.startswith("pdyn"):
        s = pdyn.stats()
        return {k: s[k] for k in COUNTERS if k in s}
    if column.startswith("tc"):
        from torch._dynamo.utils import counters

        return {"graphs": int(counters["stats"]["unique_graphs"])}
    return {}


def kernels_per_call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> str:
    """GPU kernels one warm call launches, and how many of them are pdyn's (named `kernel*`)."""
    if DEVICE != "cuda":
        return "-"
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(**kwargs)
        sync()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
             and not e.name.startswith(("Memcpy", "Memset"))]
    ours = sum(n.startswith("kernel") for n in names)
    return f"{len(names)} ({ours})"


def measure(column: str, model: torch.nn.Module, inputs: list[dict[str, Any]],
            refs: list[torch.Tensor] | None) -> dict[str, Any]:
    fn = compiled(column, model.forward)
    outs: list[torch.Tensor] = []
    with torch.no_grad():
        sync()
        start = time.perf_counter()
        first = 0.0
        for i, kwargs in enumerate(inputs):
            outs.append(logits_of(fn(**kwargs)))
            sync()
            if i == 0:
                first = time.perf_counter() - start
        total = time.perf_counter() - start
        counts = counters_of(column)
        for kwargs in inputs:  # every shape once more: CUDA-graph columns capture here
            fn(**kwargs)
        sync()
        times: list[list[float]] = [[] for _ in inputs]
        for _ in range(STEADY_PASSES):
            for kwargs, per_shape in zip(inputs, times):
                t0 = time.perf_counter()
                fn(**kwargs)
                sync()
                per_shape.append(time.perf_counter() - t0)
        kernels = kernels_per_call(fn, inputs[-1])
    error = max((o - r).abs().max().item() for o, r in zip(outs, refs)) if refs else 0.0
    steady = [statistics.median(t) for t in times]
    return {"first_s": first, "total_s": total, "steady_ms": 1000 * sum(steady) / len(steady),
            "max_error": error, "kernels": kernels, "counters": counts, "outs": outs}


def generate_rate(column: str, model: torch.nn.Module, case: Case, new_tokens: int) -> dict[str, Any]:
    """Greedy decoding of `new_tokens` at batch 1 with the default dynamic cache: the first
    generate (compiles included), tokens per second of a second one (CUDA-graph columns capture
    there) and of a third (every column warm), and its tokens."""
    prompt = {k: v.to(DEVICE) if isinstance(v, torch.Tensor) else v for k, v in case.inputs(1, 16, 7).items()}
    model.forward = compiled(column, type(model).forward.__get__(model))
    args = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    try:
        with torch.no_grad():
            sync()
            t0 = time.perf_counter()
            model.generate(**prompt, **args)
            sync()
            first = time.perf_counter() - t0
            rates = []
            for _ in range(2):
                t0 = time.perf_counter()
                tokens = model.generate(**prompt, **args)
                sync()
                rates.append(new_tokens / (time.perf_counter() - t0))
    finally:
        del model.forward
    return {"first_s": first, "tokens_per_s": rates[0], "warm_tokens_per_s": rates[1],
            "tokens": tokens[0, -new_tokens:].tolist(),
            "counters": counters_of(column)}


def run_model(case: Case, size: Size, args: argparse.Namespace, dtype: torch.dtype, results: dict[str, Any]) -> None:
    torch.manual_seed(0)
    model = case.build(size).to(DEVICE, dtype).eval()
    calls = calls_of(case, args.calls, args.max_batch, args.max_len)
    inputs = [{k: v.to(DEVICE, dtype) if isinstance(v, torch.Tensor) and v.is_floating_point()
               else v.to(DEVICE) if isinstance(v, torch.Tensor) else v
               for k, v in case.inputs(b, n, i).items()} for i, (b, n) in enumerate(calls)]
    print(f"\n## {case.name}: calls (batch, {'side' if case.image else 'length'}) {calls}", flush=True)
    print("| column | first call s | total s | steady ms/call | max error | kernels/call (pdyn's) | counters |")
    print("|---|---|---|---|---|---|---|", flush=True)
    refs = None
    columns = args.columns.split(",")
    for column in (["eager"] if "eager" not in columns else []) + columns:
        try:
            r = measure(column, model, inputs, refs)
        except Exception as e:  # noqa: BLE001  # a column that fails says so; the others still run
            print(f"| {column} | error: {type(e).__name__}: {str(e)[:160]} |", flush=True)
            results[f"{case.name}/{column}"] = {"error": f"{type(e).__name__}: {e}"[:400]}
            continue
        if column == "eager":
            refs = r["outs"]
        r.pop("outs")
        results[f"{case.name}/{column}"] = r
        print(f"| {column} | {r['first_s']:.3f} | {r['total_s']:.3f} | {r['steady_ms']:.3f} | {r['max_error']:.2e} | "
              f"{r['kernels']} | {r['counters']} |", flush=True)
    if case.decoder and not args.no_generate:
        print(f"\n| {case.name} generate {args.new_tokens} tokens, batch 1 | first generate s | tokens/s, 2nd | "
              f"tokens/s, 3rd | same tokens as eager | counters |\n|---|---|---|---|---|---|", flush=True)
        eager_tokens = None
        for column in GENERATE_COLUMNS:
            if column not in columns and column != "eager":
                continue
            try:
                g = generate_rate(column, model, case, args.new_tokens)
            except Exception as e:  # noqa: BLE001
                print(f"| {column} | error: {type(e).__name__}: {str(e)[:160]} |", flush=True)
                continue
            eager_tokens = eager_tokens or g["tokens"]
            results[f"{case.name}/generate/{column}"] = g
            print(f"| {column} | {g['first_s']:.2f} | {g['tokens_per_s']:.1f} | {g['warm_tokens_per_s']:.1f} | {g['tokens'] == eager_tokens} | "
                  f"{g['counters']} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="tiny models, few calls, fp32 (a smoke run)")
    parser.add_argument("--only", default="gpt2,llama,qwen2,bert,t5,vit")
    parser.add_argument("--columns", default=",".join(COLUMNS))
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--no-generate", action="store_true")
    parser.add_argument("--json", default=None, help="write the numbers here")
    args = parser.parse_args()
    size, dtype = (Size(1, 32, 2, 128), torch.float32) if args.quick else (Size(), torch.float16)
    if args.quick:
        args.calls, args.max_batch, args.max_len, args.new_tokens = 3, 2, 12, 3
    device = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (Triton interpreter)"
    import transformers
    import triton

    print(f"# {datetime.date.today()} {device}; torch {torch.__version__}, triton {triton.__version__}, "
          f"transformers {transformers.__version__}; {size}, {dtype}", flush=True)
    results: dict[str, Any] = {}
    table = cases(size)
    for name in args.only.split(","):
        run_model(table[name], size, args, dtype, results)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
