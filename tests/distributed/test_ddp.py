"""pdyn under DistributedDataParallel, two ranks on gloo: `pdyn.optimize(DDP(model))` (DDP's forward
is not traced; the model it wraps is optimized) and `DDP(pdyn.optimize(model))` train as eager DDP
does (every gradient after each step, batch and sequence length changing), with one graph, one
compile and no break."""

from __future__ import annotations

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import pdyn
from tests.distributed.workers import Net, batches, clone_pair, counters, launch, same_grads, train_and_compare

COUNTED = ("compiles", "graphs", "graph_breaks", "frames_without_graph", "backward_graphs", "graphs_on_torch")


def ddp_worker(rank: int, wrap: str, backend: str) -> None:
    model, ref = clone_pair(lambda: Net(depth=1))
    if wrap == "outer":
        ddp = DDP(model)
        assert pdyn.optimize(ddp, backend=backend) is ddp
        assert "forward" not in ddp.__dict__ and "forward" in model.__dict__   # DDP's own forward runs
    else:
        ddp = DDP(pdyn.optimize(model, backend=backend))
    train_and_compare(ddp, DDP(ref), rank)
    backward_graphs = 1 if backend == "triton" else 0
    assert counters(*COUNTED) == {"compiles": 1, "graphs": 1, "graph_breaks": 0, "frames_without_graph": 0,
                                  "backward_graphs": backward_graphs, "graphs_on_torch": 0}


def twice(ddp: DDP, x: torch.Tensor) -> torch.Tensor:
    return ddp(x) * 2


def nested_worker(rank: int) -> None:
    """A DDP called inside an optimized function runs as it is (a break at the call: pdyn does not
    trace DDP's forward), then the function's graph continues; gradients as eager's."""
    model, ref = clone_pair(lambda: Net(depth=1))
    ddp, ref_ddp = DDP(model), DDP(ref)
    step = pdyn.optimize(twice, backend="eager")
    for i, x in enumerate(batches(rank)):
        loss, want = step(ddp, x), twice(ref_ddp, x)
        torch.testing.assert_close(loss, want)
        loss.backward()
        want.backward()
        same_grads(ddp, ref_ddp, i)
    # twice(): no graph before the call (3 calls), its resume function: `* 2` (old code: 19 breaks inside DDP)
    assert counters("compiles", "graphs", "graph_breaks", "frames_without_graph", "ops_captured") == \
        {"compiles": 2, "graphs": 1, "graph_breaks": 1, "frames_without_graph": 3, "ops_captured": 1}


@pytest.mark.parametrize("wrap", ["outer", "inner"])
def test_ddp_trains_as_eager_ddp_with_one_compile(wrap: str) -> None:
    launch(ddp_worker, wrap, "triton")


def test_ddp_on_the_eager_backend() -> None:
    launch(ddp_worker, "outer", "eager")
    launch(nested_worker)
