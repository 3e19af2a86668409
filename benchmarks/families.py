"""Model families outside the suite, each built from a tiny config with random weights (nothing is
downloaded): a mixture-of-experts decoder (Mixtral with its eager expert loop), a state-space model
(Mamba) and a windowed vision transformer (Swin), each over six changing input shapes, under pdyn
beside torch.compile(backend="eager") with dynamic=None and dynamic=True; prints a markdown table.

Columns, for each frontend (as benchmarks/models.py):

- graphs, breaks: graphs handed to the backend and graph breaks on the first call (pdyn's frames
  that ran eagerly are counted as "eager");
- compiles: traces over the six calls (pdyn's `compiles`, dynamo's frames converted);
- ops: the ops pdyn's graphs captured over the six calls (pdyn.stats()["ops_captured"]), or the
  nodes of every graph torch.compile's backend received;
- first call: its time, tracing included; total: the six calls, compiles included;
- per call: the six calls again, every entry warm, as a ratio to eager's time for them.

A frontend whose output differs from eager's shows "wrong"; one that raises shows "error".
pdyn runs with its default backend (eager kernels on a CPU), and with backend="triton" in the
column "pdyn(triton)" (not by default: on a CPU its kernels run under Triton's interpreter).

    python benchmarks/families.py [--smoke] [--only moe,ssm,vit] [--columns pdyn,pdyn(triton),...]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import pathlib
import sys
from typing import Any, Callable

import torch
import transformers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # model_suite/, benchmarks.models

if not torch.cuda.is_available():  # backend="triton" on a CPU: kernels under Triton's interpreter
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pdyn  # noqa: E402
from benchmarks.models import Counting, TorchCompile, steady, timed_sequence, warm_up  # noqa: E402
from model_suite.case import assert_close_outputs, token_ids  # noqa: E402

VOCAB = 100


@dataclasses.dataclass
class Family:
    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, int, int], dict[str, Any]]   # (batch, size, seed) -> forward's kwargs
    shapes: list[tuple[int, int]]                       # six (batch, seq or image side)


def mixtral() -> torch.nn.Module:
    """Two decoder layers of 4 experts, 2 per token, run by the eager loop over the experts hit."""
    config = transformers.MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4,
                                        num_experts_per_tok=2, max_position_embeddings=128,
                                        experts_implementation="eager")
    return transformers.MixtralForCausalLM(config)


def mamba() -> torch.nn.Module:
    config = transformers.MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=8, num_hidden_layers=2, expand=2,
                                      conv_kernel=4)
    return transformers.MambaForCausalLM(config)


def swin() -> torch.nn.Module:
    config = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                                     window_size=4)
    return transformers.SwinModel(config)


def text(batch: int, seq: int, seed: int) -> dict[str, Any]:
    return {"input_ids": token_ids(batch, seq, seed)}


def image(batch: int, side: int, seed: int) -> dict[str, Any]:
    generator = torch.Generator().manual_seed(seed)
    return {"pixel_values": torch.randn(batch, 3, side, side, generator=generator)}


TEXT_SHAPES = [(2, 16), (3, 24), (1, 8), (4, 32), (2, 12), (3, 40)]
FAMILIES = [
    Family("moe", mixtral, text, TEXT_SHAPES),
    Family("ssm", mamba, text, TEXT_SHAPES),
    Family("vit", swin, image, [(2, 32), (3, 64), (1, 32), (2, 48), (4, 32), (1, 64)]),
]
SMOKE_SHAPES = 3


class Pdyn:
    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.name = "pdyn" if backend == "auto" else f"pdyn({backend})"

    def compile(self, model: torch.nn.Module) -> Any:
        pdyn.reset()
        return pdyn.optimize(model, backend=self.backend)

    def first_call(self) -> tuple[str, str]:
        stats = pdyn.stats()
        eager = f" (+{stats['eager_fallbacks']} eager)" if stats["eager_fallbacks"] else ""
        return str(stats["graphs"]), f"{stats['graph_breaks']}{eager}"

    def compiles(self) -> int:
        return pdyn.stats()["compiles"]

    def ops(self) -> int:
        return pdyn.stats()["ops_captured"]


class Dynamo(TorchCompile):
    """torch.compile with a backend that counts graphs and their call nodes."""

    def __init__(self, dynamic: bool | None) -> None:
        super().__init__(dynamic)
        self.backend = NodeCounting()

    def ops(self) -> int:
        return self.backend.ops


class NodeCounting(Counting):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.ops += sum(node.op.startswith("call") for node in gm.graph.nodes)
        return super().__call__(gm, example_inputs)


COLUMNS: dict[str, Callable[[], Any]] = {
    "torch.compile(dynamic=None)": lambda: Dynamo(None), "torch.compile(dynamic=True)": lambda: Dynamo(True),
    "pdyn": lambda: Pdyn("auto"), "pdyn(triton)": lambda: Pdyn("triton"),
}
DEFAULT_COLUMNS = "torch.compile(dynamic=None),torch.compile(dynamic=True),pdyn"


def row_of(family: Family, frontend: Any, model: torch.nn.Module, inputs: list[dict[str, Any]],
           expected: list[Any], repeats: int) -> list[Any]:
    """One frontend's row: counts and times, "wrong" where an output differs from eager's."""
    try:
        compiled = frontend.compile(copy.deepcopy(model))
        outputs, (graphs, breaks), first_s, total_s = timed_sequence(compiled, inputs, frontend.first_call)
        compiles, ops = frontend.compiles(), frontend.ops()
        try:
            assert_close_outputs(outputs, expected)
        except AssertionError:
            return [family.name, frontend.name, "wrong", "", "", "", "", "", ""]
        return [family.name, frontend.name, graphs, breaks, str(compiles), str(ops), f"{first_s * 1e3:.1f}",
                f"{total_s * 1e3:.1f}", steady(compiled, inputs, repeats)]
    except Exception as e:  # a frontend that cannot run a model is a row, not the end of the table
        return [family.name, frontend.name, "error", type(e).__name__, "", "", "", "", ""]


def measure(family: Family, shapes: list[tuple[int, int]], repeats: int, columns: list[str]) -> list[list[str]]:
    torch.manual_seed(0)
    model = family.build().eval()
    inputs = [family.inputs(batch, size, i) for i, (batch, size) in enumerate(shapes)]
    expected, _, eager_first, _ = timed_sequence(model, inputs)
    eager_s = steady(model, inputs, repeats)
    rows = [row_of(family, make(), model, inputs, expected, repeats) for make in map(COLUMNS.get, columns)]
    eager_s = min(eager_s, steady(model, inputs, repeats))  # before and after: the machine's noise
    for row in rows:
        if isinstance(row[-1], float):
            row[-1] = f"{row[-1] / eager_s:.2f}"
    return [[family.name, "eager", "-", "-", "-", "-", f"{eager_first * 1e3:.1f}", f"{eager_s * 1e3:.1f}",
             "1.00"]] + rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_SHAPES} shapes, one timing pass")
    parser.add_argument("--only", default="", help="comma-separated families: " + ",".join(f.name for f in FAMILIES))
    parser.add_argument("--columns", default=DEFAULT_COLUMNS, help="comma-separated, of: " + ",".join(COLUMNS))
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - {f.name for f in FAMILIES}
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}")
    columns = [c for c in args.columns.split(",") if c]
    if set(columns) - set(COLUMNS):
        parser.error(f"unknown columns {sorted(set(columns) - set(COLUMNS))}")
    repeats = 1 if args.smoke else 3
    torch.set_num_threads(1)  # steadier timings on a shared machine; every frontend runs the same kernels
    warm_up()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}; eager backends for torch.compile\n")
    print("| family | frontend | graphs (1st call) | breaks (1st call) | compiles | ops | first call ms | "
          "total ms | per call vs eager |")
    print("|" + " --- |" * 9)
    with torch.no_grad():
        for family in FAMILIES:
            if names and family.name not in names:
                continue
            shapes = family.shapes[:SMOKE_SHAPES] if args.smoke else family.shapes
            for row in measure(family, shapes, repeats, columns):
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
