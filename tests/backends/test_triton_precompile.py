"""The first call's kernels compiled ahead: one job per launch from the example's sizes, each
distinct (function, specialization, options) compiled once however many layers repeat it."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pdyn.backends.triton.runtime import precompile
from tests.backends.util import DEVICE, check, randn


class Block(torch.nn.Module):
    def __init__(self, h: int) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(h)
        self.fc = torch.nn.Linear(h, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + F.gelu(self.fc(self.norm(x))).softmax(-1) * 0.5


def stack(n: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*[Block(16) for _ in range(n)]).to(DEVICE).eval()


def jobs_of(layers: int) -> list[precompile.Job]:
    model = stack(layers)
    with torch.no_grad():
        rec = check(lambda x: model(x), (randn(6, 16),))
    return rec.last.compile_jobs


def test_repeated_layers_compile_each_distinct_kernel_once(monkeypatch):
    two, four = jobs_of(2), jobs_of(4)
    assert len(four) > len(two) > 0  # one job per launch
    distinct = lambda jobs: {j.key() for j in jobs}  # noqa: E731
    assert len(distinct(four)) == len(distinct(two)) < len(four)  # the layers between share compiles
    ran = []
    monkeypatch.setattr(precompile, "_DONE", set())
    monkeypatch.setattr(precompile.Job, "run", lambda self: ran.append(self.key()))
    before = dict(precompile.STATS)
    precompile.precompile(four, workers=4)
    assert sorted(ran, key=str) == sorted(distinct(four), key=str)
    assert precompile.STATS["compiled"] - before["compiled"] == len(distinct(four))
    precompile.precompile(four + two, workers=4)  # compiled already: nothing runs again
    assert len(ran) == len(distinct(four))


def base(launcher, function):
    """The kernel function a job compiles for: itself, or the kernel whose dynamic twin it is."""
    return next((f for f, twin in launcher.twins.items() if twin is function), function)


def test_jobs_are_the_launches_the_first_call_makes():
    rec = check(lambda x, y: ((x.t() + y) * 0.5, torch.sigmoid(x) * 2), (randn(70, 33), randn(33, 70)))
    checked = 0
    for launcher in rec.last.launchers:
        if launcher.reduction or not launcher.plans:  # a phased form the first call did not take
            continue
        checked += 1  # a 1-D and a 2-D tiled pointwise kernel
        launched = {(p.function, p.constexprs, p.warps) for p in launcher.plans.values()}
        predicted = {(base(launcher, j.function), tuple(v for _, v in j.constexprs), j.warps)
                     for j in rec.last.compile_jobs if base(launcher, j.function) is launcher.functions["pointwise"]}
        assert predicted and predicted <= launched
    assert checked == 2


def test_a_failing_compile_is_left_to_the_launch(monkeypatch):
    jobs = jobs_of(1)

    def fail(self):
        raise RuntimeError("no compiler")

    monkeypatch.setattr(precompile.Job, "run", fail)
    monkeypatch.setattr(precompile, "_DONE", set())
    before = precompile.STATS["failed"]
    precompile.precompile(jobs, workers=2)
    assert precompile.STATS["failed"] - before == len({j.key() for j in jobs})


def test_new_sizes_plan_their_own_launches():
    """The wrapper asks for the jobs of each new tuple of sizes (on the GPU); the plan follows the
    sizes: the 2-D tiles and blocks of a larger call."""
    rec = check(lambda x, y: (x.t() + y) * 0.5, (randn(70, 33), randn(33, 70)), (randn(700, 65), randn(65, 700)))
    ahead = rec.last.ahead
    assert ahead.jobs((70, 33)) == rec.last.compile_jobs
    (small,), (large,) = ahead.jobs((70, 33)), ahead.jobs((700, 65))
    launcher = rec.last.launchers[0]
    assert {(base(launcher, j.function), tuple(v for _, v in j.constexprs)) for j in (small, large)} \
        == {(p.function, p.constexprs) for p in launcher.plans.values()}
    ahead((700, 65))  # no GPU: remembered, nothing compiled
    assert (700, 65) in ahead.seen
