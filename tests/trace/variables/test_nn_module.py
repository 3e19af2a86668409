"""NNModuleVariable and UserObjectVariable: nn.Module attribute lookup, calls that inline forward,
containers of modules, member methods, and plain objects from the inputs
(pdyn/variables/objects/nn_module.py)."""

import pytest
import torch

from pdyn.base.errors import Unsupported, UserException
from pdyn.guards.guards import DictKeysGuard, IdGuard, LenGuard, TypeGuard
from pdyn.guards.module_guards import NoHooksGuard
from pdyn.sources import AttrSource, ItemSource, LocalSource, ModuleMemberSource
from pdyn.trace.variables.objects.nn_module import NNModuleVariable, UserObjectVariable
from pdyn.trace.variables.values.symint import SymIntVariable
from tests.tracing import assert_graph, guards_of, trace

M = LocalSource("m")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.act = torch.nn.ReLU()
        self.steps = 5
        self.blocks = torch.nn.ModuleList([torch.nn.Identity(), torch.nn.Identity()])
        self.heads = torch.nn.ModuleDict({"a": torch.nn.Identity()})

    @property
    def doubled(self):
        return self.weight * 2

    def forward(self, x):
        return self.act(x * self.weight)


class CustomCall(torch.nn.Module):
    def __call__(self, x):
        return x


class Plain:
    def __init__(self):
        self.alpha = 0.5

    def apply(self, x):
        return x * self.alpha


class Guarded:
    def __getattribute__(self, name):
        return object.__getattribute__(self, name)


def test_parameter_and_buffer_are_graph_inputs_read_through_attr_sources():
    def f(m, x):
        return x * m.weight + m.scale

    tx = trace(f, Net(), torch.ones(3))
    assert_graph(tx, """
        x = placeholder L['x']
        m_weight = placeholder L['m'].weight
        mul = operator.mul(x, m_weight)
        m_scale = placeholder L['m'].scale
        add = operator.add(mul, m_scale)
    """)
    assert guards_of(tx, IdGuard) == [] and M in [g.source for g in guards_of(tx, TypeGuard)]   # its class


def test_submodule_is_a_module_tracker_guarded_by_its_class():
    def f(m):
        return m.act

    net = Net()
    tx = trace(f, net)
    assert isinstance(tx.result, NNModuleVariable) and tx.result.value is net.act
    assert ModuleMemberSource(M, "act", "_modules") in [g.source for g in guards_of(tx, TypeGuard)]


def test_int_attribute_is_a_symbolic_int():
    def f(m):
        return m.steps

    tx = trace(f, Net())
    assert isinstance(tx.result, SymIntVariable) and tx.result.source == AttrSource(M, "steps")


def test_calling_a_module_inlines_forward_and_guards_it_has_no_hooks():
    def f(m, x):
        return m(x)

    tx = trace(f, Net(), torch.ones(3))
    assert [g.source for g in guards_of(tx, NoHooksGuard)] == [M, ModuleMemberSource(M, "act", "_modules")]
    assert_graph(tx, """
        x = placeholder L['x']
        m_weight = placeholder L['m'].weight
        mul = operator.mul(x, m_weight)
        relu = F.relu(mul, inplace=False)
    """)


def test_property_runs_its_getter_symbolically():
    def f(m):
        return m.doubled

    tx = trace(f, Net())
    assert tx.result.node.name == "mul"


def test_module_with_a_backward_hook_is_unsupported_with_a_hint():
    net = Net()
    net.register_full_backward_hook(lambda *a: None)

    def f(m, x):
        return m(x)

    with pytest.raises(Unsupported) as error:
        trace(f, net, torch.ones(3))
    assert error.value.key == "module_hooks" and error.value.hint
    assert error.value.loc.lineno == f.__code__.co_firstlineno + 1


