"""A reduction kernel with several nodes cannot split over r; where its kept extent is too short to
fill the GPU and the reduced one is long, the wrapper runs its nodes one kernel each (each
reduction then splits). Both forms equal eager at odd sizes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pdyn.backends.triton.runtime import launch_config
from tests.backends.util import check, randn


@pytest.fixture
def phased_from_short(monkeypatch):
    """Phased from 40 reduced elements, and a split from 64: small inputs take every path."""
    monkeypatch.setattr(launch_config, "PHASED_MIN_R", 40)
    monkeypatch.setattr(launch_config, "PHASED_MIN_R_INNER", 40)
    monkeypatch.setattr(launch_config, "SPLIT_MIN_R", 64)


@pytest.mark.parametrize("fn", [
    lambda x: torch.softmax(x, dim=0),
    lambda x: torch.softmax(x * 2, dim=-1),
    lambda x: x - x.amax(0, keepdim=True) + x.sum(0),
    lambda x: F.layer_norm(x.t(), (x.shape[0],)),
    lambda x: torch.var_mean(x, 0)[0] * 3,
    lambda x: (x * 2).sum() * 0.5 + x.amax(),  # reductions to one value, then a scalar epilogue
])
def test_phased_kernels_equal_eager(phased_from_short, fn):
    rec = check(fn, (randn(37, 5),), (randn(301, 3),), (randn(3, 517),), (randn(1031, 7),), (randn(2, 4500),))
    source = rec.last.wrapper_source
    assert "launch_config.phased(" in source, source
    # at 1031 x 7 (strided) or 2 x 4500 (inner) the reductions run phased, split over r with a finish
    assert any(plan.finish is not None for launcher in rec.last.launchers for plan in launcher.plans.values())


def test_fused_where_the_gpu_is_full():
    rec = check(lambda x: torch.softmax(x, dim=0), (randn(37, 5),), (randn(301, 3),))
    assert "launch_config.phased(" in rec.last.wrapper_source
    used = [launcher for launcher in rec.last.launchers if launcher.plans]
    assert len(used) == 1  # the fused kernel only: 301 rows are short


def test_phased_choice():
    assert launch_config.phased(1024, 65536, inner=False)
    assert not launch_config.phased(1024, 1024, inner=False)
    assert not launch_config.phased(1 << 16, 65536, inner=False)
    assert launch_config.phased(4, 1 << 20, inner=True)
    assert launch_config.phased(1024, 4096, inner=False) and not launch_config.phased(1, 4096, inner=True)
    assert not launch_config.phased(4096, 1 << 20, inner=True)
