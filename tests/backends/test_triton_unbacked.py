"""Data-dependent programs (as in tests/e2e/test_data_dependent.py) under the Triton backend (its
interpreter on a machine without a GPU): the op that makes a data-dependent size runs with torch,
the wrapper binds the size from its result (`u0 = t1.shape[0]`, `u1 = int(t2[1])`), and kernels
take it as a run-time size argument; results match eager on calls with other data."""

import re

import pytest
import torch

import pdyn
from pdyn.backends.triton.unbacked import REASON
from tests.backends.util import DEVICE, Recorder
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
    return torch.zeros(t.sum().item(), device=x.device) + 1, x * 2


def _split(values, lengths):
    return [p.sum() for p in values.split(lengths.tolist())]


PROGRAMS = {
    "mask_getitem": (_mask_getitem, [(torch.randn(8, 3), m) for m in masks()]),
    "nonzero": (_nonzero, [(torch.randn(4, 5),) for _ in range(3)]),
    "item_size": (_item_size, [(torch.randn(3), torch.tensor([k, 2])) for k in (1, 3, 5)]),
    "split": (_split, [(torch.randn(int(l.sum())), l) for l in (torch.tensor([1, 2, 3]), torch.tensor([0, 4, 2]))]),
}


BINDS = {"mask_getitem": r"u0 = t\d+\.shape\[0\]", "nonzero": r"u0 = t\d+\.shape\[0\]",
         "item_size": r"u0 = int\(t\d+\)", "split": r"u0 = int\(t\d+\[0\]\)"}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_data_dependent_sizes_are_bound_after_their_torch_call_and_kernels_run(name):
    fn, calls = PROGRAMS[name]
    calls = [tuple(a.to(DEVICE) for a in args) for args in calls]
    backend = Recorder()
    compiled = pdyn.optimize(fn, backend=backend)
    for args in calls:
        assert_same(compiled(*args), fn(*args))
    assert len(backend.graphs) == 1
    graph = backend.last                      # compiled, not run with torch
    assert graph.kernel_count >= 1
    source = graph.wrapper_source
    bind = re.search(BINDS[name], source)
    assert bind is not None, source
    for launch in re.finditer(r"kernel\d+_launch\((.*)\)", source):  # a launch using u0 comes after its bind
        if re.search(r"\bu0\b", launch.group(1)):
            assert launch.start() > bind.start(), source


def test_a_size_no_torch_call_produces_is_the_stated_reason():
    import sympy
    from pdyn.backends.triton.unbacked import DataDependentSizes, bind_unbacked
    from pdyn.shapes.graph_meta import SIZES

    class Lowering:  # the parts bind_unbacked reads: no torch call, a size over u0
        gm = torch.fx.symbolic_trace(lambda x: x + 1)
        scheduled: list = []
        sym = type("Sym", (), {"bindings": []})()
    next(iter(Lowering.gm.graph.nodes)).meta[SIZES] = (sympy.Symbol("u0"),)
    with pytest.raises(DataDependentSizes, match=REASON + r" \(u0\)"):
        bind_unbacked(Lowering())


def test_no_data_dependent_size_still_gets_kernels():
    backend = Recorder()
    compiled = pdyn.optimize(lambda x, y: (x * y).relu() + 1, backend=backend)
    x, y = torch.randn(6, device=DEVICE), torch.randn(6, device=DEVICE)
    assert_same(compiled(x, y), (x * y).relu() + 1)
    assert backend.last.kernel_count >= 1


def test_e2e_runtime_assert_failure_raises_as_eager_under_triton():
    backend = Recorder()
    def f(values, lengths):
        return [p * 2 for p in values.split(lengths.tolist())]
    compiled = pdyn.optimize(f, backend=backend)
    compiled(torch.randn(6, device=DEVICE), torch.tensor([1, 2, 3], device=DEVICE))
    with pytest.raises(RuntimeError) as eager:
        f(torch.randn(6, device=DEVICE), torch.tensor([1, 2, 4], device=DEVICE))
    with pytest.raises(RuntimeError) as ours:
        compiled(torch.randn(6, device=DEVICE), torch.tensor([1, 2, 4], device=DEVICE))
    assert str(ours.value) == str(eager.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter's numpy on an empty softmax
def test_sizes_and_launches_follow_the_run_time_value_zero_included():
    def f(x, m):
        y = x[m]
        return y.view(-1, 3).sum(1) * 2, (y * y).sum(), y.softmax(0)
    backend = Recorder()
    compiled = pdyn.optimize(f, backend=backend)
    masks_ = [torch.arange(8, device=DEVICE) < k for k in (5, 8, 0, 2)]
    for m in masks_:
        x = torch.randn(8, 3, device=DEVICE)
        assert_same(compiled(x, m), f(x, m))
    assert len(backend.graphs) == 1 and backend.last.kernel_count >= 2
    # each launcher plans per actual size: a pointwise kernel over y saw 15, 24 and 6 elements (0:
    # no launch), the sum over all of y reduced 15, 24, 0 and 6
    sizes = [set(launcher.plans) for launcher in backend.last.launchers]
    assert {15, 24, 6} in sizes and {(1, 15), (1, 24), (1, 0), (1, 6)} in sizes, sizes