def test_module_that_overrides_call_in_python_is_inlined():
    def f(m, x):
        return m(x)

    tx = trace(f, CustomCall(), torch.ones(1))
    assert tx.result is tx.locals["x"]  # CustomCall.__call__ returns its argument: no op recorded


def test_missing_module_attribute_raises_attribute_error():
    def f(m):
        return m.nope

    with pytest.raises(UserException) as error:
        trace(f, Net())
    assert isinstance(error.value.exc, AttributeError) and "'Net'" in str(error.value.exc)


def test_storing_a_plain_attribute_is_a_side_effect():
    def f(m, x):
        m.cache = x + 1
        return m.cache

    net = Net()
    tx = trace(f, net, torch.ones(3))
    assert tx.result.node.name == "add" and not hasattr(net, "cache")
    assert tx.ctx.side_effects.attrs


def test_assigning_a_parameter_is_unsupported():
    def f(m, x):
        m.weight = x
        return x

    with pytest.raises(Unsupported) as error:
        trace(f, Net(), torch.ones(3))
    assert error.value.key == "module_setattr"


def test_module_list_iterates_and_indexes_with_a_len_guard():
    def f(m, x):
        for block in m.blocks:
            x = block(x)
        return m.blocks[-1](x), len(m.blocks)

    tx = trace(f, Net(), torch.ones(3))
    blocks = ModuleMemberSource(M, "blocks", "_modules")
    assert [(g.source, g.length) for g in guards_of(tx, LenGuard)] == [(blocks, 2)]
    assert tx.result.items[1].as_python_constant() == 2
    assert ModuleMemberSource(blocks, "1", "_modules") in [g.source for g in guards_of(tx, TypeGuard)]


def test_module_list_index_out_of_range_raises_index_error():
    def f(m):
        return m.blocks[5]

    with pytest.raises(UserException) as error:
        trace(f, Net())
    assert isinstance(error.value.exc, IndexError)


def test_module_dict_keys_items_and_membership():
    def f(m):
        return list(m.heads.keys()), "a" in m.heads, m.heads["a"]

    tx = trace(f, Net())
    keys, found, head = tx.result.items
    assert keys.as_python_constant() == ["a"] and found.as_python_constant() is True
    assert isinstance(head, NNModuleVariable)


def test_named_parameters_lists_members_and_guards_the_tables_keys():
    def f(m):
        return [name for name, _ in m.named_parameters()]

    tx = trace(f, Net())
    assert tx.result.as_python_constant() == ["weight"]
    assert AttrSource(M, "_parameters") in [g.source for g in guards_of(tx, DictKeysGuard)]


def test_len_of_a_plain_module_raises_type_error():
    def f(m):
        return len(m)

    with pytest.raises(UserException) as error:
        trace(f, Net())
    assert isinstance(error.value.exc, TypeError)


def test_user_object_reads_attributes_and_calls_methods():
    def f(p, x):
        return p.apply(x)

    tx = trace(f, Plain(), torch.ones(1))
    assert isinstance(tx.locals["p"], UserObjectVariable)
    assert [g.source for g in guards_of(tx, TypeGuard)] == [LocalSource("p")]
    assert_graph(tx, """
        x = placeholder L['x']
        mul = operator.mul(x, 0.5)
    """)


def test_user_object_store_is_seen_by_later_reads():
    def f(p):
        p.alpha = 2.5
        return p.alpha

    obj = Plain()
    tx = trace(f, obj)
    assert tx.result.as_python_constant() == 2.5 and obj.alpha == 0.5


def test_user_object_with_custom_getattribute_is_inlined():
    def f(g):
        return g.anything

    with pytest.raises(UserException) as error:
        trace(f, Guarded())
    assert isinstance(error.value.exc, AttributeError) and "'anything'" in str(error.value.exc)


def test_calling_a_non_callable_user_object_raises_type_error():
    def f(p):
        return p()

    with pytest.raises(UserException) as error:
        trace(f, Plain())
    assert isinstance(error.value.exc, TypeError)
