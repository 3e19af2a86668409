"""Test helpers: run a program eagerly and under pdyn, compare everything, count graphs and fallbacks."""

from __future__ import annotations

import collections
import copy
from typing import Any, Callable

import numpy as np
import torch

import pdyn


class CountingBackend:
    """An eager backend that remembers each GraphModule it was given."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        return gm.forward


def assert_same(actual: Any, expected: Any, path: str = "result") -> None:
    """Equal values, dtypes, shapes, devices and Python types, recursively."""
    assert type(actual) is type(expected), f"{path}: type {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
        assert actual.device == expected.device, f"{path}: device {actual.device} != {expected.device}"
        assert actual.requires_grad == expected.requires_grad, f"{path}: requires_grad differs"
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{path}: {m}")
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype, f"{path}: dtype {actual.dtype} != {expected.dtype}"
        if expected.dtype.kind in "biufc":
            np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(actual, expected, err_msg=path)
        assert actual.shape == expected.shape, f"{path}: shape {actual.shape} != {expected.shape}"
    elif isinstance(expected, np.generic):  # a NumPy scalar: torch sums in another order than NumPy
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=path)
    elif isinstance(expected, (list, tuple, collections.deque)):
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(actual[k], expected[k], f"{path}[{k!r}]")
    elif isinstance(expected, float) and expected != expected:
        assert actual != actual, f"{path}: {actual} is not nan"
    elif isinstance(expected, float):
        assert repr(actual) == repr(expected), f"{path}: {actual!r} != {expected!r}"  # -0.0, the last bit
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def _modules_in(value: Any, found: dict[int, Any]) -> dict[int, Any]:
    if isinstance(value, torch.nn.Module):
        found[id(value)] = value
    elif isinstance(value, (list, tuple)):
        for v in value:
            _modules_in(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _modules_in(v, found)
    return found


def _copy(args: Any) -> Any:
    """A deep copy in which nn.Modules stay the same objects (a call may change their state)."""
    return copy.deepcopy(args, memo=_modules_in(args, {}))


def check(fn: Callable[..., Any], *args: Any, graphs: int = 1, fallbacks: int = 0, calls: int = 2,
          **kwargs: Any) -> Any:
    """Run `fn` eagerly and optimized (twice: a compile, then a cache hit) on copies of the inputs.

    Compares results, raised exceptions (type and message) and the inputs after the call (side
    effects); asserts the number of graphs compiled and frames that fell back to eager.
    Returns the optimized function for further checks.
    """
    backend = CountingBackend()
    eager_fn = copy.deepcopy(fn) if isinstance(fn, torch.nn.Module) else fn  # optimize() patches a module
    optimized = pdyn.optimize(fn, backend=backend)
    for call in range(calls):
        eager_args, eager_kwargs = _copy((args, kwargs))
        opt_args, opt_kwargs = _copy((args, kwargs))
        torch.manual_seed(call)
        try:
            expected, expected_exc = eager_fn(*eager_args, **eager_kwargs), None
        except Exception as e:
            expected, expected_exc = None, e
        torch.manual_seed(call)
        try:
            actual, actual_exc = optimized(*opt_args, **opt_kwargs), None
        except Exception as e:
            actual, actual_exc = None, e
        if expected_exc is not None:
            assert actual_exc is not None, f"eager raised {expected_exc!r}, pdyn returned {actual!r}"
            assert type(actual_exc) is type(expected_exc) and str(actual_exc) == str(expected_exc), \
                f"pdyn raised {actual_exc!r}, eager raised {expected_exc!r}"
        else:
            assert actual_exc is None, f"pdyn raised {actual_exc!r}, eager returned {expected!r}"
            assert_same(actual, expected)
        assert_same((opt_args, opt_kwargs), (eager_args, eager_kwargs), "inputs after the call")
    stats = pdyn.stats(optimized)
    assert len(backend.graphs) == graphs, f"{len(backend.graphs)} graphs compiled, expected {graphs}: {stats}"
    assert stats["eager_fallbacks"] == fallbacks, f"{stats['eager_fallbacks']} eager fallbacks, expected {fallbacks}"
    return optimized


def check_calls(fn: Callable[..., Any], *calls: tuple[Any, ...], compiles: int | None = None,
                backend: Any = "eager") -> Any:
    """One optimized `fn` over a sequence of calls (shapes and values that cross its guards), each
    compared with eager: result, exception (type and message), the arguments after the call.
    Asserts the number of compiles when given. Returns the optimized function."""
    optimized = pdyn.optimize(fn, backend=backend)
    for number, args in enumerate(calls):
        eager_args, opt_args = _copy(args), _copy(args)
        try:
            expected, expected_exc = fn(*eager_args), None
        except Exception as e:
            expected, expected_exc = None, e
        try:
            actual, actual_exc = optimized(*opt_args), None
        except Exception as e:
            actual, actual_exc = None, e
        where = f"call {number}"
        if expected_exc is not None:
            assert type(actual_exc) is type(expected_exc) and str(actual_exc) == str(expected_exc), \
                f"{where}: pdyn {'raised ' + repr(actual_exc) if actual_exc else 'returned ' + repr(actual)}, " \
                f"eager raised {expected_exc!r}"
        else:
            assert actual_exc is None, f"{where}: pdyn raised {actual_exc!r}, eager returned {expected!r}"
            assert_same(actual, expected, f"{where}: result")
        assert_same(opt_args, eager_args, f"{where}: arguments after the call")
    if compiles is not None:
        assert pdyn.stats(optimized)["compiles"] == compiles, pdyn.stats(optimized)
    return optimized
