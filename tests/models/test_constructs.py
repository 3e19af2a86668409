"""Constructs met in the suite's models, reduced to a few lines, where pdyn once raised what eager
does not (a resume function that lost the frame's `__class__` cell)."""

import torch

from tests.helpers import check_calls


class Interface:
    def get(self, key, default=None):
        return default


class Registry(Interface):
    """As transformers' AttentionInterface.get_interface: a break, then a zero-argument super()."""

    def get(self, key, default=None):
        print("a graph break before super()")
        return super().get(key, default)


REGISTRY = Registry()


def lookup(x):
    return x + REGISTRY.get("sdpa", 1)


def test_zero_argument_super_after_a_graph_break_in_a_method():
    check_calls(lookup, (torch.ones(3),))
