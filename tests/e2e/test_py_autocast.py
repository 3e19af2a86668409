"""torch.autocast and torch.inference_mode blocks captured inside the graph: enter/exit are graph
nodes, the ops inside run with eager's dtypes (both backends), state queries answer as eager."""

from __future__ import annotations

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, check_calls

BF16 = dict(device_type="cpu", dtype=torch.bfloat16)


def _compiled(fn, **kw):
    backend = CountingBackend()
    return pdyn.optimize(fn, backend=backend, **kw), backend


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _no_breaks(opt, compiles=1):
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0 and stats["compiles"] == compiles, stats


def test_autocast_block_is_graph_nodes_with_eager_dtypes_over_shapes():
    def f(x, w):
        h = x.sin()
        with torch.autocast(**BF16):
            y = h @ w
            z = torch.nn.functional.linear(h, w) + 1
            q = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
        return y, z, y.dtype, q, torch.is_autocast_enabled("cpu"), (y.float() * 2)

    opt = check_calls(f, *[(torch.randn(n, 4), torch.randn(4, 4)) for n in (3, 5, 7)], compiles=1)
    _no_breaks(opt)
    opt2, backend = _compiled(f, fullgraph=True)
    opt2(torch.randn(3, 4), torch.randn(4, 4))
    (gm,) = backend.graphs
    calls = _targets(gm)
    assert calls.count(torch.amp._enter_autocast) == 1 and calls.count(torch.amp._exit_autocast) == 1
    assert calls.index(torch.amp._enter_autocast) < calls.index(torch.amp._exit_autocast)


def test_autocast_nested_and_disabled_blocks():
    def f(x):
        with torch.autocast(**BF16):
            a = x @ x
            with torch.autocast(device_type="cpu", enabled=False):
                b = x @ x
                inner = torch.is_autocast_enabled("cpu")
            c = x @ x
        return a, b, c, inner, torch.is_autocast_enabled("cpu")

    opt = check_calls(f, (torch.randn(3, 3),), (torch.randn(4, 4),), (torch.randn(6, 6),), compiles=1)
    _no_breaks(opt)


def test_autocast_decorator_on_a_helper_and_on_the_function():
    @torch.autocast(**BF16)
    def helper(x):
        return x @ x, torch.is_autocast_enabled("cpu")

    def f(x):
        y, on = helper(x)
        return y, on, x @ x

    opt = check_calls(f, (torch.randn(3, 3),), (torch.randn(5, 5),), compiles=1)
    _no_breaks(opt)
    opt = check_calls(helper, (torch.randn(3, 3),), (torch.randn(5, 5),), compiles=1)
    _no_breaks(opt)


def test_autocast_fullgraph_captures_and_an_outer_autocast_is_another_entry():
    def f(x):
        with torch.autocast(**BF16):
            y = x @ x
        return y, torch.get_autocast_dtype("cpu")

    opt, backend = _compiled(f, fullgraph=True)
    x = torch.randn(4, 4)
    out = opt(x)
    assert out[0].dtype == torch.bfloat16 and len(backend.graphs) == 1
    with torch.autocast(device_type="cpu", dtype=torch.float16):  # the entry guard on autocast's state fails
        expected = f(x)
        actual = opt(x)
    assert actual[1] == expected[1] == torch.float16
    torch.testing.assert_close(actual[0], expected[0])
    assert pdyn.stats(opt)["compiles"] == 2
    assert not torch.is_autocast_enabled("cpu")


def test_autocast_state_is_restored_after_a_break_inside_the_block():
    def f(x):
        with torch.autocast(**BF16):
            y = x @ x
            pdyn.graph_break()
        return y

    check_calls(f, (torch.randn(3, 3),), (torch.randn(4, 4),))
    assert not torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16


def test_autocast_bad_dtype_warns_like_eager_and_runs_disabled():
    def f(x):
        with torch.autocast(device_type="cpu", dtype=torch.int32):
            return x @ x, torch.is_autocast_enabled("cpu")

    with pytest.warns(UserWarning):
        check_calls(f, (torch.randn(3, 3),), (torch.randn(4, 4),))


@pytest.mark.parametrize("backend", ["eager", "triton"])
def test_autocast_on_both_backends(backend):
    def f(x, w):
        h = x.relu()
        with torch.autocast(**BF16):
            y = torch.nn.functional.linear(h, w)
            z = y * 2 + 1
        return z, h * 3

    check_calls(f, *[(torch.randn(n, 8), torch.randn(8, 8)) for n in (2, 5)], backend=backend, compiles=1)


def test_inference_mode_block_and_decorator():
    def f(x):
        y = x * 2
        with torch.inference_mode():
            z = y + 1
            q = torch.is_inference_mode_enabled(), torch.is_grad_enabled()
        return z, q, torch.is_inference_mode_enabled(), y

    grad = lambda n: (torch.randn(n, requires_grad=True),)  # noqa: E731
    opt = check_calls(f, grad(3), grad(4), grad(6), compiles=1)
    _no_breaks(opt)
    out = opt(torch.randn(5, requires_grad=True))
    assert out[0].is_inference() and not out[3].is_inference() and out[3].requires_grad

    @torch.inference_mode()
    def g(x):
        return x * 2, torch.is_inference_mode_enabled()

    opt = check_calls(g, grad(3), grad(4), compiles=1)
    _no_breaks(opt)
    assert opt(torch.randn(2))[0].is_inference()

    def h(x):
        with torch.inference_mode(False):
            return x + 1, torch.is_inference_mode_enabled()

    check_calls(h, grad(3), grad(4), compiles=1)


def test_inference_mode_graph_nodes():
    def f(x):
        with torch.inference_mode():
            return x + 1

    opt, backend = _compiled(f, fullgraph=True)
    opt(torch.randn(3))
    calls = _targets(backend.graphs[0])
    assert calls[0] is torch.autograd.grad_mode._enter_inference_mode
    assert calls[-1] is torch.autograd.grad_mode._exit_inference_mode
    assert not torch.is_inference_mode_enabled()


def test_deprecated_cpu_amp_autocast_spelling():
    def f(x):
        with torch.cpu.amp.autocast(dtype=torch.bfloat16):
            return x @ x, torch.is_autocast_enabled("cpu")

    with pytest.warns(FutureWarning):
        opt = check_calls(f, (torch.randn(3, 3),), (torch.randn(4, 4),), compiles=1)
    _no_breaks(opt)
