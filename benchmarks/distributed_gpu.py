"""Training under DistributedDataParallel (issue 33): a GPT-2 or Llama model from a small config
(4 layers, 512 wide, random weights), AdamW, 20 steps whose sequence length changes, on every rank
of `torchrun`. Columns: eager DDP, torch.compile + DDP (`torch.compile(DDP(model))`: dynamo's
DDPOptimizer splits its graph at bucket boundaries), pdyn + DDP (`pdyn.optimize(DDP(model))`: DDP's
forward runs as torch runs it, the model inside is optimized).

Per column (rank 0's numbers; each rank trains on its own data): first step (s, compile included),
total (s), steady step (ms: the median of the steps after each shape's first), peak memory (MiB),
the final loss's difference from eager DDP's, and the compiles (pdyn: graphs/backward_graphs/
compiles/graphs_on_torch/kernels; torch.compile: dynamo's unique graphs). `--overlap` adds, per
column, when DDP's bucket all-reduces were launched, as a share of the backward's wall time (CPU
clock): eager launches them while the backward runs, and so do torch.compile and pdyn, which cut
their graphs at the buckets (docs/training.md, "Distributed").

    torchrun --nproc-per-node 2 benchmarks/distributed_gpu.py [--model gpt2|llama] [--columns eager,tc,pdyn]
    torchrun --nproc-per-node 2 benchmarks/distributed_gpu.py --smoke [--overlap]   # CPU, gloo, seconds

--smoke: a tiny config and 3 steps on the CPU with gloo (kernels under Triton's interpreter), eager
and pdyn columns; the test suite runs it so the script cannot rot.
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import sys
import time
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # train_gpu.py beside this script

import model_cases  # noqa: E402
import train_gpu  # noqa: E402  (sets TRITON_INTERPRET on the CPU before triton is imported)

import pdyn  # noqa: E402

COLUMNS = {"eager": "eager", "tc": "tc_default", "pdyn": "pdyn"}   # this script's name -> train_gpu's frontend
SEQS = (64, 128, 96, 192, 256, 160, 224, 112, 80, 144)              # each twice in 20 steps: the second is steady


def setup() -> tuple[int, int]:
    """The process group of torchrun's ranks (nccl on GPUs, gloo on the CPU); (rank, world size)."""
    if train_gpu.DEVICE == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if train_gpu.DEVICE == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size()


def wrapper(bucket_mb: float | None) -> Callable[[torch.nn.Module], torch.nn.Module]:
    def wrap(model: torch.nn.Module) -> torch.nn.Module:
        ids = [torch.cuda.current_device()] if train_gpu.DEVICE == "cuda" else None
        return DDP(model, device_ids=ids, **({"bucket_cap_mb": bucket_mb} if bucket_mb else {}))
    return wrap


def case(name: str, smoke: bool) -> tuple[torch.nn.Module, Callable[..., dict[str, Any]], list[tuple[int, int]]]:
    size = model_cases.Size(1, 32, 2, 128) if smoke else model_cases.Size(4, 512, 8, 16384)
    c = model_cases.cases(size)[name]
    shapes = [(2, 8), (2, 6)] if smoke else [(8, s) for s in SEQS]
    return c.build(size), train_gpu.with_labels(c, 1000), shapes


def run(column: str, base: torch.nn.Module, make: Callable[..., dict[str, Any]], steps: list[tuple[int, int]],
        rank: int) -> dict[str, Any]:
    """One column through train_gpu's training loop around DDP; each rank draws its own batches."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    on_rank = lambda batch, seq, i: make(batch, seq, 1000 * rank + i)  # noqa: E731
    result = train_gpu.run_column(COLUMNS[column], base, on_rank, steps, wrap=wrapper(None))
    if column == "tc":
        result["stats"] = {"compiles": torch._dynamo.utils.counters["stats"]["unique_graphs"]}
    return result


def overlap(column: str, base: torch.nn.Module, make: Callable[..., dict[str, Any]], shape: tuple[int, int],
            rank: int) -> list[float]:
    """When each bucket's all-reduce was launched in the second of 2 steps at one shape (DDP rebuilds
    its buckets after the first), as a share of that backward's wall time (0: its start, 1: its end);
    small buckets make several. The model is a new copy, compiled anew (pdyn cuts a graph at the
    buckets of the DDP whose forward compiled it)."""
    pdyn.reset()
    torch._dynamo.reset()
    model = copy.deepcopy(base).to(train_gpu.DEVICE).train()
    # on the GPU at least DDP's first bucket (1 MB): dynamo's DDPOptimizer asserts it; tiny smoke models need less
    ddp = wrapper(1.0 if train_gpu.DEVICE == "cuda" else 0.015)(model)
    launched: list[float] = []

    def hook(state, bucket):  # type: ignore[no-untyped-def]  # NOTE: DDP rejects a string annotation here
        launched.append(time.perf_counter())
        return default_hooks.allreduce_hook(None, bucket)

    ddp.register_comm_hook(None, hook)
    step = train_gpu.frontend(COLUMNS[column], ddp)
    for i in range(2):
        launched.clear()
        loss = step(**train_gpu.to_device(make(*shape, 1000 * rank + i))).loss
        train_gpu.sync()
        start = time.perf_counter()
        loss.backward()
        train_gpu.sync()
        end = time.perf_counter()
        model.zero_grad(set_to_none=True)
    return [(t - start) / (end - start) for t in launched]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a tiny config and 3 steps on the CPU (gloo)")
    parser.add_argument("--model", default="gpt2", choices=("gpt2", "llama"))
    parser.add_argument("--columns", default=None, help=f"a subset of {','.join(COLUMNS)}")
    parser.add_argument("--steps", type=int, default=None, help="steps over the cycle of shapes (default 20)")
    parser.add_argument("--overlap", action="store_true", help="also print when each bucket's all-reduce launched")
    args = parser.parse_args()
    rank, world = setup()
    columns = (args.columns or ("eager,pdyn" if args.smoke else ",".join(COLUMNS))).split(",")
    torch.manual_seed(0)
    base, make, shapes = case(args.model, args.smoke)
    steps = [shapes[i % len(shapes)] for i in range(args.steps or (3 if args.smoke else 20))]
    say = print if rank == 0 else (lambda *a, **k: None)
    device = torch.cuda.get_device_name() if train_gpu.DEVICE == "cuda" else "cpu"
    say(f"{world} ranks on {device}, torch {torch.__version__}, {args.model}, {len(steps)} steps, "
        f"(batch, seq) per rank: {sorted(set(steps))}")
    say("| model | column | first step (s) | total (s) | steady (ms) | peak (MiB) | loss - eager's | kernels/step | "
        "compiles (pdyn: graphs/backward_graphs/compiles/graphs_on_torch/kernels) |")
    say("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    eager_loss = None
    for column in columns:
        result = run(column, base, make, steps, rank)
        eager_loss = result["loss"] if column == "eager" else eager_loss
        say(train_gpu.row(args.model, column, result, None if column == "eager" else eager_loss), flush=True)
    if args.overlap:
        for column in columns:
            shares = overlap(column, base, make, steps[0], rank)
            say(f"{column}: {len(shares)} bucket all-reduces launched at "
                f"{', '.join(f'{s:.2f}' for s in shares)} of the backward", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
