"""First-call time and compile counts of a stack of identical layers with a graph break inside
each layer's forward (docs/graph-breaks.md, identical layers): 2 layers against 24, eager, pdyn and
torch.compile measured in this one run (CPU; each the least of 3 first calls). The ratios are to
eager's and torch.compile's first call of the same stack; the counts are pdyn's compiles (all code objects) and graphs, and the
graphs torch.compile handed to its backend.

    python benchmarks/identical_layers.py [--backend eager|auto] [--inductor] [--repeats N]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from typing import Any, Callable

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout's pdyn
import pdyn  # noqa: E402

SINK = io.StringIO()


class Block(torch.nn.Module):
    """A pre-norm MLP block whose forward breaks the graph once (a print)."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.up(self.norm(x))
        print("", end="", file=SINK)
        return x + self.down(torch.nn.functional.gelu(h))


class Stack(torch.nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.layers = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def first_call(make: Callable[[torch.nn.Module], Callable[..., Any]], n: int, x: torch.Tensor,
               reset: Callable[[], None] = lambda: None, repeats: int = 3) -> float:
    """The least of `repeats` first calls, each of a fresh stack after `reset()` (a shared machine
    is noisy; the least is the cost itself)."""
    best = float("inf")
    for _ in range(repeats):
        reset()
        torch.manual_seed(0)
        fn = make(Stack(n))
        start = time.perf_counter()
        with torch.no_grad():
            fn(x)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="eager", help="pdyn's backend (eager compares frontends)")
    parser.add_argument("--inductor", action="store_true", help="torch.compile with inductor, not backend=eager")
    parser.add_argument("--repeats", type=int, default=3, help="first calls measured per cell (the least is shown)")
    args = parser.parse_args()
    torch.set_num_threads(1)   # first-call time, not kernel speed: one thread is the least noisy
    x = torch.randn(8, 16, 64)
    tc_backend = "inductor" if args.inductor else "eager"
    print(f"pdyn backend={args.backend}, torch.compile backend={tc_backend}; first call in ms")
    print(f"{'layers':>6} {'eager':>8} {'pdyn':>8} {'compile':>8} {'pdyn/eager':>10} {'pdyn/compile':>12} "
          f"{'pdyn compiles':>13} {'pdyn graphs':>11} {'compile graphs':>14}")
    counter = {"graphs": 0}

    def counting(gm: Any, inputs: Any) -> Any:
        counter["graphs"] += 1
        return gm.forward if tc_backend == "eager" else torch._inductor.compile_fx.compile_fx(gm, inputs)
    for n in (1, 2, 24):   # 1: a warm-up of each tool's one-time costs, not printed
        eager = first_call(lambda m: m, n, x, repeats=args.repeats)
        mine = first_call(lambda m: pdyn.optimize(m, backend=args.backend), n, x, pdyn.reset, args.repeats)
        stats = pdyn.stats()
        theirs = first_call(lambda m: torch.compile(m, backend=counting), n, x,
                            lambda: (torch._dynamo.reset(), counter.update(graphs=0)), args.repeats)
        if n == 1:
            continue
        print(f"{n:>6} {eager * 1e3:>8.1f} {mine * 1e3:>8.1f} {theirs * 1e3:>8.1f} {mine / eager:>10.1f} "
              f"{mine / theirs:>12.2f} {stats['compiles']:>13} {stats['graphs']:>11} {counter['graphs']:>14}")


if __name__ == "__main__":
    main()
