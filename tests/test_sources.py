"""Sources render as Python expressions over L and G (pdyn/sources.py)."""

from __future__ import annotations

import sys
import types

import torch

from pdyn.sources import (AttrSource, DefaultSource, GlobalSource, ItemSource, LocalSource, ModuleMemberSource,
                          ModuleSource, SizeSource)


def test_local_and_global_render_as_scope_lookups():
    assert LocalSource("x").expr() == "L['x']"
    assert GlobalSource("w").expr() == "G['w']"


def test_attribute_chain_renders_with_dots():
    assert AttrSource(AttrSource(LocalSource("self"), "linear"), "weight").expr() == "L['self'].linear.weight"


def test_attribute_that_is_not_an_identifier_uses_getattr():
    assert AttrSource(LocalSource("seq"), "0").expr() == "getattr(L['seq'], '0')"


def test_items_render_with_repr_of_the_index():
    assert ItemSource(LocalSource("xs"), 0).expr() == "L['xs'][0]"
    assert ItemSource(LocalSource("d"), "a'b").expr() == "L['d'][\"a'b\"]"


def test_defaults_render_positional_and_keyword():
    f = LocalSource("f")
    assert DefaultSource(f, 1).expr() == "L['f'].__defaults__[1]"
    assert DefaultSource(f, "k").expr() == "L['f'].__kwdefaults__['k']"


def test_module_source_reads_sys_modules():
    assert AttrSource(ModuleSource("torch.nn.functional"), "relu").expr() == "_modules['torch.nn.functional'].relu"


def test_quotes_in_names_stay_valid_python():
    src = ItemSource(LocalSource("it's"), 'say "hi"')
    assert eval(src.expr(), {"L": {"it's": {'say "hi"': 5}}}) == 5


def test_str_is_expr_and_root_is_the_outermost_source():
    src = ItemSource(AttrSource(LocalSource("m"), "layers"), 2)
    assert str(src) == "L['m'].layers[2]"
    assert src.root() == LocalSource("m")


def test_sources_are_values_equal_and_hashable():
    a = AttrSource(LocalSource("m"), "w")
    assert a == AttrSource(LocalSource("m"), "w")
    assert len({a, AttrSource(LocalSource("m"), "w"), AttrSource(GlobalSource("m"), "w")}) == 2


def test_size_source_renders_a_dim_or_the_int_itself():
    assert SizeSource(LocalSource("x"), 1).expr() == "L['x'].size(1)"
    assert SizeSource(AttrSource(LocalSource("self"), "n"), None).expr() == "L['self'].n"
    assert SizeSource(LocalSource("x"), 0).root() == LocalSource("x")


def test_read_gives_what_the_rendered_expression_evaluates_to():
    def f(a, *, b=4):
        return a

    holder = types.SimpleNamespace(weights={float("inf"): torch.ones(2, 5)}, f=f)
    L, G = {"h": holder}, {"g": [10, 20]}
    sources = [
        SizeSource(ItemSource(AttrSource(LocalSource("h"), "weights"), float("inf")), 1),
        ItemSource(GlobalSource("g"), 1),
        DefaultSource(AttrSource(LocalSource("h"), "f"), "b"),
        AttrSource(ModuleSource("sys"), "maxsize"),
    ]
    assert [s.read(L, G) for s in sources] == [5, 20, 4, sys.maxsize]
    module = torch.nn.Linear(2, 3)
    assert ModuleMemberSource(LocalSource("m"), "weight", "_parameters").read({"m": module}, {}) is module.weight
