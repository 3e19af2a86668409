"""pdyn under FSDP2 (`fully_shard`), two ranks on gloo: the sharding hooks run as torch runs them
(pdyn does not trace torch.distributed), each block's forward is compiled once for every block of
its structure, and every gradient shard equals eager FSDP2's after each step."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.distributed.workers import Net, clone_pair, counters, launch, train_and_compare

fsdp = pytest.importorskip("torch.distributed.fsdp")
COUNTED = ("compiles", "graphs", "graph_breaks", "frames_without_graph", "backward_graphs", "graphs_on_torch")


def _sharded(model: Net) -> Net:
    for block in model.blocks:
        fsdp.fully_shard(block)
    fsdp.fully_shard(model)
    return model


def _resharded(model: Net) -> None:
    """After the step, FSDP2's hooks left every parameter and gradient a DTensor shard."""
    for name, p in model.named_parameters():
        assert hasattr(p, "to_local") and hasattr(p.grad, "to_local"), name


def blocks_worker(rank: int) -> None:
    """Each block optimized on its own: one code object, one compile for all blocks and sizes."""
    model, ref = (_sharded(m) for m in clone_pair(lambda: Net(depth=2)))
    for block in model.blocks:
        pdyn.optimize(block, backend="triton")
    train_and_compare(model, ref, rank, check=_resharded)
    assert counters(*COUNTED) == {"compiles": 1, "graphs": 1, "graph_breaks": 0, "frames_without_graph": 0,
                                  "backward_graphs": 1, "graphs_on_torch": 0}


def root_worker(rank: int) -> None:
    """The whole model optimized: each call of a sharded block is a break (the block runs with its
    hooks, its forward optimized on its own, once for all blocks). Graphs: the root's input
    projection, the block; the root's resume function, whose break at the next block has nothing
    before it inside the loop, runs without a graph (once per step), the head after the loop as it is."""
    model, ref = (_sharded(m) for m in clone_pair(lambda: Net(depth=2)))
    pdyn.optimize(model, backend="eager")
    train_and_compare(model, ref, rank, check=_resharded)
    assert counters(*COUNTED) == {"compiles": 2, "graphs": 2, "graph_breaks": 2, "frames_without_graph": 3,
                                  "backward_graphs": 0, "graphs_on_torch": 0}


def test_fsdp2_blocks_compile_once_and_train_as_eager() -> None:
    launch(blocks_worker)


def test_fsdp2_model_optimized_whole_breaks_at_each_sharded_block() -> None:
    launch(root_worker)
