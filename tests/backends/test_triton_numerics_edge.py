"""Edge values where the Triton backend must give exactly what eager gives: NaN and inf, signed
zeros, low-precision rounding, aliasing of `.contiguous()`, writes that depend on an argument's
value, and scalars that overflow; integer division by zero, comparisons in float16/bfloat16 against
scalars, add/sub's alpha in the result's dtype, masked_fill with a 0-dim value that overflows, and
the mean of a float64 loss. Each test compares with eager on tiny inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn

from tests.backends.util import DEVICE, Recorder, check_like_eager, each_call_like_eager

INF, NAN = float("inf"), float("nan")


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


def run_both(fn, *args):
    """(eager's result, pdyn+Triton's result, the recorder) for fresh copies of `args`."""
    rec = Recorder()
    compiled = pdyn.optimize(fn, backend=rec)
    clone = lambda a: a.clone() if isinstance(a, torch.Tensor) else a  # noqa: E731
    return fn(*map(clone, args)), compiled(*map(clone, args)), rec


def same(a, b):
    """Bitwise-equal values (NaN in the same places, the sign of each zero too)."""
    a, b = (a if isinstance(a, (tuple, list)) else [a]), (b if isinstance(b, (tuple, list)) else [b])
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        torch.testing.assert_close(y, x, rtol=0, atol=0, equal_nan=True)
        if x.is_floating_point():  # the sign of NaN means nothing
            assert torch.equal(torch.signbit(x) & ~x.isnan(), torch.signbit(y) & ~y.isnan()), (x, y)


def test_clamp_with_nan_bounds_and_signed_zero():
    def f(x, lo, hi):
        return torch.clamp(x, min=lo), torch.clamp(x, max=hi), torch.clamp(x, lo, hi)

    x, lo, hi = t([1., 2., 3., NAN]), t([NAN, 0., 0., 0.]), t([NAN, 0., 5., 1.])
    eager, got, rec = run_both(f, x, lo, hi)
    same(eager, got)
    assert rec.last.fallbacks == []
    # a NaN Python bound: eager's CPU and CUDA kernels disagree, so torch runs it
    same(*run_both(lambda x: (x.clamp(min=NAN), x.clamp(max=NAN), x.clamp(NAN, 1.)), x)[:2])
    # NOTE: a tie of signed zeros (clamp(-0.0, min=0.0)) is not checked: eager itself answers it
    # differently on CUDA, on torch 2.13's vectorized CPU kernel (the bound) and torch 2.11's (x)


def test_contiguous_of_a_contiguous_view_of_an_input_aliases_it():
    def f(x):
        return x.permute(1, 0).contiguous()

    for fn in (f, pdyn.optimize(f, backend="triton")):
        x = torch.zeros(1, 3, device=DEVICE)
        y = fn(x)
        y.add_(1)
        assert y.data_ptr() == x.data_ptr() and bool((x == 1).all())
    # a view that is not contiguous is still copied, in a kernel
    eager, got, rec = run_both(lambda x: x.transpose(0, 1).contiguous() * 1, torch.randn(3, 4, device=DEVICE))
    same(eager, got)
    assert rec.last.fallbacks == []


def test_explicit_narrowing_casts_round():
    def f(x):
        return x.half().float(), x.bfloat16().float(), x.half() * 3, x.to(torch.bfloat16) + 1

    same(*run_both(f, t([1.1, 1e-8, 70000., -3.3]))[:2])


def test_arg_reductions_take_the_first_nan():
    def f(x):
        return x.argmax(), x.argmin(), x.max(0).indices, x.min(0).indices, x.max(0).values

    eager, got, rec = run_both(f, t([1., NAN, 3., -5., NAN]))
    same(eager, got)
    assert rec.last.fallbacks == []
    same(*run_both(lambda x: x.argmax(1), t([[1., NAN, 2.], [NAN, NAN, 0.], [4., 5., 6.]]))[:2])


def test_float_floor_division_of_inf_is_nan():
    def f(x, y):
        return x // y, torch.div(x, y, rounding_mode="floor")

    a, b = t([INF, -INF, 5., -5., 0., -0., 3., 7.5, -7.5]), t([2., 2., INF, -INF, -INF, INF, 0., 2., 2.])
    same(*run_both(f, a, b)[:2])


def test_addmm_with_beta_zero_ignores_the_bias():
    def f(b, x, w):
        return torch.addmm(b, x, w, beta=0), torch.addmm(b, x, w, alpha=0)

    x = torch.ones(2, 3, device=DEVICE)
    x[0, 0] = NAN
    same(*run_both(f, t([NAN, 1.]), x, torch.ones(3, 2, device=DEVICE))[:2])


def test_embedding_max_norm_writes_the_weight_after_an_earlier_read():
    def f(w, i):
        a = F.embedding(i, w)
        b = F.embedding(i, w, max_norm=1.0)
        return a, b

    w, i = torch.full((2, 2), 3.0, device=DEVICE), torch.tensor([0], device=DEVICE)
    w1, w2 = w.clone(), w.clone()
    eager, got = f(w1, i), pdyn.optimize(f, backend="triton")(w2, i)
    same(eager, got)
    same(w1, w2)


@pytest.mark.parametrize("norm", ["batch_norm", "instance_norm"])
def test_norm_running_stats_update_after_an_earlier_read(norm):
    def f(x, rm, rv):
        before = rm * 1
        if norm == "batch_norm":
            F.batch_norm(x, rm, rv, training=True)
        else:
            F.instance_norm(x, rm, rv, use_input_stats=True)
        return before

    x = torch.arange(16., device=DEVICE).view(2, 2, 4)
    stats = [(torch.zeros(2, device=DEVICE), torch.ones(2, device=DEVICE)) for _ in range(2)]
    eager, got = f(x, *stats[0]), pdyn.optimize(f, backend="triton")(x, *stats[1])
    same(eager, got)
    same(list(stats[0]), list(stats[1]))


def test_conditional_writes_follow_the_flag():
    from pdyn.ops.effects import conditional_writes, mutates

    graph = torch.fx.Graph()
    x, rm, rv, w, i = (graph.placeholder(n) for n in ("x", "rm", "rv", "w", "i"))
    train = graph.call_function(F.batch_norm, (x, rm, rv), {"training": True})
    evaluate = graph.call_function(F.batch_norm, (x, rm, rv, None, None, False))
    renorm = graph.call_function(F.embedding, (i, w), {"max_norm": 1.0})
    lookup = graph.call_function(F.embedding, (i, w))
    assert conditional_writes(train) == [rm, rv] and mutates(renorm)
    assert not mutates(evaluate) and not mutates(lookup)


def test_where_with_a_scalar_that_overflows_raises_as_eager():
    def f(x, s):
        return torch.where(x > 0, x, s)

    x = t([1, -2], torch.int32)
    with pytest.raises(RuntimeError, match="overflow"):
        f(x, 2**40)
    with pytest.raises(RuntimeError, match="overflow"):
        pdyn.optimize(f, backend="triton")(x, 2**40)


def test_pow_special_values():
    a = t([-INF, -INF, -1., -1., -0.0, -2., INF, 0., NAN, 1., -8., -INF, -0.0, 0.5])
    b = t([0.5, -3.5, INF, -INF, -1., 2., -INF, -INF, 0., NAN, 1 / 3, 3., 3., INF])
    same(*run_both(lambda a, b: a ** b, a, b)[:2])


def test_float_remainder_with_infinite_divisor_and_signed_zero():
    def f(a, b):
        return a % b, torch.remainder(a, b)

    a = t([-3.5, -3.5, 2., -3.5, 3.5, 0., -0., INF, 1., 7.5, -7.5])
    b = t([-INF, INF, -INF, -3.5, 3.5, -2., 2., 2., 0., -2., 2.])
    same(*run_both(f, a, b)[:2])


def exactly(fn, *calls):
    """Each call through pdyn+Triton gives eager's values bit for bit (or raises eager's error
    type); returns the recorder, whose graphs ran as kernels (no fallback) where that matters."""
    rec = Recorder()

    def same(out, ref):
        refs, outs = (ref, out) if isinstance(ref, tuple) else ((ref,), (out,))
        for r, o in zip(refs, outs):
            assert o.dtype == r.dtype and o.shape == r.shape, (o, r)
            torch.testing.assert_close(o, r, rtol=0, atol=0, equal_nan=True)

    each_call_like_eager(fn, pdyn.optimize(fn, backend=rec), calls, same)
    return rec


@pytest.mark.skipif(DEVICE != "cpu", reason="eager's CUDA kernels do not raise for a divisor of 0")
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "trunc", "floor"])
def test_integer_division_by_zero_raises_as_eager(op):
    fn = {"floor_divide": lambda x, y: (x // y) * 2, "remainder": lambda x, y: x % y + 1,
          "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
          "floor": lambda x, y: torch.div(x, y, rounding_mode="floor").sum(0)}[op]
    good = (t([7, -7, 5], torch.int64), t([2, 2, -3], torch.int64))
    bad = (t([7, -7, 5, 1], torch.int64), t([2, 0, -3, 1], torch.int64))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(*bad)
    compiled = pdyn.optimize(fn, backend="triton")
    torch.testing.assert_close(compiled(*good), fn(*good), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        compiled(*bad)
    # a broadcast divisor, int8, a division fused into a reduction: the same
    check_like_eager(lambda x, y: (x // y).sum(1), (torch.ones(3, 4, dtype=torch.int8), t([[1], [0], [2]], torch.int8)),
                     (torch.ones(2, 5, dtype=torch.int8), t([[1], [3]], torch.int8)))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_comparisons_round_the_other_operand(dtype):
    def f(x, y):
        return x == 0.1, x < 0.1, x > 1e-8, x == y, x < y, y >= x

    x = t([0.1, 1e-8, 0.3, -2.0], dtype)
    rec = exactly(f, (x, t(0.1)), (x[:2], t(1e-8, torch.float64)), (x[1:], t(0.3)))
    assert rec.last.fallbacks == []
    # a size compared with a float16 tensor rounds as a float16 too (2049 is 2048)
    exactly(lambda x, y: (x == y.shape[0], x < y.shape[0]), (t([2048., 2050.], dtype), torch.ones(2049, device=DEVICE)),
            (t([256., 258.], dtype), torch.ones(257, device=DEVICE)))


def test_add_alpha_scales_in_the_result_dtype():
    def f(a, b):
        return torch.add(a, b, alpha=3), torch.sub(a, b, alpha=2), a.add(b, alpha=-1)

    a, b = t([1.5, 2.5], torch.float16), t([100, -24], torch.int8)
    exactly(lambda a, b: f(a, b)[0].float(), (a, b), (a[:1], b[:1]))
    eager, got = f(a, b), pdyn.optimize(f, backend="triton")(a, b)
    for e, g in zip(eager, got):
        assert g.dtype == e.dtype
        torch.testing.assert_close(g, e, rtol=2e-3, atol=2e-3)
    exactly(lambda a, b: torch.add(a, b, alpha=200), (t([1, 2], torch.int32), t([100, -24], torch.int8)),
            (t([3], torch.int32), t([7], torch.int8)))


def test_masked_fill_with_a_zero_dim_value_that_overflows_raises():
    m = t([True, False], torch.bool)
    check_like_eager(lambda x, m, v: x.masked_fill(m, v), (t([1., 2.], torch.float16), m, t(70000.)),
                     (t([3.], torch.float16), m[:1], t(7.)))
    check_like_eager(lambda x, m, v: x.masked_fill(m, v), (t([1, 2], torch.int8), m, t(300)),
                     (t([3], torch.int8), m[:1], t(3)))
    # a value that always fits is still lowered
    rec = exactly(lambda x, m, v: x.masked_fill(m, v), (t([1., 2.]), m, t(-3., torch.float16)),
                  (t([3.]), m[:1], t(7., torch.float16)))
    assert rec.last.fallbacks == []


def test_float64_loss_mean_accumulates_in_float64():
    def f(x, tgt):
        return F.nll_loss(x, tgt), F.cross_entropy(x, tgt), F.nll_loss(x, tgt, ignore_index=0)

    x = t([[-1e300, 0.0], [0.0, -3e299], [1.0, 1.0 + 1e-12]], torch.float64)
    tgt = t([0, 1, 1], torch.int64)
    rec = exactly(f, (x, tgt), (x[:2], tgt[:2]))
    assert rec.last.fallbacks == []
