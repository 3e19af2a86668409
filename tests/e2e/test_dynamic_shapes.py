"""Partial shape specialization end to end: which dims stay dynamic, which are specialized, and how
many compiles a program costs across sizes (DESIGN.md, "Partial shape specialization")."""

import math
import re

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, assert_same


def run_sizes(fn, make_args, sizes, **opts):
    """Call optimized `fn` once per size; compare each result with eager; return (optimized, backend)."""
    backend = CountingBackend()
    optimized = pdyn.optimize(fn, backend=backend, **opts)
    for n in sizes:
        args = make_args(n)
        assert_same(optimized(*args), fn(*args))
    return optimized, backend


def guard_text(optimized):
    frame = optimized._pdyn_frame
    return "\n".join(e.guard.source for e in frame.cache.entries)


def pinned_dims(guard_source):
    """The dims a guard source pins to a number (TENSOR_MATCH_STATIC), e.g. {"a.size(0)"}."""
    return {f"{v}.size({d})" for v, d in re.findall(r"(\w+)\.(?:size\(|shape\[)(\d)[)\]] != \d+", guard_source)}


def test_batch_dim_never_read_compiles_once():
    fn, _ = run_sizes(lambda x: torch.relu(x * 2) + 1, lambda n: (torch.randn(n, 4),), range(2, 12))
    assert pdyn.stats(fn)["compiles"] == 1


def test_value_read_through_sum_specializes_both_inputs_dim0_only():
    def f(a, b):
        c = a + b
        out = c
        for _ in range(c.size(0)):
            out = out + 1
        return out

    fn, _ = run_sizes(f, lambda n: (torch.randn(3, n), torch.randn(3, n)), [4, 5, 6])
    assert pdyn.stats(fn)["compiles"] == 1
    text = guard_text(fn)
    assert "a.shape[0] != 3" in text and "b.shape[0] != 3" in text
    assert pinned_dims(text) == {"a.size(0)", "b.size(0)"}


def test_bool_read_guards_the_expression_and_specializes_nothing():
    def f(a, b):
        c = a + b
        if c.size(0) > 2:
            return c * 2
        return c

    fn, _ = run_sizes(f, lambda n: (torch.randn(n, 3), torch.randn(n, 3)), [3, 4, 5, 6])
    assert pdyn.stats(fn)["compiles"] == 1
    text = guard_text(fn)
    assert "s0 > 2" in text
    assert pinned_dims(text) == set()


def test_empty_of_size_and_view_of_size0_never_specialize():
    def f(x):
        y = torch.empty(x.size()).fill_(1.0)
        return x.view(x.size(0), -1) + y.view(x.size(0), -1)

    fn, _ = run_sizes(f, lambda n: (torch.randn(n, 3, 2),), [2, 3, 5, 7])
    assert pdyn.stats(fn)["compiles"] == 1
    assert pinned_dims(guard_text(fn)) == set()


def test_assert_shape_equals_tuple_pins_each_dim():
    def f(x):
        assert x.shape == (1, 2, 3)
        return x + 1

    fn, _ = run_sizes(f, lambda n: (torch.randn(1, 2, 3),), [0, 1])
    text = guard_text(fn)
    assert "shape[1] != 2" in text and "shape[2] != 3" in text


def test_equality_comparison_pins_the_dim_per_outcome():
    def f(x):
        if x.size(1) == 10:
            return x * 2
        return x - 1

    fn, _ = run_sizes(f, lambda n: (torch.randn(2, n),), [10, 10, 11, 12, 13])
    assert pdyn.stats(fn)["compiles"] == 2
    assert "shape[1] != 10" in guard_text(fn)


def test_math_sqrt_of_last_dim_stays_dynamic():
    def f(q, k):
        return (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])

    fn, _ = run_sizes(f, lambda n: (torch.randn(2, n), torch.randn(3, n)), [4, 8, 16])
    assert pdyn.stats(fn)["compiles"] == 1


def test_greater_than_read_compiles_once_per_outcome():
    def f(x):
        return x.sum(1) if x.size(1) > 8 else x.mean(1)

    fn, _ = run_sizes(f, lambda n: (torch.randn(2, n),), [3, 4, 5, 9, 10, 12])
    assert pdyn.stats(fn)["compiles"] == 2


def test_greater_than_read_under_any_specializes_twice_then_guards():
    def f(x):
        return x.sum(1) if x.size(1) > 8 else x.mean(1)

    with pdyn.config.patch(specialize_on_read="any"):
        fn, _ = run_sizes(f, lambda n: (torch.randn(2, n),), [3, 4, 5, 6, 7])
    assert pdyn.stats(fn)["compiles"] == 2


