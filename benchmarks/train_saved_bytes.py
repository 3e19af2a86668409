"""What one training step keeps for its backward, eager against pdyn, per model (issue 29's memory
claim), measured exactly on the CPU: every tensor saved for backward passes through
`torch.autograd.graph.saved_tensors_hooks` (pdyn's autograd Function saves through
`ctx.save_for_backward`), summed once per storage, leaving out the parameters' and inputs'
storages (they exist without the step). Kernels run under Triton's interpreter without a GPU.

    python benchmarks/train_saved_bytes.py [--only gpt2,llama] [--batch 2 --seq 16] [--detail llama]

--detail NAME prints each side's saved storages per autograd node (for finding what one side keeps
and the other does not).
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import sys
from typing import Any

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # NOTE: before anything imports triton

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # this checkout's pdyn and tests

import pdyn  # noqa: E402
from model_suite.saved_bytes import PeakMemory, Saved, by_node, saved_bytes  # noqa: E402
from model_suite.train_cases import TRAIN_CASES, TrainCase, weighted_loss  # noqa: E402

DEFAULT = "gpt2,llama,bert_mlm,vit,t5,bert,distilbert,mlp_gelu,mlp_silu,layer_norms"


def loss_of(case_labels: bool, out: Any) -> torch.Tensor:
    return out.loss if case_labels else weighted_loss(out)


def measure(model: torch.nn.Module, kwargs: dict[str, Any], labels: bool, compiled: bool,
            detail: bool) -> tuple[Saved, int]:
    """One forward and backward of `model` (eager, or through pdyn's Triton backend) with dropout's
    seed fixed: what the forward saved, and the step's peak of live storages. Two steps compile
    (under the same dispatch mode: a new mode would be a new guard; a model may set a config
    field on its first call, ViT's problem_type, which the second call's guard sees), the third
    is measured."""
    fn = pdyn.optimize(model, backend="triton") if compiled else model
    keep = list(model.parameters()) + [v for v in kwargs.values() if isinstance(v, torch.Tensor)]
    peak = PeakMemory()
    for warm in (True, True, False):
        model.zero_grad(set_to_none=True)
        peak.peak, peak.live = 0, {}
        with peak:
            torch.manual_seed(1)
            saved, out = saved_bytes(lambda: fn(**kwargs), keep)
            if detail and not warm:
                print(f"--- {'pdyn' if compiled else 'eager'}: {saved.bytes} bytes in {len(saved.activations)} storages")
                print("\n".join(by_node(out, keep)))
            loss_of(labels, out).backward()
            del out
    return saved, peak.peak


class MLP(torch.nn.Module):
    """Linear -> activation -> Linear blocks with layer norms: long pointwise chains."""

    def __init__(self, act: torch.nn.Module, width: int = 64) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(
            torch.nn.LayerNorm(width), torch.nn.Linear(width, 4 * width), act, torch.nn.Linear(4 * width, width))
            for _ in range(2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return x


class LayerNorms(torch.nn.Module):
    def __init__(self, width: int = 64) -> None:
        super().__init__()
        self.norms = torch.nn.ModuleList(torch.nn.LayerNorm(width) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for norm in self.norms:
            x = torch.nn.functional.gelu(norm(x)) * 2 + x
        return x


def _features(batch: int, seq: int, seed: int) -> dict[str, Any]:
    return {"x": torch.randn(batch, seq, 64, generator=torch.Generator().manual_seed(seed)).requires_grad_()}


EXTRA = {
    "mlp_gelu": TrainCase("mlp_gelu", lambda: MLP(torch.nn.GELU()), _features, False),
    "mlp_silu": TrainCase("mlp_silu", lambda: MLP(torch.nn.SiLU()), _features, False),
    "layer_norms": TrainCase("layer_norms", LayerNorms, _features, False),
}


def compare(case: TrainCase, batch: int, seq: int, detail: bool) -> tuple[tuple[Saved, int], tuple[Saved, int]]:
    torch.manual_seed(0)
    model = case.build().train()
    kwargs = case.inputs(batch, seq, 0)
    eager = measure(copy.deepcopy(model), kwargs, case.labels, False, detail)
    pdyn.reset()
    ours = measure(model, kwargs, case.labels, True, detail)
    return eager, ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=DEFAULT)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--detail", default="", help="models whose saved tensors to list per node")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, batch {args.batch}, seq {args.seq}; KiB beyond parameters and inputs")
    print("| model | saved: eager | saved: pdyn | pdyn / eager | tensors saved: eager, pdyn | "
          "peak: eager | peak: pdyn | pdyn / eager |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only.split(","):
        case = EXTRA.get(name) or TRAIN_CASES[name]
        (eager, eager_peak), (ours, our_peak) = compare(case, args.batch, args.seq, name in args.detail.split(","))
        print(f"| {name} | {eager.bytes / 1024:.1f} | {ours.bytes / 1024:.1f} | {ours.bytes / max(eager.bytes, 1):.2f} | "
              f"{eager.count}, {ours.count} | {eager_peak / 1024:.1f} | {our_peak / 1024:.1f} | "
              f"{our_peak / max(eager_peak, 1):.2f} |", flush=True)


if __name__ == "__main__":
    main()
