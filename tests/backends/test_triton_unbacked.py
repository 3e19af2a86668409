"""Data-dependent programs (as in tests/e2e/test_data_dependent.py) under the Triton backend (its interpreter on a
machine without a GPU): a graph whose sizes only the data decides runs with torch, for the stated
reason "data-dependent sizes", and matches eager; a graph of the same trace with no such size still
gets kernels."""

import logging

import pytest
import torch

import pdyn
from pdyn.backends.triton.unbacked import REASON
from tests.backends.util import Recorder
from tests.helpers import assert_same


def masks(n=3, size=8):
    g = torch.Generator().manual_seed(0)
    return [torch.rand(size, generator=g) > 0.5 for _ in range(n)]


def _mask_getitem(x, m):
    y = x[m]
    return y.sum(0) * 2, y + 1


def _nonzero(x):
    return torch.nonzero(x > 0), torch.masked_select(x, x > 0.5) * 2


def _item_size(x, t):
    return torch.zeros(t.sum().item()) + 1, x * 2


def _split(values, lengths):
    return [p.sum() for p in values.split(lengths.tolist())]


PROGRAMS = {
    "mask_getitem": (_mask_getitem, [(torch.randn(8, 3), m) for m in masks()]),
    "nonzero": (_nonzero, [(torch.randn(4, 5),) for _ in range(3)]),
    "item_size": (_item_size, [(torch.randn(3), torch.tensor([k, 2])) for k in (1, 3, 5)]),
    "split": (_split, [(torch.randn(int(l.sum())), l) for l in (torch.tensor([1, 2, 3]), torch.tensor([0, 4, 2]))]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_data_dependent_graph_runs_with_torch_for_the_stated_reason(name, caplog):
    fn, calls = PROGRAMS[name]
    backend = Recorder()
    compiled = pdyn.optimize(fn, backend=backend)
    with caplog.at_level(logging.INFO, logger="pdyn.lowering"):
        for args in calls:
            assert_same(compiled(*args), fn(*args))
    assert backend.graphs == [None], backend.graphs  # one graph, run with torch
    assert any(REASON in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_no_data_dependent_size_still_gets_kernels():
    backend = Recorder()
    compiled = pdyn.optimize(lambda x, y: (x * y).relu() + 1, backend=backend)
    x, y = torch.randn(6), torch.randn(6)
    assert_same(compiled(x, y), (x * y).relu() + 1)
    assert backend.last.kernel_count >= 1


def test_e2e_runtime_assert_failure_raises_as_eager_under_triton():
    backend = Recorder()
    def f(values, lengths):
        return [p * 2 for p in values.split(lengths.tolist())]
    compiled = pdyn.optimize(f, backend=backend)
    compiled(torch.randn(6), torch.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError) as eager:
        f(torch.randn(6), torch.tensor([1, 2, 4]))
    with pytest.raises(RuntimeError) as ours:
        compiled(torch.randn(6), torch.tensor([1, 2, 4]))
    assert str(ours.value) == str(eager.value)
