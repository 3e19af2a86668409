"""NumPy traced as tensor ops (pdyn/trace/variables/torch/numpy_arrays.py, numpy_functions.py):
results equal eager's in value, dtype and type (ndarray, NumPy scalar, tensor), inputs after the
call too; what cannot be traced exactly (writes, data read into Python, a tensor handed to NumPy's
reductions, random numbers) is a graph break with key `numpy`."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch

import pdyn
from tests.helpers import check, check_calls


def _breaks(fn, *args) -> list[str]:
    return [r.key for r in pdyn.explain(fn)(*args).break_reasons]


def test_results_are_ndarrays_and_numpy_scalars_as_eager_gives_them():
    def f(x):
        a = x.numpy()
        return a.sum(), a.mean(axis=0), np.asarray(a.sum()), a[0, 0], a.astype(np.float32).dtype

    opt = check(f, torch.randn(3, 4, dtype=torch.float64), graphs=1)
    out = opt(torch.randn(3, 4, dtype=torch.float64))
    assert [type(o) for o in out] == [np.float64, np.ndarray, np.ndarray, np.float64, np.dtypes.Float32DType]


def test_float64_defaults_and_int_arange_as_numpy():
    def f(n):
        return np.ones(n), np.arange(n), np.linspace(0, 1, n), np.zeros((2, n), dtype=np.int32).sum(0)

    check(f, 4, graphs=1)


def test_ndarray_input_shares_memory_with_numpy_of_the_result():
    def f(arr):
        return arr.T, arr * 2

    arr = np.arange(6.0).reshape(2, 3)
    out = pdyn.optimize(f, backend="eager")(arr)
    assert np.shares_memory(out[0], arr) and not np.shares_memory(out[1], arr)
    assert pdyn.stats()["graph_breaks"] == 0


@pytest.mark.parametrize("body", [
    lambda a: a.sort(),                      # writes the array
    lambda a: a.tolist(),                    # data into Python
    lambda a: float(a.sum()),                # data into Python
])
def test_what_cannot_be_traced_exactly_breaks_and_matches_eager(body):
    def f(x):
        a = (x + 1).numpy()
        return body(a), a

    check_calls(f, (torch.randn(3),))
    assert "numpy" in _breaks(f, torch.randn(3)) or pdyn.stats()["graph_breaks"] >= 1


def test_in_place_operator_on_an_array_breaks_and_writes_the_tensor_as_eager():
    def f(x):
        a = x.numpy()
        a += 1
        return x * 2

    check_calls(f, (torch.randn(3),))
    assert "numpy" in _breaks(f, torch.randn(3))


def test_numpy_random_and_a_reduction_of_a_tensor_break():
    def f(x):
        return np.random.rand(3) + (x + 1).numpy()

    def g(x):
        return np.mean(x + 1)   # NumPy calls the tensor's own mean(axis=...): eager raises TypeError

    assert "numpy" in _breaks(f, torch.randn(3))
    with pytest.raises(TypeError) as eager:
        g(torch.randn(3))
    with pytest.raises(TypeError) as traced:
        pdyn.optimize(g, backend="eager")(torch.randn(3))
    assert str(traced.value) == str(eager.value)


def test_a_size_that_depends_on_the_data_breaks():
    def f(x):
        return np.unique(x.numpy())

    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an internal error warns
        check_calls(f, (torch.tensor([1.0, 1.0, 2.0]),))
    assert "numpy" in _breaks(f, torch.tensor([1.0, 1.0, 2.0]))


def test_int_division_is_float64_as_numpy():
    def f(x):
        a = x.numpy()
        return a / 3, a[0] / 68, np.mean(a)   # torch's own default would give float32

    opt = check(f, torch.arange(4), graphs=1)
    assert [o.dtype for o in opt(torch.arange(4))] == [np.float64] * 3


def test_ndarray_input_guards_dtype_and_shape():
    def f(arr):
        return arr.copy() * 2

    check_calls(f, (np.arange(3),), (np.arange(3.0),), (np.arange(4),), (np.array(["a"]),))


def test_deque_copy_is_a_new_deque_and_insert_is_traced():
    def f(a, b):
        d = collections.deque([a, b])
        c = d.copy()
        c.append(a * 2)
        c.insert(1, b + 1)
        return d, c

    check(f, torch.randn(2), torch.randn(2), graphs=1)


def test_deque_insert_at_maxlen_raises_as_eager():
    def f(a):
        d = collections.deque([a, a], maxlen=2)
        d.insert(0, a)
        return d

    check(f, torch.randn(2), graphs=0)


def test_numpy_nodes_run_as_torch_calls_in_triton_graphs_with_views_kept():
    def f(x):
        a = (x * 2).numpy()
        b = a.T   # a view of `a`: the write through `t` shows in it, as in eager
        t = torch.from_numpy(a)
        t.add_(1)
        return torch.from_numpy(b).sin() + 1, b, t.sum()

    opt = check_calls(f, (torch.randn(8, 8),), backend="triton")
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["kernels"] >= 1 and stats["nodes_on_torch"] >= 1, stats


def test_identity_and_memory_sharing_are_numpys():
    def f(x, arr):
        a = (x + 1).numpy()
        same = np.asarray(a)          # NumPy returns `a` itself
        copied = a.astype(a.dtype)    # NumPy copies; torch's .to() would not
        gx, gy = np.meshgrid(a, a)    # NumPy copies; torch.meshgrid expands views
        torch.from_numpy(copied).add_(1)
        torch.from_numpy(gx).mul_(3)
        return same is a, arr, (a, a), copied, gx

    opt = check(f, torch.randn(3), np.arange(3.0), graphs=1)
    arr = np.arange(3.0)
    got = opt(torch.randn(3), arr)
    assert got[0] is True and got[1] is arr and got[2][0] is got[2][1]
    assert not np.shares_memory(got[3], got[2][0]) and not np.shares_memory(got[4], got[2][0])


def test_one_array_passed_twice_is_one_object():
    def f(a, b):
        return a is b, a + 1, b * 2

    arr = np.arange(3.0)
    check_calls(f, (arr, arr), (arr, np.arange(3.0)), (arr, arr), compiles=2)


def test_errors_of_numpy_scalars_are_eagers():
    def f(x):
        s = x.numpy().sum()
        return len(s)

    def g(x):
        return [v for v in x.numpy().sum()]

    check_calls(f, (torch.randn(3),))
    check_calls(g, (torch.randn(3),))


def test_elementwise_numpy_keeps_sizes_symbolic():
    def f(x):
        a = (x + 1).numpy()
        return np.where(a > 0, a * 2, np.exp(a)), np.clip(a, -1, 1) + a.astype(np.float64), -a

    def g(arr):
        return np.sqrt(arr ** 2 + 1) * 2

    opt = check_calls(f, *[(torch.randn(n, 3),) for n in (2, 3, 5, 7)], compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0
    opt = check_calls(g, *[(np.arange(float(n)),) for n in (2, 3, 5, 7)], compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_numpy_dtype_argument_is_a_guarded_constant():
    def f(x, dt):
        a = x.numpy()
        return np.ones_like(a, dtype=dt), np.zeros(3, dt).dtype == dt, x * np.finfo(a.dtype).eps

    calls = [(torch.randn(3), np.dtype("float32")), (torch.randn(3), np.dtype("float32")),
             (torch.randn(3), np.dtype("int64"))]
    opt = check_calls(f, *calls, compiles=2)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_ufunc_out_writes_out_and_returns_it():
    def f(x, out):
        a = (x + 1).numpy()
        res = np.sin(a, out=out)
        return res is out, out

    check_calls(f, (torch.randn(3), np.zeros(3, dtype=np.float32)), (torch.randn(3), np.zeros((2, 3), np.float32)))
    assert pdyn.stats()["graph_breaks"] == 0


def test_ufunc_out_with_a_cast_breaks():
    def f(x, out):
        return np.sin(x.numpy(), out=out), out

    check_calls(f, (torch.randn(3), np.zeros(3, dtype=np.float64)))
    assert "numpy" in _breaks(f, torch.randn(3), np.zeros(3, dtype=np.float64))


def test_tensor_with_a_numpy_integer_reads_its_value():
    def f(x, m):
        return x + m.sum(), m.max() * x, x - m[0]

    check_calls(f, (torch.tensor([2.3]), np.array([1, 2, 3])), (torch.tensor([2.3]), np.array([4, 2, 3])),
                (torch.tensor([2, 3]), np.array([4, 2, 3], dtype=np.int8)))
    assert pdyn.stats()["graph_breaks"] == 0


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # eager NumPy's
@pytest.mark.parametrize("body", [
    lambda a, b: a // b, lambda a, b: a % b, lambda a, b: np.floor_divide(a, b), lambda a, b: a ** (b - 1),
])
def test_integer_ops_whose_values_torch_numpy_does_not_give_break(body):
    def f(x, y):
        return body(x.numpy(), y.numpy())

    calls = [(torch.tensor([5, -5, 4]), torch.tensor([0, 2, 0])), (torch.tensor([5, -5, 4]), torch.tensor([0, 1, 2]))]
    check_calls(f, *calls)
    assert "numpy" in _breaks(f, torch.tensor([5, -5, 4]), torch.tensor([1, 2, 3]))


def test_integer_power_by_a_non_negative_constant_is_traced():
    def f(x):
        return x.numpy() ** 2, np.power(x.numpy(), 3)

    check(f, torch.tensor([5, -5, 4]), graphs=1)


def test_tensors_made_from_numpy_scalars_and_legacy_constructors():
    def f(x):
        a = x.numpy()
        picked = [a[0], a[2]]
        return (torch.LongTensor(picked), torch.tensor(picked), torch.tensor(picked, dtype=torch.float16),
                torch.FloatTensor([1, x.shape[0]]), torch.LongTensor((2.7, -1.5)))

    opt = check_calls(f, (torch.tensor([3, 1, 4, 1]),), (torch.tensor([7, 5, 2, 8]),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_a_tensor_of_numpy_scalars_of_several_dtypes_breaks():
    def f(x, y):
        return torch.tensor([x.numpy()[0], y.numpy()[0]])

    check_calls(f, (torch.tensor([3]), torch.tensor([1.5])))
    assert "numpy" in _breaks(f, torch.tensor([3]), torch.tensor([1.5]))
