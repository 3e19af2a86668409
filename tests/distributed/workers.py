"""Two-process runs on the gloo backend for the distributed tests: `launch` spawns the ranks, each
rank trains an eager reference and pdyn's model over the same batches of changing sizes and
compares every gradient after each step. The models live here, in an importable module, so the
spawned ranks find their classes (and pdyn the globals of their forwards)."""

from __future__ import annotations

import copy
import os
import socket
from typing import Any, Callable, Iterator

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import pdyn

TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
SHAPES = [(2, 5), (3, 7), (4, 3)]   # (batch, seq): both change every step
WIDTH = 16


class Block(torch.nn.Module):
    """A pre-norm residual MLP: layer_norm, linear, gelu, linear."""

    def __init__(self, width: int = WIDTH) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class Net(torch.nn.Module):
    """An input projection, `depth` blocks and a head; the loss is a mean of squares."""

    def __init__(self, depth: int = 2, width: int = WIDTH) -> None:
        super().__init__()
        self.inp = torch.nn.Linear(4, width)
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.blocks:
            h = block(h)
        return self.head(h).pow(2).mean()


def batches(rank: int) -> Iterator[torch.Tensor]:
    """Each rank's own data (so the all-reduce matters), of the sizes in SHAPES."""
    g = torch.Generator().manual_seed(100 + rank)
    for batch, seq in SHAPES:
        yield torch.randn(batch, seq, 4, generator=g)


def same_grads(model: torch.nn.Module, ref: torch.nn.Module, step: int) -> None:
    """Every parameter's gradient equals the reference's (a DTensor shard compared as its shard)."""
    pairs = list(zip(model.named_parameters(), ref.named_parameters(), strict=True))
    assert pairs
    for (name, p), (_, q) in pairs:
        assert p.grad is not None and q.grad is not None, (step, name)
        got, want = (g.to_local() if hasattr(g, "to_local") else g for g in (p.grad, q.grad))
        torch.testing.assert_close(got, want, **TOLERANCE, msg=lambda m: f"step {step}, {name}: {m}")


def train_and_compare(model: torch.nn.Module, ref: torch.nn.Module, rank: int,
                      check: Callable[[torch.nn.Module], None] | None = None) -> None:
    """SGD steps of both over this rank's batches; gradients compared after each backward (and
    `check(model)`)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step, x in enumerate(batches(rank)):
        loss, want = model(x), ref(x)
        torch.testing.assert_close(loss, want, **TOLERANCE)
        loss.backward()
        want.backward()
        same_grads(model, ref, step)
        if check is not None:
            check(model)
        for o in (opt, ref_opt):
            o.step()
            o.zero_grad(set_to_none=True)


def _entry(rank: int, port: int, world: int, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        pdyn.reset()
        fn(rank, *args)
    finally:
        dist.destroy_process_group()


def launch(fn: Callable[..., None], *args: Any, world: int = 2) -> None:
    """Run `fn(rank, *args)` on `world` spawned ranks of one gloo group; a rank's failure raises here."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(_entry, args=(port, world, fn, args), nprocs=world, join=True)


def counters(*names: str) -> dict[str, int]:
    stats = pdyn.stats()
    return {n: stats[n] for n in names}


def clone_pair(make: Callable[[], torch.nn.Module]) -> tuple[torch.nn.Module, torch.nn.Module]:
    """Two copies of one model (same weights on every rank: the seed is set before)."""
    base = make()
    return copy.deepcopy(base), copy.deepcopy(base)
