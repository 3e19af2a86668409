"""End-to-end: a cache entry is not reused in a global torch state, or for a tensor, whose answers
differ from the ones the trace recorded. Each test compiles a function, changes ONE thing (the
default dtype, autocast, inference mode, a torch function or dispatch mode, a tensor's lazy
conjugate or negative bit; a torch flag read as an attribute, a torch._C getter reached through a
Python wrapper, a torch._C setter called in the function, whose effect must happen on every call)
and calls it again: value, dtype and Python answers are eager's."""

from __future__ import annotations

import contextlib
import types
from typing import Any, Callable, ContextManager, Iterator

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import pdyn
from tests.helpers import assert_same


def outcome(fn: Callable[..., Any], args: tuple[Any, ...], state: Callable[[], ContextManager[Any]]) -> Any:
    with state():
        try:
            return fn(*args), None
        except Exception as e:
            return None, (type(e), str(e))


def over_states(fn: Callable[..., Any], calls: list[tuple[tuple[Any, ...], Callable[[], ContextManager[Any]]]],
                compiles: int) -> None:
    """`fn` optimized, called with each (arguments, state) in turn, each compared with eager."""
    opt = pdyn.optimize(fn, backend="eager")
    for number, (args, state) in enumerate(calls):
        expected, expected_exc = outcome(fn, args, state)
        actual, actual_exc = outcome(opt, args, state)
        assert actual_exc == expected_exc, f"call {number}: pdyn raised {actual_exc}, eager raised {expected_exc}"
        assert_same(actual, expected, f"call {number}")
    stats = pdyn.stats(opt)
    assert (stats["compiles"], stats["eager_fallbacks"]) == (compiles, 0), stats


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype):
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def bf16_autocast() -> ContextManager[Any]:
    return torch.autocast("cpu", torch.bfloat16)


X = torch.arange(16.0).reshape(4, 4) / 7


# 1. global state an op's fake run reads: each trace's first op pins it


def test_default_dtype_changed_between_calls_recompiles():
    def fn(x):
        made = torch.zeros(3)
        scaled = torch.arange(4) * 1.5   # an int tensor times a Python float: the default dtype
        return x + 1, made, str(made.dtype), scaled, str(scaled.dtype)

    nothing = contextlib.nullcontext
    over_states(fn, [((X,), nothing), ((X,), lambda: default_dtype(torch.float64)), ((X,), nothing)], compiles=2)


def test_dtype_under_autocast_is_read_in_the_autocast_state_of_the_call():
    def fn(x):
        y = x @ x
        if y.dtype == torch.bfloat16:
            return y + 1, str(y.dtype)
        return y - 1, str(y.dtype)

    nothing = contextlib.nullcontext
    over_states(fn, [((X,), nothing), ((X,), bf16_autocast), ((X,), nothing), ((X,), bf16_autocast)], compiles=2)


def test_inference_mode_is_told_apart_from_no_grad():
    def fn(x):
        y = x * 2
        return y, y.is_inference(), torch.ones(2).is_inference()

    over_states(fn, [((X,), torch.no_grad), ((X,), torch.inference_mode)], compiles=2)


