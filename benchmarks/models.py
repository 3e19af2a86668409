"""The model suite (model_suite/, checked by tests/models) under pdyn beside torch.compile(backend="eager") with dynamic=None
and dynamic=True, all measured in this one run; prints a markdown table.

Both frontends hand their graphs to an eager backend, so the table compares what the frontends do
(trace, guard, break, recompile), not kernels. Each model runs in eval() under no_grad over the
suite's sequence of (batch, seq) calls with padded masks. Columns, for each frontend:

- graphs, breaks: graphs handed to the backend and graph breaks on the first call (pdyn's frames
  that ran eagerly are counted as "eager");
- compiles: traces over the whole sequence (pdyn's `compiles`, dynamo's frames converted);
- first call: its time, tracing included; total: the whole sequence, compiles included;
- per call: the sequence again, every entry warm, as a ratio to eager's time for it.

Timings use one thread. A frontend whose output differs from eager's shows "wrong"; one that raises shows "error".

    python benchmarks/models.py [--quick] [--only NAME,NAME]
"""

from __future__ import annotations

import argparse
import copy
import pathlib
import sys
import time
from typing import Any, Callable

import torch
from torch._dynamo.utils import counters

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # model_suite/, shared with tests/models

import pdyn  # noqa: E402
from model_suite.case import CALLS, ModelCase, assert_close_outputs  # noqa: E402
from model_suite.cases import INFERENCE  # noqa: E402

QUICK_CALLS = [(2, 16), (1, 7), (3, 33)]


class Counting:
    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs += 1
        return gm.forward


def timed_sequence(fn: Callable[..., Any], inputs: list[dict[str, Any]],
                   after_first: Callable[[], Any] = lambda: None) -> tuple[list[Any], Any, float, float]:
    """(outputs, what `after_first` returned after the first call, first call s, all calls s)."""
    outputs = []
    start = time.perf_counter()
    first, snapshot = 0.0, None
    for i, kwargs in enumerate(inputs):
        outputs.append(fn(**kwargs))
        if i == 0:
            first = time.perf_counter() - start
            snapshot = after_first()
    return outputs, snapshot, first, time.perf_counter() - start


def steady(fn: Callable[..., Any], inputs: list[dict[str, Any]], repeats: int) -> float:
    """The best time of `repeats` passes over the sequence."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for kwargs in inputs:
            fn(**kwargs)
        best = min(best, time.perf_counter() - start)
    return best


class PdynFrontend:
    name = "pdyn"

    def __init__(self) -> None:
        self.backend = Counting()

    def compile(self, model: torch.nn.Module) -> Any:
        pdyn.reset()
        return pdyn.optimize(model, backend=self.backend)

    def first_call(self) -> tuple[str, str]:
        stats = pdyn.stats()
        eager = f" (+{stats['eager_fallbacks']} eager)" if stats["eager_fallbacks"] else ""
        return str(self.backend.graphs), f"{stats['graph_breaks']}{eager}"

    def compiles(self) -> int:
        return pdyn.stats()["compiles"]


class TorchCompile:
    def __init__(self, dynamic: bool | None) -> None:
        self.dynamic = dynamic
        self.name = f"torch.compile(dynamic={dynamic})"
        self.backend = Counting()

    def compile(self, model: torch.nn.Module) -> Any:
        torch._dynamo.reset()
        counters.clear()
        return torch.compile(model, backend=self.backend, dynamic=self.dynamic)

    def first_call(self) -> tuple[str, str]:
        return str(self.backend.graphs), str(sum(counters["graph_break"].values()))

    def compiles(self) -> int:
        return counters["frames"]["ok"]


FRONTENDS: list[Callable[[], Any]] = [PdynFrontend, lambda: TorchCompile(None), lambda: TorchCompile(True)]


def measure(case: ModelCase, calls: list[tuple[int, int]], repeats: int) -> list[list[str]]:
    torch.manual_seed(0)
    model = case.build().eval()
    inputs = [case.inputs(batch, seq, i) for i, (batch, seq) in enumerate(calls)]
    expected = timed_sequence(model, inputs)[0]  # also eager's warm-up
    eager_s = steady(model, inputs, repeats)
    rows = []
    for make in FRONTENDS:
        frontend = make()
        try:
            compiled = frontend.compile(copy.deepcopy(model))
            outputs, (graphs, breaks), first_s, total_s = timed_sequence(compiled, inputs, frontend.first_call)
            compiles = frontend.compiles()
            try:
                assert_close_outputs(outputs, expected)
            except AssertionError:
                rows.append([case.name, frontend.name, "wrong", "", "", "", "", ""])
                continue
            rows.append([case.name, frontend.name, graphs, breaks, str(compiles), f"{first_s * 1e3:.1f}",
                         f"{total_s * 1e3:.1f}", steady(compiled, inputs, repeats)])
        except Exception as e:  # a frontend that cannot run a model is a row, not the end of the table
            rows.append([case.name, frontend.name, "error", type(e).__name__, "", "", "", ""])
    eager_s = min(eager_s, steady(model, inputs, repeats))  # before and after: the machine's noise
    for row in rows:
        if isinstance(row[-1], float):
            row[-1] = f"{row[-1] / eager_s:.2f}"
    return [[case.name, "eager", "-", "-", "-", "-", f"{eager_s * 1e3:.1f}", "1.00"]] + rows


def warm_up() -> None:
    """One-time start-up costs (imports, dynamo's first trace) out of the table."""
    pdyn.optimize(lambda x: x + 1, backend="eager")(torch.ones(2))
    torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
    pdyn.reset()
    torch._dynamo.reset()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{len(QUICK_CALLS)} calls, one timing pass")
    parser.add_argument("--only", default="", help="comma-separated model names")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    cases = [c for c in INFERENCE if not names or c.name in names]
    unknown = set(names) - {c.name for c in INFERENCE}
    if unknown:
        parser.error(f"unknown models {sorted(unknown)}; known: {', '.join(c.name for c in INFERENCE)}")
    calls = QUICK_CALLS if args.quick else CALLS
    repeats = 1 if args.quick else 5
    torch.set_num_threads(1)  # steadier timings on a shared machine; every frontend runs the same kernels
    warm_up()
    print(f"torch {torch.__version__}; {len(calls)} calls per model, (batch, seq) = {calls}; eager backends\n")
    print("| model | frontend | graphs (1st call) | breaks (1st call) | compiles | first call ms | total ms | "
          "per call vs eager |")
    print("|" + " --- |" * 8)
    with torch.no_grad():
        for case in cases:
            for row in measure(case, calls, repeats):
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
