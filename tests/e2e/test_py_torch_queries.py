"""Read-only torch queries are guarded constants (a changed answer recompiles); torch._assert and
torch._check decide their condition at trace time and build their message only on failure;
torch.Size arithmetic, finfo/iinfo and the standard library's iteration helpers over sizes."""

from __future__ import annotations

import collections
import functools
import itertools
import math
import operator

import pytest
import torch
from torch import nn

import pdyn
from tests.helpers import assert_same, check_calls


def test_queries_answer_without_a_break():
    def f(x):
        flags = (torch.compiler.is_exporting(), torch.jit.is_tracing(),
                 torch.jit.is_scripting(), torch.distributed.is_available(), torch.is_autocast_enabled(),
                 torch.cuda.is_available(), torch.is_grad_enabled(), torch.backends.mha.get_fastpath_enabled())
        return x + sum(flags) + (torch.get_default_dtype() is torch.float32)

    opt = check_calls(f, (torch.randn(3),), (torch.randn(5),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0
    guards = pdyn.explain(f)(torch.randn(3)).guards[0]
    assert "get_fastpath_enabled() == True" in guards and "autocast_state() == ((False, " in guards


def test_is_compiling_is_true_inside_compiled_code_as_under_torch_compile():
    """Libraries ask `torch.compiler.is_compiling()` to take the path a compiler can capture; pdyn
    answers as a compiler, with no guard (eager's False at the next call must not recompile)."""
    def f(x):
        if torch.compiler.is_compiling():
            return x + 1
        return x - 1

    opt = pdyn.optimize(f, backend="eager")
    for n in (3, 4, 5):
        x = torch.randn(n)
        assert torch.equal(opt(x), x + 1)
    assert pdyn.stats(opt)["compiles"] == 1 and pdyn.stats(opt)["graph_breaks"] == 0
    guard_code = [line.split("#")[0] for line in pdyn.explain(f)(torch.randn(3)).guards[0].splitlines()]
    assert not any("is_compiling" in line for line in guard_code)


def test_fastpath_toggle_recompiles_multihead_attention():
    m = nn.MultiheadAttention(8, 2, batch_first=True)

    def f(x):
        return m(x, x, x, need_weights=False)[0]

    opt = pdyn.optimize(f, backend="eager")
    x = torch.randn(2, 3, 8)
    try:
        for enabled in (True, False, True):
            torch.backends.mha.set_fastpath_enabled(enabled)
            assert_same(opt(x), f(x))
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
    stats = pdyn.stats(opt)
    assert stats["compiles"] == 2 and stats["graph_breaks"] == 0


def test_transformer_encoder_is_one_graph():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    # one shape: a changed size needs a shape rule for F.multi_head_attention_forward (not yet)
    opt = check_calls(enc, (torch.randn(2, 3, 8),), (torch.randn(2, 3, 8),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_default_dtype_change_recompiles():
    def f(x):
        return x.to(torch.get_default_dtype()) * 2

    opt = pdyn.optimize(f, backend="eager")
    x = torch.ones(2, dtype=torch.float16)
    try:
        assert opt(x).dtype == torch.float32
        torch.set_default_dtype(torch.float64)
        assert opt(x).dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert pdyn.stats(opt)["compiles"] == 2


def test_assert_with_an_fstring_of_a_symbolic_shape():
    def f(x):
        torch._assert(x.shape[0] > 1, f"batch too small: {x.shape} ({x.shape[0]!r:>4})")
        torch._check(x.shape[-1] == 3, lambda: f"last dim must be 3, got {x.shape}")
        return x * 2

    opt = check_calls(f, (torch.randn(2, 3),), (torch.randn(5, 3),), (torch.randn(9, 3),),
                      (torch.randn(1, 3),), (torch.randn(4, 4),))
    stats = pdyn.stats(opt)
    # one graph for the passing shapes; a failing check raises eager's exception, message and all
    assert stats["graph_breaks"] == 0 and stats["compiles"] == 1
    decisions = pdyn.explain(f)(torch.randn(4, 3)).shape_decisions  # only `== 3` pins a size:
    pins = [d for d in decisions if "specialized" in d]
    assert len(pins) == 1 and "size(1) specialized to 3 by a Python condition" in pins[0]
    assert [d for d in decisions if "needed" in d] == ["L['x'].size(0) >= 2 needed: s0 > 1 decided as True"]


def test_size_arithmetic():
    def f(x, heads):
        new = x.size()[:-1] + (heads, -1)
        s = x.size()
        a, b = s
        t = torch.Size([a, b])
        extra = s.numel() + len(s) + (3 in s) + (s == t) + (s[1:] * 2)[0] + math.prod(s) + ((2,) + s)[0]
        return x.view(new) * extra

    opt = check_calls(f, (torch.randn(4, 6), 2), (torch.randn(5, 6), 2), (torch.randn(7, 6), 2), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_finfo_iinfo_attributes():
    def f(x):
        return x.clamp(min=torch.finfo(x.dtype).min, max=torch.finfo(torch.float16).max) + torch.iinfo(torch.int8).bits

    check_calls(f, (torch.randn(3),), (torch.randn(3, dtype=torch.float64),), compiles=2)


def test_itertools_functools_and_collections():
    def f(x):
        out = x
        for a in itertools.chain([1], (2, 3), itertools.repeat(1, 2)):
            out = out + a
        for a, b in itertools.zip_longest([1, 2], [3], fillvalue=0):
            out = out + a * b
        for a in itertools.islice(range(10), 2, 8, 2):
            out = out + a
        for a, b in itertools.product([1, 2], [3]):
            out = out + a * b
        for a in itertools.accumulate(x.shape):
            out = out + a
        for a, b in itertools.pairwise([1, 2, 4]):
            out = out + (b - a)
        d = collections.OrderedDict([("k", out)])
        keys = dict.fromkeys(["a", "b"], 1)
        n = functools.reduce(operator.mul, x.shape, 1)
        total = functools.reduce(lambda p, q: p + q, [d["k"], x, x])
        order = sorted([3, 1, 2], key=lambda v: -v)
        return total * n + len(keys) + order[0] + (x.shape[0] in (x.shape[1], 5))

    # `x.shape[0] in (x.shape[1], 5)` guards x.shape[0] != x.shape[1]: (6, 6) recompiles, (7, 6) reuses
    opt = check_calls(f, (torch.randn(4, 6),), (torch.randn(6, 6),), (torch.randn(7, 6),), compiles=2)
    assert pdyn.stats(opt)["graph_breaks"] == 0


def test_islice_leaves_the_rest_of_the_iterator():
    def f(x):
        it = iter([1, 2, 3, 4])
        head = list(itertools.islice(it, 2))
        return x + sum(head) * 10 + sum(it)

    check_calls(f, (torch.randn(3),), compiles=1)


def test_reduce_of_an_empty_sequence_raises_as_eager():
    def f(x):
        return functools.reduce(operator.add, [])

    with pytest.raises(TypeError):
        pdyn.optimize(f, backend="eager")(torch.randn(2))


def test_the_dispatch_mode_stack_is_a_guarded_query():
    """nn.MultiheadAttention's fast-path check asks for the dispatch mode stack."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    def f(x):
        return x + len(_get_current_dispatch_mode_stack())

    opt = check_calls(f, (torch.randn(3),), (torch.randn(5),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0
