"""Sources render as Python expressions over L and G (pdyn/sources.py)."""

from __future__ import annotations

from pdyn.sources import AttrSource, DefaultSource, GlobalSource, ItemSource, LocalSource, ModuleSource


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
