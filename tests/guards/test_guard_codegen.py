"""GuardSet -> generated check(L, G): golden source text, sentences, escaping, constants
(pdyn/guards/codegen.py). Golden text is inline; `PDYN_UPDATE_GOLDEN=1 pytest ...` rewrites it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

import pdyn
from pdyn.base.errors import SourceLoc
from pdyn.guards.codegen import build
from pdyn.guards.guards import AliasGuard, DictKeysGuard, EqualsGuard, GradModeGuard, GuardSet, IdGuard
from pdyn.guards.tensor_guards import TensorGuard
from pdyn.sources import AttrSource, ItemSource, LocalSource

HERE = Path(__file__)
# The user line that the guards made by an instruction (not on entry) point at:
USER_LINE = "y = x * opts['scale']"
LINE = next(n for n, text in enumerate(HERE.read_text().splitlines(), 1) if text.startswith("USER_LINE ="))


def assert_golden(actual: str, expected: str) -> None:
    """`actual` equals the dedented `expected`, or with PDYN_UPDATE_GOLDEN=1 becomes it in this file."""
    expected = "".join(line[4:] + "\n" for line in expected.split("\n")[1:-1])  # drop the quote lines
    if actual == expected:
        return
    if os.environ.get("PDYN_UPDATE_GOLDEN") == "1":
        text = HERE.read_text()
        indented = "".join(f"    {line}\n" if line else "\n" for line in _escaped(actual).splitlines())
        old = "".join(f"    {line}\n" if line else "\n" for line in _escaped(expected).splitlines())
        assert text.count(old) == 1, "golden text not found once in the test file"
        HERE.write_text(text.replace(old, indented))
        return
    assert actual == expected, f"generated text differs (PDYN_UPDATE_GOLDEN=1 updates it):\n{actual}"


def _escaped(text: str) -> str:
    """`text` as the body of a \"\"\" string literal."""
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def small_guards() -> GuardSet:
    x, opts = LocalSource("x"), LocalSource("opts")
    entry = SourceLoc(str(HERE), 18, "forward")          # read at the frame's entry: no column
    at = SourceLoc(str(HERE), LINE, "forward", 4, 10)    # read by an instruction on LINE
    guards = GuardSet()
    guards.add(GradModeGuard(None, enabled=True))
    guards.add(TensorGuard(x, torch.Tensor, torch.float32, torch.device("cpu"), False, (None, 4), (4, 1),
                           loc=entry))
    guards.add(DictKeysGuard(opts, dict, ("scale", "it's \"quoted\""), loc=entry))
    guards.add(EqualsGuard(ItemSource(opts, "scale"), 2.5, loc=at))
    guards.add(EqualsGuard(ItemSource(opts, "it's \"quoted\""), "a'b\"c\n", loc=at))
    guards.add(IdGuard(AttrSource(x, "__class__"), torch.Tensor, loc=at))
    return guards


def test_small_frame_guard_source_is_golden():
    source = build(small_guards(), "forward() at model.py:18, cache entry 1").source
    source = source.replace(str(HERE), "test_guard_codegen.py")
    assert_golden(source, """
    # pdyn guards for forward() at model.py:18, cache entry 1
    # constants: _Tensor = torch.Tensor, _dict = dict, _float32 = torch.float32, _is_grad_enabled = torch.is_grad_enabled, _key_types = (str, str), _keys = ('scale', 'it\\'s "quoted"')
    def check(L, G):
        try:
            if _is_grad_enabled() is not True:
                return 'torch.is_grad_enabled() is True'
            x = L['x']
            if type(x) is not _Tensor:  # argument of forward() at test_guard_codegen.py:18
                return "type(L['x']) is torch.Tensor"
            if x.dtype is not _float32 or not x.is_cpu or x.requires_grad:  # argument of forward() at test_guard_codegen.py:18
                return "L['x'] is a float32 cpu tensor not requiring grad"
            if x.is_neg():  # argument of forward() at test_guard_codegen.py:18
                return "L['x'].is_neg() is False"
            if x.dim() != 2 or x.shape[1] != 4:  # argument of forward() at test_guard_codegen.py:18
                return "L['x'].dim() == 2 and L['x'].size(1) == 4"
            if x.stride() != (4, 1):  # argument of forward() at test_guard_codegen.py:18
                return "L['x'].stride() == (4, 1)"
            opts = L['opts']
            if type(opts) is not _dict or tuple(opts) != _keys or tuple(map(type, opts)) != _key_types:  # argument of forward() at test_guard_codegen.py:18
                return 'L[\\'opts\\'] is a dict with keys [\\'scale\\', \\'it\\\\\\'s "quoted"\\']'
            opts_scale = opts['scale']
            if type(opts_scale) is not float or opts_scale != 2.5:  # test_guard_codegen.py:21  USER_LINE = "y = x * opts['scale']"
                return "L['opts']['scale'] == 2.5"
            opts_it_s_quoted = opts['it\\'s "quoted"']
            if type(opts_it_s_quoted) is not str or opts_it_s_quoted != 'a\\'b"c\\n':  # test_guard_codegen.py:21  USER_LINE = "y = x * opts['scale']"
                return 'L[\\'opts\\'][\\'it\\\\\\'s "quoted"\\'] == \\'a\\\\\\'b"c\\\\n\\''
            x_class = x.__class__
            if x_class is not _Tensor:  # test_guard_codegen.py:21  USER_LINE = "y = x * opts['scale']"
                return "L['x'].__class__ is the same class (Tensor)"
        except Exception as e:  # an attribute or item that is gone: the entry does not apply
            return f'a guard raised {type(e).__name__}: {e}'
        return None
    """)


