"""with blocks and exceptions inside the graph: grad-mode managers, nullcontext, user managers,
@contextlib.contextmanager, @torch.no_grad() methods, try/except/finally, raise, import in a try."""

from __future__ import annotations

import contextlib

import pytest
import torch

import pdyn
from tests.helpers import CountingBackend, check, check_calls


def _grad(*shape):
    return torch.randn(*shape, requires_grad=True)


def _compiled(fn):
    backend = CountingBackend()
    return pdyn.optimize(fn, backend=backend), backend


def test_no_grad_block_matches_eager_requires_grad_over_shapes():
    def f(x, w):
        with torch.no_grad():
            y = x * w
        return y, x * w + y

    opt = check_calls(f, (_grad(3), _grad(3)), (_grad(5), _grad(5)), (_grad(7), _grad(7)), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0 and pdyn.stats(opt)["eager_fallbacks"] == 0
    assert torch.is_grad_enabled()


def test_grad_mode_changes_are_graph_nodes_around_the_ops():
    def f(x):
        with torch.no_grad():
            y = x * 2
        return y + x

    opt, backend = _compiled(f)
    opt(_grad(4))
    (gm,) = backend.graphs
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0] is torch._C._set_grad_enabled and calls[2] is torch._C._set_grad_enabled
    assert [n.args for n in gm.graph.nodes if n.target is torch._C._set_grad_enabled] == [(False,), (True,)]


def test_enable_grad_nested_in_no_grad():
    def f(x):
        with torch.no_grad():
            a = x * 2
            with torch.enable_grad():
                b = x * 3
            c = x * 4
        return a, b, c, torch.is_grad_enabled()

    check_calls(f, (_grad(2),), (_grad(6),), compiles=1)


def test_set_grad_enabled_block_and_plain_call():
    def block(x, mode):
        with torch.set_grad_enabled(mode):
            y = x * 2
        return y, torch.is_grad_enabled()

    check_calls(block, (_grad(3), False), (_grad(4), False), (_grad(3), True), compiles=2)

    def plain(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y, x * 3

    check(plain, _grad(3), graphs=1)
    assert torch.is_grad_enabled()


def test_no_grad_under_outer_no_grad_is_a_separate_entry():
    def f(x):
        with torch.enable_grad():
            y = x * 2
        return y

    opt, backend = _compiled(f)
    x = _grad(3)
    assert opt(x).requires_grad
    with torch.no_grad():
        assert opt(x).requires_grad
        assert torch.is_grad_enabled() is False
    assert len(backend.graphs) == 2  # grad mode at the call is guarded


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @torch.no_grad()
    def cos(self, x):
        return torch.cos(self.proj(x))

    def forward(self, x):
        return self.cos(x) + self.proj(x)


def test_no_grad_decorated_method_is_inlined():
    model = Rotary()
    opt, backend = _compiled(model)
    for n in (2, 3, 5):
        x = torch.randn(n, 4)
        expected, actual = model(x), opt(x)
        assert actual.requires_grad == expected.requires_grad
        torch.testing.assert_close(actual, expected)
    stats = pdyn.stats(opt)
    assert stats["graph_breaks"] == 0 and stats["eager_fallbacks"] == 0 and len(backend.graphs) == 1


def test_nullcontext_gives_its_value():
    def f(x):
        with contextlib.nullcontext(x * 2) as y:
            z = y + 1
        with contextlib.nullcontext():
            z = z * 3
        return z

    check_calls(f, (torch.randn(3),), (torch.randn(5),), compiles=1)


class Recorder:
    def __init__(self, log, suppress=()):
        self.log = log
        self.suppress = suppress

    def __enter__(self):
        self.log.append("enter")
        return len(self.log)

    def __exit__(self, kind, value, tb):
        self.log.append(("exit", kind is None, str(value) if value is not None else None))
        return kind is not None and issubclass(kind, self.suppress)


def test_user_context_manager_enter_exit_and_suppression():
    def f(x, log):
        with Recorder(log) as n:
            y = x + n
        with Recorder(log, KeyError):
            y = y * 2
            raise KeyError("dropped")
        log.append("after")
        return y

    check(f, torch.randn(3), [], graphs=1)


def test_user_context_manager_lets_an_exception_through_to_an_except():
    def f(x, log):
        try:
            with Recorder(log):
                raise ValueError("inner")
        except ValueError as e:
            log.append(str(e))
        return x + len(log)

    check(f, torch.randn(3), [], graphs=1)


@contextlib.contextmanager
def scoped(log, value):
    log.append("setup")
    try:
        yield value
    except ValueError:
        log.append("handled")
    finally:
        log.append("teardown")


def test_contextmanager_generator():
    def f(x, log):
        with scoped(log, 2) as v:
            y = x * v
        with scoped(log, 3):
            raise ValueError("thrown in")
        return y

    check(f, torch.randn(3), [], graphs=1)


def test_exception_in_a_no_grad_block_restores_grad_mode():
    def f(x):
        try:
            with torch.no_grad():
                y = x * 2
                raise RuntimeError("stop")
        except RuntimeError:
            pass
        return y, x * 3, torch.is_grad_enabled()

    check(f, _grad(3), graphs=1)
    assert torch.is_grad_enabled()


def test_raise_caught_by_except_and_finally_order():
    def f(x, log):
        try:
            log.append("try")
            if x.shape[0] > 3:
                raise ValueError(f"big {x.shape[0]}")
            y = x + 1
        except ValueError as e:
            log.append(str(e))
            y = x - 1
        else:
            log.append("else")
        finally:
            log.append("finally")
        return y

    check_calls(f, (torch.randn(2), []), (torch.randn(5), []), (torch.randn(6), []), (torch.randn(3), []))


def test_except_that_does_not_match_lets_eager_exception_out():
    def f(x):
        try:
            raise KeyError("missing")
        except ValueError:
            return x
        finally:
            x.add_(1)

    check_calls(f, (torch.randn(3),), (torch.randn(4),))


def test_reraise_and_raise_from_caught_outside():
    def inner(x):
        try:
            raise ValueError("first")
        except ValueError:
            raise

    def f(x, log):
        try:
            inner(x)
        except ValueError as e:
            log.append(str(e))
        try:
            try:
                raise KeyError("k")
            except KeyError as e:
                raise TypeError("second") from e
        except TypeError as e:
            log.append((str(e), type(e.__cause__).__name__))
        return x * 2

    check(f, torch.randn(3), [], graphs=1)


def test_uncaught_raise_has_eager_type_and_message():
    def f(x):
        y = x + 1
        if x.shape[0] == 3:
            raise IndexError("three is not allowed")
        return y

    check_calls(f, (torch.randn(2),), (torch.randn(3),), (torch.randn(4),))


def test_import_in_a_try_is_a_constant():
    def is_tracing():  # transformers' shape of it (is_compiling is True in compiled code: not eager's)
        try:
            import torch

            return torch.jit.is_tracing()
        except Exception:
            return False

    def f(x):
        if is_tracing():
            return x - 1
        from torch.nn import functional as F
        return F.relu(x) + 1

    check(f, torch.randn(3), graphs=1)


@pytest.mark.parametrize("shape", [(2,), (3, 4)])
def test_break_inside_with_restores_mode_and_resumes_in_the_block(shape):
    def f(x):
        with torch.no_grad():
            y = x * 2
            pdyn.graph_break()
        return y, x * 3

    pdyn.reset()  # the resume function's code is shared by both shapes
    check(f, _grad(*shape), graphs=2, fallbacks=0)  # the exit's grad mode is in the second graph
    assert torch.is_grad_enabled()