def test_range_read_compiles_per_value_until_the_policy_stops():
    def f(x):
        for i in range(x.size(0)):
            x = x + i
        return x

    fn, _ = run_sizes(f, lambda n: (torch.randn(n),), [3, 3, 4, 5, 6])
    stats = pdyn.stats(fn)
    # a loop count is pinned by an equality, also once the dim is seen changing: one compile per
    # length and no break (a break would add a graph and its resume function would unroll the same)
    assert stats["compiles"] == 4
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0


@pytest.mark.parametrize("n, compiles", [(0, 2), (1, 1)])
def test_size_zero_is_specialized_and_one_shares_the_entry(n, compiles):
    fn, _ = run_sizes(lambda x: x * 2, lambda m: (torch.randn(m, 3),), [n, n, 5, 6])
    assert pdyn.stats(fn)["compiles"] == compiles


def test_int_argument_used_only_in_tensor_math_stays_dynamic():
    fn, _ = run_sizes(lambda x, n: x * n + torch.arange(n).sum(), lambda n: (torch.randn(3), n), [2, 3, 4, 5])
    assert pdyn.stats(fn)["compiles"] == 1


def test_int_argument_used_in_range_specializes():
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x

    fn, _ = run_sizes(f, lambda n: (torch.randn(3), n), [2, 2, 2])
    assert pdyn.stats(fn)["compiles"] == 1
    assert "n != 2" in guard_text(fn)


def test_mark_static_and_mark_dynamic():
    def f(x):
        return x * 2

    backend = CountingBackend()
    fn = pdyn.optimize(f, backend=backend)
    for n in (3, 4, 5):
        x = torch.randn(n, 2)
        pdyn.mark_static(x, 0)
        assert_same(fn(x), f(x))
    assert pdyn.stats(fn)["compiles"] == 3

    def g(x):
        for _ in range(x.size(0)):  # a value read of a dim marked dynamic: not specialized
            x = x + 1
        return x

    gfn = pdyn.optimize(g)
    x = torch.randn(3, 2)
    pdyn.mark_dynamic(x, 0)
    assert_same(gfn(x), g(x))
    assert pdyn.stats(gfn)["graph_breaks"] == 1 and pdyn.stats(gfn)["eager_fallbacks"] == 0
    assert "shape[0] != 3" not in guard_text(gfn)


def test_dynamic_false_compiles_per_shape():
    fn, _ = run_sizes(lambda x: x + 1, lambda n: (torch.randn(n),), [2, 3, 4], dynamic=False)
    assert pdyn.stats(fn)["compiles"] == 3


def test_dynamic_true_breaks_on_value_reads():
    def f(x):
        for _ in range(x.size(0)):
            x = x + 1
        return x

    fn, _ = run_sizes(f, lambda n: (torch.randn(n),), [2, 3, 4], dynamic=True)
    assert pdyn.stats(fn)["compiles"] == 1
    assert pdyn.stats(fn)["graph_breaks"] == 1 and pdyn.stats(fn)["eager_fallbacks"] == 0


def test_recompile_limit_runs_eagerly_with_one_warning():
    fn = pdyn.optimize(lambda x: x + 1, dynamic=False)
    with pdyn.config.patch(recompile_limit=3), pytest.warns(UserWarning, match="recompile limit") as warned:
        for n in range(2, 8):
            assert_same(fn(torch.ones(n)), torch.ones(n) + 1)
    assert len([w for w in warned if "recompile limit" in str(w.message)]) == 1
    assert pdyn.stats(fn)["compiles"] == 3


def _read_dim_1(x):
    if x.size(1) == 10:
        return x * 2
    return x - 1


def test_recompile_log_line_names_the_guard_its_line_and_the_decision(caplog):
    fn = pdyn.optimize(_read_dim_1)
    with caplog.at_level("INFO", logger="pdyn.recompiles"):
        fn(torch.randn(2, 10))
        fn(torch.randn(2, 12))
    line = _read_dim_1.__code__.co_firstlineno
    expected = (f"recompiling _read_dim_1() at {__file__}:{line}, compile 2/8: entry 1: "
                f"L['x'].size(1) == 10 failed (now 12), set at {__file__}:{line + 1}  `if x.size(1) == 10:`; "
                f"L['x'].size(1): specialized -> guarded expression")
    assert [r.getMessage() for r in caplog.records if r.name == "pdyn.recompiles"] == [expected]


def test_explain_says_which_dims_are_static_and_why():
    def f(a, b):
        c = a + b
        for _ in range(c.size(0)):
            c = c * 2
        return c

    report = pdyn.explain(f)(torch.randn(3, 4), torch.randn(3, 4))
    assert any("L['a'].size(0), L['b'].size(0) specialized to 3 by range()" in d for d in report.shape_decisions)
    assert "specialized to 3 by range()" in str(report)