def test_guard_holds_for_matching_inputs_and_names_what_failed():
    check = build(small_guards(), "forward").check
    opts = {"scale": 2.5, "it's \"quoted\"": "a'b\"c\n"}
    G: dict = {}
    assert check({"x": torch.zeros(3, 4), "opts": opts}, G) is None
    assert check({"x": torch.zeros(7, 4), "opts": opts}, G) is None  # dim 0 is dynamic
    assert check({"x": torch.zeros(3, 5), "opts": opts}, G) == "L['x'].dim() == 2 and L['x'].size(1) == 4"
    assert check({"x": torch.zeros(3, 4), "opts": {**opts, "scale": 3.0}}, G) == "L['opts']['scale'] == 2.5"
    assert check({"x": [], "opts": opts}, G) == "type(L['x']) is torch.Tensor"
    with torch.no_grad():
        assert check({"x": torch.zeros(3, 4), "opts": opts}, G) == "torch.is_grad_enabled() is True"


def test_by_sentence_maps_each_sentence_to_its_guard():
    code = build(small_guards(), "forward")
    guard = code.by_sentence["L['opts']['scale'] == 2.5"]
    assert isinstance(guard, EqualsGuard) and guard.value == 2.5 and guard.loc.lineno == LINE
    assert type(code.by_sentence["L['x'].stride() == (4, 1)"]) is TensorGuard


def test_guard_that_raises_reports_the_exception_instead_of_raising():
    guards = GuardSet()
    guards.add(EqualsGuard(AttrSource(LocalSource("cfg"), "depth"), 3))
    check = build(guards, "f").check
    assert check({"cfg": object()}, {}) == "a guard raised AttributeError: 'object' object has no attribute 'depth'"


WEIRD = ["it's", 'say "hi"', "back\\slash", "new\nline", "\u2028sep", '"""', "'''", "{x}", "# not a comment",
         "\r", "é", ""]


def test_user_strings_never_break_the_source():
    guards = GuardSet()
    d = LocalSource("d")
    guards.add(DictKeysGuard(d, dict, tuple(WEIRD)))
    for key in WEIRD:
        guards.add(EqualsGuard(ItemSource(d, key), key + "!", loc=SourceLoc("new\nline.py", 3, "f\nx", 1, 2)))
    code = build(guards, "f() at we'ird\nfile.py:1")
    value = {k: k + "!" for k in WEIRD}
    assert code.check({"d": value}, {}) is None
    for key in WEIRD:
        changed = {**value, key: "?"}
        assert code.check({"d": changed}, {}) == f"L['d'][{key!r}] == {key + '!'!r}"
    header = code.source.splitlines()[0]
    assert header == r"# pdyn guards for f() at we'ird\nfile.py:1"


def test_odd_dict_keys_are_hoisted_not_pasted():
    guards = GuardSet()
    d = LocalSource("d")
    keys = (torch.float32, float("nan"), (1, "a"))
    guards.add(DictKeysGuard(d, dict, keys))
    for k in keys:
        guards.add(EqualsGuard(ItemSource(d, k), 1))
    code = build(guards, "f")
    nan = keys[1]
    assert code.check({"d": {torch.float32: 1, nan: 1, (1, "a"): 1}}, {}) is None
    assert code.check({"d": {torch.float32: 2, nan: 1, (1, "a"): 1}}, {}) == "L['d'][torch.float32] == 1"


def test_constants_are_hoisted_once_and_named_in_the_header():
    guards = GuardSet()
    module = torch.nn.Linear(2, 2)
    for name in ("a", "b"):
        guards.add(IdGuard(LocalSource(name), module))
        guards.add(EqualsGuard(AttrSource(LocalSource(name), "training"), True))
    source = build(guards, "f").source
    assert "id(" not in source and "0x" not in source
    assert source.count("_Linear = ") == 1, source
    assert source.splitlines()[1] == "# constants: _Linear = Linear(in_features=2, out_features=2, bias=True)"
    assert "a is not _Linear" in source and "b is not _Linear" in source


def test_alias_guard_compares_both_bound_names():
    guards = GuardSet()
    guards.add(AliasGuard(LocalSource("a"), other=LocalSource("b"), same=True))
    check = build(guards, "f").check
    t = torch.zeros(1)
    assert check({"a": t, "b": t}, {}) is None
    assert check({"a": t, "b": torch.zeros(1)}, {}) == "L['a'] is L['b']"


def test_empty_guard_set_always_holds():
    code = build(GuardSet(), "f")
    assert code.check({}, {}) is None
    assert "pass" in code.source


def test_optimized_function_keeps_guard_text_with_argument_comments():
    def f(x):
        return x * 2

    out = pdyn.explain(f)(torch.ones(3))
    text = out.guards[0]
    line = f.__code__.co_firstlineno
    assert f"# argument of f() at {__file__}:{line}" in text
    assert re.search(r"^# pdyn guards for f\(\) at .*test_guard_codegen.py:\d+, cache entry 1$", text, re.M)


def test_names_of_size_symbols_and_scope_names_are_never_taken_by_sources():
    guards = GuardSet()
    for name in ("s0", "u1", "e", "_modules", "check"):
        guards.add(EqualsGuard(LocalSource(name), 1))
    guards.add(IdGuard(LocalSource("m"), type("_modules", (), {})))
    source = build(guards, "f").source
    for taken in ("s0 =", "u1 =", "e =", "_modules =", "check ="):
        assert f" {taken} " not in source.replace("# constants:", ""), source
    assert "v_s0 = L['s0']" in source and "v_u1 = L['u1']" in source
