"""How int arguments are specialized: Triton specializes each per call (== 1, a multiple of 16:
vector loads need it), one compile per pattern. A size that is a multiple of 16 on every call is
left to that; the others are listed by codegen, and a launch where one of them is not a multiple of
16 uses a twin that declares them dynamic, so sizes that change every call cost two compiles, not
one per residue pattern."""

from __future__ import annotations

import sympy
import torch

from pdyn.backends.triton.runtime import precompile
from pdyn.backends.triton.runtime.cache import load_kernel
from pdyn.backends.triton.runtime.launch import KernelLauncher
from pdyn.backends.triton.runtime.launch_config import int_spec
from pdyn.backends.triton.symbolic import multiple_of_16
from pdyn.shapes.exprs import FloorDiv
from tests.backends.util import DEVICE, check, randn

S0, S1 = sympy.Symbol("s0", integer=True), sympy.Symbol("s1", integer=True)


def test_multiple_of_16_holds_for_every_value_or_is_false():
    assert multiple_of_16(512 * S0) and multiple_of_16(16 * S0 * S1 + 32) and multiple_of_16(sympy.Integer(0))
    assert multiple_of_16(16 * FloorDiv(S0, 3)) and multiple_of_16(sympy.Rational(1, 2) * 32 * S0)
    assert not multiple_of_16(8 * S0) and not multiple_of_16(S0 * S1) and not multiple_of_16(512 * S0 + 1)
    assert not multiple_of_16(16 * sympy.Symbol("x"))  # not known to be an integer
    assert not multiple_of_16(sympy.Rational(16, 3) * S0)


def row_softmax():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64).to(DEVICE).requires_grad_(False)

    def f(x):  # the row length comes from a parameter: static
        return torch.softmax(lin(x) * 2, -1) + 1

    return f


def test_only_sizes_that_may_change_their_residue_are_listed():
    rec = check(row_softmax(), (randn(13, 64),))
    assert "DYNAMIC_kernel_persistent = ('xnumel',)\n@triton.jit\ndef kernel_persistent(" in rec.last.kernel_sources[0]


def test_large_multiples_of_16_launch_the_specialized_kernel_other_sizes_one_dynamic_twin(monkeypatch):
    """Rows 13, 29, 1, 16, 48 (of 64: latency-bound launches) and 16385 launch the twin that
    declares the rows dynamic (Triton's specialization of them would give no vector loads);
    16384 and 32768 launch the kernel Triton specializes (a multiple of 16 in a launch bound by
    bandwidth). Two compiles over any rows (one per residue pattern before)."""
    rec = check(row_softmax(), (randn(13, 64),))
    launcher = next(l for l in rec.last.launchers if l.reduction)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # NOTE: real JITFunctions; none compiles here
    module = load_kernel(rec.last.kernel_sources[0], interpret=False)
    compiled = KernelLauncher(module, reduction=True, inner=True, interpret=False)
    fn = compiled.functions["persistent"]
    assert fn.arg_names[:5] == ["ptr0", "ptr1", "ptr2", "xnumel", "rnumel"]  # x @ w, the bias, the output
    twin = compiled.twin(fn)
    assert twin is not fn and "xnumel" in twin.do_not_specialize and "rnumel" not in twin.do_not_specialize
    again = KernelLauncher(module, reduction=True, inner=True, interpret=False)
    assert again.twin(fn) is twin  # layers sharing a kernel share its twin and its compiles
    rows = (13, 29, 1, 16, 48, 16385, 16384, 32768)
    chosen = [compiled.choose(fn, (1, 64, False), 4, (n, 64), 3) for n in rows]
    assert chosen == [twin] * 6 + [fn] * 2
    jobs = [precompile.launcher_jobs(compiled, (torch.float32,) * 3, (), (n, 64), False) for n in rows]
    assert len({(j.function, j.key()[1]) for js in jobs for j in js}) == 2
    if launcher.interpret:
        assert launcher.twin(launcher.functions["persistent"]) is None  # the interpreter never specializes


def test_int_spec_keys_dynamic_positions_alike_and_others_by_residue():
    assert int_spec((13, 64, 1), frozenset({0})) == int_spec((16, 64, 1), frozenset({0})) == ("d", 16, 1)
    assert int_spec((13, 64)) != int_spec((16, 64))


def test_the_bound_path_launches_the_variant_the_launch_chooses(monkeypatch):
    """A twin compiled by latency-bound launches has the same blocks as a later large launch of a
    multiple of 16: the bound path must not take it (it would lose the vector loads); it leaves
    the launch to Triton's path, which compiles the specialized kernel, and takes the twin only
    where `choose` does."""
    from pdyn.backends.triton.runtime import launch
    from pdyn.backends.triton.runtime.fast_launch import BoundLauncher
    from pdyn.backends.triton.runtime.launch_config import dynamic_ints
    from tests.backends.test_triton_launch import _fake_fast

    rec = check(row_softmax(), (randn(13, 64),))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # NOTE: real JITFunctions; none compiles here
    compiled = KernelLauncher(load_kernel(rec.last.kernel_sources[0], interpret=False), reduction=True,
                              inner=True, interpret=False)
    fn = compiled.functions["persistent"]
    twin = compiled.twin(fn)
    monkeypatch.setattr(launch, "_FAST", _fake_fast(stream=7))
    ran = []
    plan = compiled._reduction_plan(16384, 64)
    assert plan.trailing_ints == (16384, 64)
    spec = int_spec((13, 64), dynamic_ints(twin, 3))
    bound = BoundLauncher(lambda *a: ran.append(a), "f", "m", None, None, 0, None)
    compiled.compiled[(twin, plan.constexprs, plan.warps, 0, spec)] = bound
    t = torch.empty(16)
    assert not compiled._fast_call(plan, (t, t, t), (16384, 64)) and not ran
    assert compiled._fast_call(plan, (t, t, t), (29, 64)) and len(ran) == 1  # latency-bound: the twin
