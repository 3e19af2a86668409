"""The rule of pdyn/base/untraced.py, in one process: which callables pdyn never traces."""

import functools

from torch.nn.parallel import DistributedDataParallel as DDP

from pdyn.base.untraced import untraced, untraced_module
from tests.distributed.workers import Block


def test_functions_methods_and_partials_of_torch_distributed_are_untraced() -> None:
    assert untraced(DDP.forward) == "torch.nn.parallel.distributed"
    assert untraced(functools.partial(DDP.forward, None)) == "torch.nn.parallel.distributed"
    fsdp = __import__("torch.distributed.fsdp", fromlist=["fully_shard"])
    assert untraced(fsdp.fully_shard) is not None and untraced(fsdp.fully_shard).startswith("torch.distributed")


def test_user_code_and_lookalike_names_are_traced() -> None:
    assert untraced(Block.forward) is None and untraced(Block().forward) is None
    assert untraced(len) is None and untraced(None) is None
    assert not untraced_module("torch.distributedx") and not untraced_module(None)
    assert untraced_module("torch.distributed") and untraced_module("torch.nn.parallel.comm")
