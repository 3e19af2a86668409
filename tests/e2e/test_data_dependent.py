"""Data-dependent sizes: ops whose output size depends on data get unbacked symbols (u0, ...) and
the trace goes on; Python reading such a value breaks the graph there; facts the trace assumes
about them are runtime asserts that raise what eager raises."""

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, assert_same, check_calls


def run(fn, calls, graphs, breaks=0, compiles=1):
    backend = CountingBackend()
    optimized = pdyn.optimize(fn, backend=backend)
    for args in calls:
        try:
            expected, expected_exc = fn(*args), None
        except Exception as e:  # noqa: BLE001
            expected, expected_exc = None, e
        try:
            actual, actual_exc = optimized(*args), None
        except Exception as e:  # noqa: BLE001
            actual, actual_exc = None, e
        if expected_exc is not None:
            assert type(actual_exc) is type(expected_exc) and str(actual_exc) == str(expected_exc), (actual_exc, expected_exc)
        else:
            assert actual_exc is None, actual_exc
            assert_same(actual, expected)
    stats = pdyn.stats(optimized)
    assert (len(backend.graphs), stats["graph_breaks"], stats["compiles"]) == (graphs, breaks, compiles), stats
    return backend


def masks(n=3, size=8):
    g = torch.Generator().manual_seed(0)
    return [torch.rand(size, generator=g) > 0.5 for _ in range(n)]


def test_boolean_mask_indexing_is_one_graph():
    def f(x, m):
        y = x[m]
        return y.sum(0) * 2, y + 1, y.view(-1)
    run(f, [(torch.randn(8, 3), m) for m in masks()], graphs=1)


def test_nonzero_masked_select_argwhere():
    def f(x):
        return torch.nonzero(x > 0), torch.masked_select(x, x > 0.5) * 2, torch.argwhere(x < 0).float().sum()
    run(f, [(torch.randn(4, 5),) for _ in range(3)], graphs=1)


@pytest.mark.parametrize("counts", [False, True])
def test_unique_with_and_without_counts(counts):
    def f(x):
        out = torch.unique(x, return_counts=counts)
        return out if counts else out * 2
    run(f, [(torch.randint(0, 4, (10,)),) for _ in range(3)], graphs=1)


@pytest.mark.parametrize("counts", [False, True])
def test_unique_consecutive(counts):
    def f(x):
        return torch.unique_consecutive(x, return_counts=counts)
    run(f, [(torch.randint(0, 3, (10,)),) for _ in range(3)], graphs=1)


def test_repeat_interleave_with_tensor_repeats():
    def f(r):
        idx = torch.repeat_interleave(r)
        return idx * 2 + 1
    run(f, [(torch.randint(0, 4, (6,)),) for _ in range(3)], graphs=1)


def test_item_used_as_size():
    def f(x, t):
        n = t.sum().item()
        return torch.zeros(n) + 1, x * 2
    run(f, [(torch.randn(3), torch.tensor([k, 2])) for k in (1, 3, 5)], graphs=1)


def test_tolist_used_as_split_sizes():
    def f(values, lengths):
        pieces = values.split(lengths.tolist())
        return [p.sum() for p in pieces]
    calls = [(torch.randn(int(l.sum())), l) for l in (torch.tensor([1, 2, 3]), torch.tensor([0, 4, 2]),
                                                       torch.tensor([5, 1, 1]))]
    run(f, calls, graphs=1)


def test_split_with_wrong_lengths_raises_what_eager_raises():
    def f(values, lengths):
        return [p * 2 for p in values.split(lengths.tolist())]
    run(f, [(torch.randn(6), torch.tensor([1, 2, 3])), (torch.randn(6), torch.tensor([1, 2, 4])),
            (torch.randn(7), torch.tensor([1, 2, 4]))], graphs=1)


def test_python_reading_the_value_breaks_the_graph_there():
    def f(x, m):
        y = x[m] * 2
        if y.shape[0] > 2:
            return y + 1
        return y - 1
    run(f, [(torch.randn(8), torch.arange(8) < k) for k in (5, 6, 7)], graphs=2, breaks=1, compiles=1)


def test_pdyn_check_violated_raises_what_eager_raises():
    def f(x, m):
        y = x[m]
        pdyn.check(y.shape[0] <= 5, "too many")
        return y * 2
    x = torch.randn(8)
    run(f, [(x, torch.arange(8) < k) for k in (2, 4, 7)], graphs=1)


def test_runtime_assert_node_is_in_the_graph():
    def f(x, m):
        y = x[m]
        pdyn.check(y.shape[0] >= 1)
        return y
    backend = run(f, [(torch.randn(8), torch.arange(8) < k) for k in (1, 3, 0)], graphs=1)
    names = [n.target.__name__ for n in backend.graphs[0].graph.nodes if n.op == "call_function"
             and hasattr(n.target, "__name__")]
    assert "runtime_assert" in names


def test_broadcast_with_a_data_dependent_size_asserts():
    def f(x, m, z):
        return x[m] + z
    z = torch.randn(3)
    run(f, [(torch.randn(8), torch.arange(8) < 3, z), (torch.randn(8), torch.arange(8) < 1, z),
            (torch.randn(8), torch.arange(8) < 4, z)], graphs=1)


def test_check_is_size_eager_and_compiled():
    def f(t):
        n = t.item()
        pdyn.check_is_size(n)
        return torch.ones(n)
    run(f, [(torch.tensor(k),) for k in (2, 0, 4, -1)], graphs=1)


def test_unbacked_graph_runs_with_torch_on_triton(monkeypatch):
    from pdyn.backends.triton import triton_backend
    def f(x, m):
        return x[m] * 2
    opt = pdyn.optimize(f, backend=triton_backend)
    for m in masks():
        x = torch.randn(8)
        assert_same(opt(x, m), f(x, m))


def test_a_count_of_a_dynamic_input_is_at_most_its_numel_without_a_break():
    def f(x):
        n = torch.nonzero(x).shape[0]
        y = x[x > 0]
        if n <= x.numel() and y.shape[0] < x.numel() + 1:   # true by construction: no read of data
            return x * 2, y.sum()
        return x, y

    run(f, [(torch.randn(n, 3),) for n in (5, 7, 9)], graphs=1)


def test_a_count_compared_beyond_what_its_bound_proves_still_reads_the_data():
    def f(x):
        if torch.nonzero(x).shape[0] < x.numel():   # false when every element is non-zero
            return x * 2
        return x - 1

    with_zeros = [(torch.randn(n, 3).relu(),) for n in (5, 7)]   # about half are zero: the true branch
    run(f, with_zeros + [(torch.ones(6, 3),)], graphs=3, breaks=1, compiles=1)
