"""Size arithmetic follows Python's int and float rules exactly: an int stays an int (`reshape(n, -1)`
infers an int), `/` gives a float rounded as Python rounds it, and each value keeps its type across
returns, indexing, formatting and graph breaks. Every test runs one compiled function over calls
whose sizes change, so the second call (the symbolic one) is checked too."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import pdyn
from tests.helpers import check_calls


def ones(*shape: int) -> torch.Tensor:
    return torch.ones(*shape)


def test_inferred_reshape_size_is_an_int():
    def f(x, n):
        y = x.reshape(n, -1)
        return y.shape[1], type(y.shape[1]).__name__, y.shape

    check_calls(f, (ones(4, 8), 2), (ones(6, 8), 3), (ones(10, 8), 5), compiles=1)


def test_sizes_made_by_arithmetic_build_tensors_and_index_lists():
    def f(x):
        n = x.shape[0] * 2 - 1
        lst = list(range(20))
        return torch.zeros(n), lst[n], [0] * (n // 3), x.new_ones(x.shape[0] // 2, 3)

    check_calls(f, (ones(3),), (ones(4),), (ones(7),), compiles=2)


def test_true_division_of_a_size_is_a_float():
    def f(x):
        half = x.shape[0] / 2
        return half, type(half).__name__, x * half

    check_calls(f, (ones(4),), (ones(6),), (ones(5),))


def test_index_by_a_float_size_raises_as_in_eager():
    def f(x):
        return [1, 2, 3, 4][x.shape[0] / 2]

    check_calls(f, (ones(4),), (ones(6),))


@pytest.mark.parametrize("op", ["truediv", "floordiv", "mod", "pow_neg"])
def test_float_results_round_as_python_rounds(op):
    def f(x, k):
        n = x.shape[0]
        value = {"truediv": lambda: n / k, "floordiv": lambda: n // k, "mod": lambda: n % k,
                 "pow_neg": lambda: n ** -k}[op]()
        return value, repr(value)

    check_calls(f, (ones(5), 3), (ones(7), 3), (ones(13), 7), (ones(7), 6))


def test_float_helpers_of_sizes():
    def f(x):
        n = x.shape[-1]
        return math.sqrt(n + 1), round(n / 3), round(n / 3, 2), int(n / 3), float(n), math.ceil(n / 4), abs(-n)

    check_calls(f, (ones(2, 5),), (ones(2, 9),), (ones(2, 11),))


def test_sizes_format_as_python_formats_them():
    def f(x):
        n = x.shape[0]
        return f"{n} {n / 2} {n * 1.5:.3f} {x.shape}", str(n // 2), "%d/%s" % (n, n / 4)

    check_calls(f, (ones(3),), (ones(5),), (ones(8),))


def test_a_size_keeps_its_type_across_a_graph_break():
    def f(x):
        n = x.reshape(2, -1).shape[1]
        pdyn.graph_break()
        return f"{n}", n, x.sum() * n

    check_calls(f, (ones(4),), (ones(6),), (ones(10),))


def test_division_by_a_size_that_becomes_zero_raises_zero_division():
    def f(x, y):
        return x * (10 // y.shape[0]), x * (10 % y.shape[0])

    check_calls(f, (ones(2), ones(3)), (ones(2), ones(4)), (ones(2), ones(0)))


def test_int_power_with_a_negative_exponent_is_a_float():
    def f(x, k):
        return x.shape[0] ** (k - 3)

    check_calls(f, (ones(2), 5), (ones(3), 6), (ones(2), 1), (ones(4), 2))


def test_bool_sizes_stay_bools():
    def f(x):
        big = x.shape[0] > 3
        return big, big + 1, type(big + 1).__name__, -big

    check_calls(f, (ones(2),), (ones(5),), (ones(7),))


def test_float_constants_keep_every_bit_and_their_sign_across_a_break():
    def f(x, y):
        scaled = x.shape[1] * math.pi
        signed = x.shape[1] * -0.0
        y.tolist()   # a graph break: both are rebuilt from the size in the code after it
        return scaled, signed, f"{x.shape[1] * 0.1}"

    check_calls(f, (ones(3, 3), ones(2)), (ones(3, 4), ones(2)), (ones(3, 7), ones(2)))


def test_float_steps_over_sums_keep_their_grouping_across_a_break():
    def f(x, y):
        ratio = 1 / (x.size(1) + 1)
        scaled = (x.size(0) - 1) * 2.5 ** (x.size(1) - 2)
        y.tolist()
        return ratio, scaled, repr(ratio)

    check_calls(f, (ones(2, 5), ones(1)), (ones(3, 4), ones(1)), (ones(4, 7), ones(1)))


def test_a_bool_constant_in_size_arithmetic_is_the_int_python_makes_of_it():
    def f(x):
        a = True + x.size(0)
        b = x.size(1) * False - True
        c = x.size(0) / True
        return x * a, x.reshape(-1)[: a + b], x * c

    check_calls(f, (ones(3, 2),), (ones(4, 2),), (ones(5, 2),), compiles=1)
    assert pdyn.stats()["eager_fallbacks"] == 0


def test_a_fake_kernel_that_disagrees_with_the_shape_rule_runs_the_op_eagerly(monkeypatch):
    """torch 2.11's fake `norm(dim=-1)` of a size-1 dim kept the dim, so `.dim()` answered 1 where
    eager answers 0. When the fake run and pdyn's rule disagree on static sizes, neither is
    trusted: the graph breaks at the op and eager computes it."""
    from pdyn.trace import output_graph

    real = output_graph.infer_sizes

    def keeps_the_reduced_dim(env, target, args, kwargs, loc):  # a wrong answer from one side
        sizes = real(env, target, args, kwargs, loc)
        return [(*s, 7) for s in sizes] if sizes is not None and "norm" in str(target) else sizes

    monkeypatch.setattr(output_graph, "infer_sizes", keeps_the_reduced_dim)

    def f(x):
        y = x.norm(dim=-1)
        return y.dim(), y.shape, y + 1

    def static_one() -> torch.Tensor:   # a size first seen as 1 is symbolic: static sizes by a mark
        x = ones(1)
        pdyn.mark_static(x, 0)
        return x

    check_calls(f, (static_one(),), (static_one(),))
    out = pdyn.explain(f)(static_one())
    assert out.graph_break_count == 1 and "fake kernel" in str(out.break_reasons[0])


def test_size_arithmetic_reaching_inf_or_nan_is_python_s():
    def f(x):
        a = x.size(0) * math.inf
        b = a - math.inf
        return x * (a > 0), x + (b != b), math.isnan(b)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an internal error warns and runs eagerly: not good enough
        check_calls(f, (ones(3),), (ones(4),), (ones(5),))
