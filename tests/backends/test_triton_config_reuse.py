"""A launch bound by its latency (fewer than VECTOR_MIN_ELEMENTS elements) reuses a block
configuration its kernel already planned rather than compiling the one the table picks, so a
serving sequence whose sizes cross the table's thresholds compiles each configuration once; a
persistent reduction only reuses blocks that hold its whole reduced extent; large launches keep
the table's choice. The thresholds are scaled down so the interpreter runs every path."""

from __future__ import annotations

import pytest
import torch

from pdyn.backends.triton.runtime import launch, launch_config
from tests.backends.util import check, randn


@pytest.fixture
def small_tables(monkeypatch):
    monkeypatch.setattr(launch_config, "POINTWISE_CONFIGS", [(256, 64, 4), (64, 32, 2), (0, 16, 1)])
    monkeypatch.setattr(launch, "VECTOR_MIN_ELEMENTS", 1024)


def configs(rec) -> dict:
    (launcher,) = [launcher for launcher in rec.last.launchers if launcher.plans]
    return {size: (plan.constexprs[:-1], plan.warps) for size, plan in launcher.plans.items()}


def test_pointwise_reuses_a_planned_configuration(small_tables):
    rec = check(lambda x: x * 2 + 1, (randn(40),), (randn(300),), (randn(2000),), (randn(100),))
    assert configs(rec) == {
        40: ((16,), 1),     # the table's
        300: ((16,), 1),    # the table says (64, 4); small: the planned one instead
        2000: ((64,), 4),   # large: the table's
        100: ((16,), 1),    # the table says (32, 2); (16, 1) and (64, 4) are as near: the first planned
    }


def test_without_reuse_the_table_decides(small_tables, monkeypatch):
    monkeypatch.setattr(launch, "VECTOR_MIN_ELEMENTS", 0)  # every launch "large": the table alone
    rec = check(lambda x: x * 2 + 1, (randn(40),), (randn(300),), (randn(100),))
    assert configs(rec) == {40: ((16,), 1), 300: ((64,), 4), 100: ((32,), 2)}


def test_persistent_reduction_reuses_only_blocks_that_hold_the_row(small_tables):
    rec = check(lambda x: torch.softmax(x, -1), (randn(3, 100),), (randn(3, 300),), (randn(3, 50),),
                (randn(2, 7),))
    rblocks = {size: blocks[1] for size, (blocks, _) in configs(rec).items()}
    # 128 cannot hold 300 reduced elements: 512 is planned; 50 and 7 take the nearest planned
    assert rblocks == {(3, 100): 128, (3, 300): 512, (3, 50): 128, (2, 7): 128}
