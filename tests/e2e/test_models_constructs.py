"""Python constructs met in model code outside the suite (tests/models/sweep.py), each in minimal
form: dicts keyed by classes, functions and typing's special forms (huggingface_hub's validators
table, read at each config attribute write in BART-like models), the truth of a function, and a
key compared by identity."""

from __future__ import annotations

import collections.abc
import sys
import types
import typing

import pytest
import torch

import pdyn
from tests.helpers import check, check_calls


# huggingface_hub's type_validator, reduced: a walrus on a table keyed by types, in a module of its
# own (a library's globals are read through sys.modules, not as the traced frame's globals).
VALIDATOR_SOURCE = """
import collections.abc
import sys
import types
import typing


def _check_list(x, args):
    return x + len(args)


def _check_tuple(x, args):
    return x * 2


def _check_union(x, args):
    return x - 1


VALIDATORS = {typing.Union: _check_union, list: _check_list, tuple: _check_tuple,
              collections.abc.Sequence: _check_tuple}


def validate(x, expected_type):
    if validator := VALIDATORS.get(typing.get_origin(expected_type)):
        return validator(x, typing.get_args(expected_type))
    if isinstance(expected_type, type):
        return x + 10
    return x
"""


def _library() -> types.ModuleType:
    module = types.ModuleType("pdyn_test_validators")
    exec(compile(VALIDATOR_SOURCE, "pdyn_test_validators.py", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    return module


LIB = _library()
validate, VALIDATORS, _check_list, _check_union = LIB.validate, LIB.VALIDATORS, LIB._check_list, LIB._check_union


def check_whole(fn, *args):
    """`check`, and no graph break: one graph for the whole function."""
    optimized = check(fn, *args)
    assert pdyn.stats(optimized)["graph_breaks"] == 0, pdyn.stats(optimized)
    return optimized


@pytest.mark.parametrize("expected_type", [typing.Optional[int], list[int], tuple[int, str], int, "forward"],
                         ids=["union", "list", "tuple", "plain_class", "forward_ref"])
def test_a_global_dict_keyed_by_types_is_one_graph(expected_type):
    check_whole(lambda x: validate(x.sin(), expected_type), torch.randn(3, 4))


def test_a_global_dict_keyed_by_types_is_guarded_by_its_keys():
    fn = lambda x: validate(x.sin(), list[int])  # noqa: E731
    x = torch.randn(3)
    optimized = pdyn.optimize(fn, backend="eager")
    torch.testing.assert_close(optimized(x), fn(x))
    VALIDATORS[list] = _check_union
    try:
        torch.testing.assert_close(optimized(x), fn(x))   # another function: its identity guard fails
        del VALIDATORS[list]
        torch.testing.assert_close(optimized(x), fn(x))   # a key went: the keys guard fails
        assert pdyn.stats(optimized)["compiles"] == 3
    finally:
        VALIDATORS[list] = _check_list


def test_an_argument_dict_keyed_by_classes_and_functions():
    def f(x, table):
        total = x
        for key, value in table.items():
            if isinstance(key, type):
                total = total + value * (key is float)
            else:
                total = total + key(value)
        return total + table[float]

    table = {int: 1.0, float: 2.0, abs: -3.0}
    check_calls(f, (torch.ones(2), table), (torch.ones(3), table), (torch.ones(2), {float: 5.0, int: 1.0}),
                compiles=2)


def test_a_function_is_true():
    def f(x, table):
        if fn := table.get("sin"):
            return fn(x)
        return x

    check_whole(f, torch.randn(3), {"sin": torch.sin})
    check_whole(lambda x: x + 1 if _check_list else x, torch.randn(3))


class Sentinel:
    """A marker object: a copy of a structure holding it holds the same marker."""

    def __deepcopy__(self, memo):
        return self


FIRST, SECOND = Sentinel(), Sentinel()


def test_a_key_compared_by_identity_is_looked_up():
    def f(x, table):
        return x * table[FIRST] + table.get(SECOND, 0.5)

    check_calls(f, (torch.ones(2), {FIRST: 2.0}), (torch.ones(2), {FIRST: 3.0, SECOND: 1.0}),
                (torch.ones(2), {FIRST: 3.0, SECOND: 1.0}), compiles=2)


def test_iterating_over_object_keys_is_a_clean_break():
    """An object key is pinned by identity alone: its attributes are not known, so iterating over the
    keys breaks the graph (and stays correct) rather than folding what they hold."""
    def f(x, table):
        x = x.sin()
        for key in table:
            x = x + getattr(key, "weight", 0)
        return x.cos()

    FIRST.weight = 1.0
    try:
        optimized = check(f, torch.randn(3), {FIRST: None})
        assert pdyn.stats(optimized)["graph_breaks"] == 1
        FIRST.weight = 2.0
        x = torch.randn(3)
        torch.testing.assert_close(optimized(x, {FIRST: None}), f(x, {FIRST: None}))
    finally:
        del FIRST.weight


def test_an_object_without_bool_or_len_is_true():
    class Plain:
        def __init__(self, scale):
            self.scale = scale

        def __eq__(self, other):  # the check compares the argument after the call with eager's
            return type(other) is Plain and other.scale == self.scale

    def f(x, obj):
        return x * obj.scale if obj else x

    check_whole(f, torch.randn(3), Plain(2.0))


def test_a_key_read_from_an_argument_is_pinned_by_identity():
    """`table.get(tp.__origin__)` with tp an argument: the origin is guarded by identity, so another
    alias with another origin recompiles and picks its own validator."""
    def f(x, tp):
        return validate(x.sin(), tp)

    check_calls(f, (torch.ones(2), typing.Optional[int]), (torch.ones(2), list[int]),
                (torch.ones(2), typing.Union[int, str]), (torch.ones(2), tuple[int]), compiles=4)


def test_a_list_of_ints_in_an_index_keeps_the_other_dims_dynamic():
    """Falcon's `fused_qkv[..., [-2], :]`: a list of ints indexes as a 1-d tensor; the batch stays
    symbolic (one compile over four batch sizes) and each value is guarded in range of its dim."""
    def f(x):
        return x[..., :-2, :], x[..., [-2], :], x[..., [-1, 0], :], x[[0, -1]], x[:, [1], [2, 0]]

    check_calls(f, *[(torch.randn(b, 5, 6, 4),) for b in (2, 3, 4, 5)], compiles=1)


def test_a_list_index_out_of_range_raises_as_eager():
    check_calls(lambda x: x[:, [7]] * 2, (torch.randn(2, 8),), (torch.randn(3, 9),), (torch.randn(2, 7),),
                compiles=2)


@torch.jit.script
def _scripted_scale(x: torch.Tensor, n: int) -> torch.Tensor:
    return x * n + 1


def test_a_torch_jit_script_function_is_traced_as_its_python_function():
    """DeBERTa-v2 in transformers 4.x/5.17 calls @torch.jit.script helpers: the Python function torch
    keeps for frontends (`_torchdynamo_inline`) is inlined, with the sizes symbolic."""
    def f(x):
        return _scripted_scale(x.sin(), x.size(1))

    optimized = check_calls(f, (torch.randn(2, 3),), (torch.randn(4, 5),), (torch.randn(3, 6),), compiles=1)
    assert pdyn.stats(optimized)["graph_breaks"] == 0
