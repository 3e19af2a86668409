"""More values where the Triton backend must give what eager gives (test_triton_numerics_edge.py
has the first set): integer division by zero, comparisons in float16/bfloat16 against scalars,
add/sub's alpha in the result's dtype, masked_fill with a 0-dim value that overflows, and the mean
of a float64 loss. Each test compares with eager on tiny inputs, over calls of different sizes."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import pdyn

from tests.backends.util import DEVICE, Recorder, check_like_eager, each_call_like_eager


def t(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


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
