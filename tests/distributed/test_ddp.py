"""pdyn under DistributedDataParallel, two ranks on gloo: `pdyn.optimize(DDP(model))` (DDP's forward
is not traced; the model it wraps is optimized) and `DDP(pdyn.optimize(model))` train as eager DDP
does (every gradient after each step, batch and sequence length changing), with one graph, one
compile and no break. With buckets smaller than the model, the graph is cut at them (one backward
graph per piece) and the first bucket's all-reduce is launched before the backward ends."""

from __future__ import annotations

import time

import pytest
import torch
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
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


BLOCK_BYTES = 4 * (2 * 16 + 16 * 32 + 32 + 32 * 16 + 16)   # one Block's parameters (fp32)


def graph_backwards(loss: torch.Tensor) -> list[torch.autograd.graph.Node]:
    """The autograd nodes of pdyn's compiled pieces under `loss`."""
    seen, todo, found = set(), [loss.grad_fn], []
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        found += [node] if "GraphFunction" in node.name() else []
        todo += [n for n, _ in node.next_functions]
    return found


def bucket_worker(rank: int, wrap: str) -> None:
    """Buckets of one block's bytes: a piece closes once its parameters fill one, walking back from
    the loss: (head, block 3), block 2, block 1, the input layer: 4 pieces; every gradient as
    eager DDP's; in a step after DDP rebuilt its buckets, a bucket's all-reduce is launched before
    the backward of the graph's first piece starts (the all-reduce overlaps that backward)."""
    cap_mb = BLOCK_BYTES / 2**20
    model, ref = clone_pair(lambda: Net(depth=3))
    ddp = DDP(model, bucket_cap_mb=cap_mb) if wrap == "outer" else DDP(pdyn.optimize(model, backend="triton"),
                                                                        bucket_cap_mb=cap_mb)
    if wrap == "outer":
        pdyn.optimize(ddp, backend="triton")
    train_and_compare(ddp, DDP(ref, bucket_cap_mb=cap_mb), rank)
    assert counters(*COUNTED) == {"compiles": 1, "graphs": 1, "graph_breaks": 0, "frames_without_graph": 0,
                                  "backward_graphs": 4, "graphs_on_torch": 0}
    events: list[str] = []

    def hook(state, bucket):  # type: ignore[no-untyped-def]  # NOTE: DDP rejects a string annotation here
        events.append("all-reduce")
        return default_hooks.allreduce_hook(None, bucket)

    ddp.register_comm_hook(None, hook)
    loss = ddp(next(batches(rank)))
    pieces = graph_backwards(loss)
    assert len(pieces) == 4
    for k, node in enumerate(pieces):
        node.register_prehook(lambda grads, k=k: events.append(f"piece backward {time.perf_counter()}"))
    loss.backward()
    first_piece = max(i for i, e in enumerate(events) if e.startswith("piece"))  # the last backward to run
    assert "all-reduce" in events[:first_piece], events
    assert events.count("all-reduce") >= 3, events


@pytest.mark.parametrize("wrap", ["outer", "inner"])
def test_ddp_cuts_the_graph_at_its_buckets_so_all_reduce_overlaps_the_backward(wrap: str) -> None:
    launch(bucket_worker, wrap)