class ToDouble(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out.double() if func in (torch.Tensor.add, torch.Tensor.__add__, torch.add) else out


class DispatchToDouble(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out.double() if func is torch.ops.aten.add.Tensor else out


def _dtype_after_add(x):
    y = x + 1
    return y, str(y.dtype)


@pytest.mark.parametrize("mode,on", [(ToDouble(), (False, True, False)), (DispatchToDouble(), (True, False, True))],
                         ids=["torch-function", "dispatch"])
def test_a_mode_switched_on_or_off_on_a_later_call_recompiles(mode, on):
    states = [((X,), (lambda: mode) if active else contextlib.nullcontext) for active in on]
    over_states(_dtype_after_add, states, compiles=2)


@contextlib.contextmanager
def meta_default_device():
    torch.set_default_device("meta")   # a torch function mode: factories make meta tensors
    try:
        yield
    finally:
        torch.set_default_device(None)


def test_default_device_set_on_a_later_call_recompiles():
    def fn(x):
        made = torch.zeros(2)
        return x + 1, str(made.device)

    nothing = contextlib.nullcontext
    over_states(fn, [((X,), nothing), ((X,), meta_default_device), ((X,), nothing)], compiles=2)


# 2. the lazy conjugate and negative bits of an input tensor are part of its guard


C = torch.tensor([1 + 2j, -3 + 0.5j, 0.25 - 1j])


def test_conjugate_bit_of_an_input_recompiles():
    def fn(x):
        return x * 2, x.is_conj(), x.resolve_conj()

    nothing = contextlib.nullcontext
    over_states(fn, [((C,), nothing), ((C.conj(),), nothing), ((C,), nothing)], compiles=2)


def test_negative_bit_of_an_input_recompiles():
    def fn(x):
        return x + 1, x.is_neg()

    nothing = contextlib.nullcontext
    over_states(fn, [((C.imag,), nothing), ((C.conj().imag,), nothing), ((torch._neg_view(C),), nothing)],
                compiles=3)


# 3. a function the trace inlined: its code, defaults and closure cells can be rebound later


def _code_of(fn: Callable[..., Any]) -> Any:
    return fn.__code__


def test_code_of_a_global_helper_rebound_recompiles():
    namespace: dict[str, Any] = {}
    exec("def helper(t):\n    return t + 1\n\ndef fn(x):\n    return helper(x)\n", namespace)
    fn, helper = namespace["fn"], namespace["helper"]
    opt = pdyn.optimize(fn, backend="eager")
    assert_same(opt(X), fn(X))
    helper.__code__ = _code_of(lambda t: t * 100)
    assert_same(opt(X), fn(X))


class Scaler:
    def scale(self, t, k=2):
        return t * k


def test_method_code_and_defaults_rebound_on_the_class_recompile():
    def fn(x, s):
        return s.scale(x)

    s = Scaler()
    opt = pdyn.optimize(fn, backend="eager")
    original = (Scaler.scale.__code__, Scaler.scale.__defaults__)
    try:
        assert_same(opt(X, s), fn(X, s))
        Scaler.scale.__defaults__ = (5,)
        assert_same(opt(X, s), fn(X, s))
        Scaler.scale.__code__ = _code_of(lambda self, t, k=2: t - k)
        assert_same(opt(X, s), fn(X, s))
    finally:
        Scaler.scale.__code__, Scaler.scale.__defaults__ = original


def test_closure_cell_of_a_method_found_in_its_class_is_guarded():
    def make():
        factor = 2

        class Local:
            def scale(self, t):
                return t * factor

        def set_factor(value):
            nonlocal factor
            factor = value
        return Local(), set_factor

    def fn(x, s):
        return s.scale(x)

    s, set_factor = make()
    opt = pdyn.optimize(fn, backend="eager")
    assert_same(opt(X, s), fn(X, s))
    set_factor(9)
    assert_same(opt(X, s), fn(X, s))
    set_factor(-0.0)
    assert_same(opt(X, s), fn(X, s))


def _top(x):
    return x + 1


def test_the_optimized_functions_own_code_rebound_runs_the_new_code():
    def other(x):
        return x * 100

    def outer():
        k = 2

        def g(x):
            return x * k

        def h(x):
            return x - k
        return g, h

    top = types.FunctionType(_top.__code__, globals(), "top")
    g, h = outer()
    x = torch.arange(3.0)
    for fn, new in ((top, other), (g, h)):
        f = pdyn.optimize(fn, backend="eager")
        torch.testing.assert_close(f(x), fn(x))
        fn.__code__ = new.__code__
        torch.testing.assert_close(f(x), fn(x))  # the new code, as eager runs it
        assert f._pdyn_frame.cache.counters["frames_without_graph"] == 1


SMALL = torch.arange(6.0).reshape(2, 3)


def call_outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        return fn(*args), None
    except Exception as e:
        return None, (type(e), str(e))


def over_changes(fn: Callable[..., Any], steps: list[tuple[Callable[[], None] | None, tuple[Any, ...]]]) -> Any:
    """`fn` optimized; before each call one change to the world, then eager and pdyn compared."""
    opt = pdyn.optimize(fn, backend="eager")
    for number, (change, args) in enumerate(steps):
        if change is not None:
            change()
        expected, expected_exc = call_outcome(fn, args)
        actual, actual_exc = call_outcome(opt, args)
        assert actual_exc == expected_exc, f"call {number}: pdyn raised {actual_exc}, eager raised {expected_exc}"
        assert_same(actual, expected, f"call {number}")
    return opt


@contextlib.contextmanager
def restored(obj: Any, name: str) -> Iterator[None]:
    old = getattr(obj, name)
    try:
        yield
    finally:
        setattr(obj, name, old)


def setter(obj: Any, name: str, value: Any) -> Callable[[], None]:
    return lambda: setattr(obj, name, value)


# 1. flags of torch's namespaces, read as attributes


@pytest.mark.parametrize("owner, name", [
    (torch.backends.cudnn, "deterministic"),       # a property of torch.backends.cudnn's module class
    (torch.backends.cudnn, "enabled"),
    (torch.backends.cuda.matmul, "allow_tf32"),    # an object's __getattr__ over torch._C
    (torch.backends.mkldnn, "enabled"),
])
def test_torch_backend_flag_changed_between_calls_recompiles(owner, name):
    def fn(x):
        return x * (2 if getattr_flag() else 3)

    def getattr_flag():
        if owner is torch.backends.cuda.matmul:
            return torch.backends.cuda.matmul.allow_tf32
        if owner is torch.backends.mkldnn:
            return torch.backends.mkldnn.enabled
        return torch.backends.cudnn.deterministic if name == "deterministic" else torch.backends.cudnn.enabled

    first = getattr(owner, name)
    with restored(owner, name):
        over_changes(fn, [(None, (SMALL,)), (setter(owner, name, not first), (SMALL,)), (setter(owner, name, first), (SMALL,))])


# 2. torch._C getters reached through torch's Python wrappers


def test_float32_matmul_precision_changed_between_calls_recompiles():
    def fn(x):
        return x * (2 if torch.get_float32_matmul_precision() == "highest" else 3)

    old = torch.get_float32_matmul_precision()
    try:
        over_changes(fn, [(None, (SMALL,)), (lambda: torch.set_float32_matmul_precision("high"), (SMALL,)),
                          (lambda: torch.set_float32_matmul_precision("highest"), (SMALL,))])
    finally:
        torch.set_float32_matmul_precision(old)


def test_warn_always_changed_between_calls_recompiles():
    def fn(x):
        return x * (2 if torch.is_warn_always_enabled() else 3)

    old = torch.is_warn_always_enabled()
    try:
        over_changes(fn, [(None, (SMALL,)), (lambda: torch.set_warn_always(not old), (SMALL,)),
                          (lambda: torch.set_warn_always(old), (SMALL,))])
    finally:
        torch.set_warn_always(old)


# 3. a torch._C setter called in the function: its effect is eager's on every call


def test_torch_setter_in_the_function_takes_effect_on_every_call():
    def fn(x):
        torch._C._set_warnAlways(True)   # no node records it: run for real at each call
        return x + 1

    old = torch.is_warn_always_enabled()
    opt = pdyn.optimize(fn, backend="eager")
    try:
        for _ in range(3):
            torch.set_warn_always(False)
            assert_same(opt(SMALL), SMALL + 1)
            assert torch.is_warn_always_enabled() is True
    finally:
        torch.set_warn_always(old)


# 4. `is` between equal constants: equal strings (or big ints) may be one object or two


NAME = "hello world!"   # not interned: "".join makes an equal, distinct string


def test_is_between_equal_strings_is_guarded_by_identity():
    def fn(x, s):
        return x * (2 if s is NAME else 3)

    other = "".join(["hello ", "world!"])
    over_changes(fn, [(None, (SMALL, NAME)), (None, (SMALL, other)), (None, (SMALL, NAME))])


def test_is_between_two_equal_int_arguments_is_guarded_by_identity():
    def fn(x, a, b):
        return x * (2 if a is b else 3)

    big = 10 ** 20
    over_changes(fn, [(None, (SMALL, big, big)), (None, (SMALL, big, int(str(big)))), (None, (SMALL, big, big))])


def test_a_size_compared_by_identity_with_none_stays_in_the_graph():
    # an int is never None: no guard and no break (the `is` of two ints is what breaks)
    def fn(x, n=None):
        return x * (2 if x.shape[0] is None or n is None else 3)

    opt = pdyn.optimize(fn, backend="eager")
    for rows in (3, 4, 5):
        torch.testing.assert_close(opt(torch.ones(rows)), fn(torch.ones(rows)))
    stats = pdyn.stats()
    assert (stats["compiles"], stats["graph_breaks"]) == (1, 0), stats
