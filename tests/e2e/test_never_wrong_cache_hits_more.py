"""End-to-end: a cache entry is not reused after ONE thing the trace read changed between calls:
a torch flag read as an attribute (`torch.backends.cudnn.deterministic`,
`torch.backends.cuda.matmul.allow_tf32`), a torch._C getter reached through a Python wrapper
(`torch.get_float32_matmul_precision()`), and a torch._C setter called in the function (its effect
must happen on every call). Each call is compared with eager."""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest
import torch

import pdyn
from tests.helpers import assert_same

X = torch.arange(6.0).reshape(2, 3)


def outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
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
        expected, expected_exc = outcome(fn, args)
        actual, actual_exc = outcome(opt, args)
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
        over_changes(fn, [(None, (X,)), (setter(owner, name, not first), (X,)), (setter(owner, name, first), (X,))])


# 2. torch._C getters reached through torch's Python wrappers


def test_float32_matmul_precision_changed_between_calls_recompiles():
    def fn(x):
        return x * (2 if torch.get_float32_matmul_precision() == "highest" else 3)

    old = torch.get_float32_matmul_precision()
    try:
        over_changes(fn, [(None, (X,)), (lambda: torch.set_float32_matmul_precision("high"), (X,)),
                          (lambda: torch.set_float32_matmul_precision("highest"), (X,))])
    finally:
        torch.set_float32_matmul_precision(old)


def test_warn_always_changed_between_calls_recompiles():
    def fn(x):
        return x * (2 if torch.is_warn_always_enabled() else 3)

    old = torch.is_warn_always_enabled()
    try:
        over_changes(fn, [(None, (X,)), (lambda: torch.set_warn_always(not old), (X,)),
                          (lambda: torch.set_warn_always(old), (X,))])
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
            assert_same(opt(X), X + 1)
            assert torch.is_warn_always_enabled() is True
    finally:
        torch.set_warn_always(old)


# 4. `is` between equal constants: equal strings (or big ints) may be one object or two


NAME = "hello world!"   # not interned: "".join makes an equal, distinct string


def test_is_between_equal_strings_is_guarded_by_identity():
    def fn(x, s):
        return x * (2 if s is NAME else 3)

    other = "".join(["hello ", "world!"])
    over_changes(fn, [(None, (X, NAME)), (None, (X, other)), (None, (X, NAME))])


def test_is_between_two_equal_int_arguments_is_guarded_by_identity():
    def fn(x, a, b):
        return x * (2 if a is b else 3)

    big = 10 ** 20
    over_changes(fn, [(None, (X, big, big)), (None, (X, big, int(str(big)))), (None, (X, big, big))])


def test_a_size_compared_by_identity_with_none_stays_in_the_graph():
    # an int is never None: no guard and no break (the `is` of two ints is what breaks)
    def fn(x, n=None):
        return x * (2 if x.shape[0] is None or n is None else 3)

    opt = pdyn.optimize(fn, backend="eager")
    for rows in (3, 4, 5):
        torch.testing.assert_close(opt(torch.ones(rows)), fn(torch.ones(rows)))
    stats = pdyn.stats()
    assert (stats["compiles"], stats["graph_breaks"]) == (1, 0), stats
