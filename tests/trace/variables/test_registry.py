"""The one table of call rules: a second rule for a callable raises where it is declared, every rule
module is loaded with the builder, and the rule that wins for a key is the one declared for it."""

from __future__ import annotations

import inspect

import pytest
import torch

import pdyn
from pdyn.trace.variables import registry
from pdyn.trace.variables.registry import DuplicateRule, rule, rule_given, rule_of
from tests.helpers import check_calls


def test_a_second_rule_for_a_builtin_raises_naming_both():
    with pytest.raises(DuplicateRule, match=r"second rule for 'len': .*test_registry.*the first is "
                                            r"pdyn\.trace\.variables\.builtins\._len"):
        rule(len)(lambda tx, args, kwargs: args[0])
    assert rule_of(len).__module__ == "pdyn.trace.variables.builtins"


def test_a_rule_given_its_callable_is_told_which_was_called():
    first, second = object(), object()
    try:
        rule_given(first, second, first)(lambda tx, fn, args, kwargs: fn)
        assert rule_of(first)(None, [], {}) is first and rule_of(second)(None, [], {}) is second
        with pytest.raises(DuplicateRule):
            rule_given(second)(lambda tx, fn, args, kwargs: fn)
    finally:
        for key in (first, second):
            registry.RULES.pop(key, None)
            registry._DECLARED_BY.pop(key, None)


def test_every_rule_module_is_loaded_with_the_builder():
    """Rules declared in modules nothing imports by name (weak references, dict's methods, the
    operator getters) are in the table once pdyn is imported."""
    import operator
    import weakref

    assert rule_of(weakref.ReferenceType.__call__) is not None and rule_of(list.__len__) is not None
    assert rule_of(operator.itemgetter) is not None and rule_of([].append) is None


def test_inspect_signature_is_folded_with_keyword_arguments():
    """inspect.signature had two rules, the second overwriting the first silently; the one kept
    (stdlib/signatures.py) folds a call with keywords, which the dropped one broke the graph on."""
    def scale(x, factor=2):
        return x * factor

    def f(x):
        params = inspect.signature(scale, follow_wrapped=False).parameters
        return x * len(params), "factor" in params

    assert rule_of(inspect.signature).__module__ == "pdyn.trace.variables.stdlib.signatures"
    opt = check_calls(f, (torch.randn(3),), (torch.randn(5),), compiles=1)
    assert pdyn.stats(opt)["graph_breaks"] == 0
