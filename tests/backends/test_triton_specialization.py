"""Which int arguments Triton specializes: a size that is a multiple of 16 on every call keeps
Triton's specialization (vector loads need it); any other is declared dynamic, so sizes whose
residues change from call to call reuse one compile instead of one per residue pattern."""

from __future__ import annotations

import sympy
import torch

from pdyn.backends.triton.runtime.launch_config import dynamic_ints, int_spec
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


def keys(fn, *shapes) -> set:
    """The compile keys of `fn`'s first-call jobs, over calls with each of `shapes`."""
    found = set()
    for shape in shapes:
        rec = check(fn, (randn(*shape),))
        found |= {(j.function.fn.__code__.co_code, j.key()[1:]) for j in rec.last.compile_jobs}
    return found


def test_rows_of_any_residue_share_one_compile_when_the_row_is_a_multiple_of_16():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64).to(DEVICE).requires_grad_(False)

    def f(x):  # the row length comes from a parameter: static
        return torch.softmax(lin(x) * 2, -1) + 1

    # rows 13, 16, 17, 32: the row count is declared dynamic, the row length (64) stays specialized
    assert len(keys(f, (13, 64), (16, 64), (17, 64), (32, 64))) == 1
    rec = check(f, (randn(13, 64),))
    (job,) = rec.last.compile_jobs
    ints = [n for n in job.function.arg_names[2:] if n.islower()]  # after the two pointers
    assert {ints[i] for i in dynamic_ints(job.function, 2)} == {"xnumel"}  # rows; rnumel is 64
    assert "@triton.jit(do_not_specialize=['xnumel'])\ndef kernel_persistent(" in rec.last.kernel_sources[0]


def test_int_spec_keys_dynamic_positions_alike_and_others_by_residue():
    assert int_spec((13, 64, 1), frozenset({0})) == int_spec((16, 64, 1), frozenset({0})) == ("d", 16, 1)
    assert int_spec((13, 64)) != int_spec((16, 64))
