"""A fixed-seed slice of the fuzz campaign: every program must equal eager on every call (status
ok, or fallback: pdyn warned and ran eagerly). Reproduce one seed with
`python -m tests.fuzz --backend <backend> --seed <seed> --count 1` (it reduces and writes the test)."""

from __future__ import annotations

import pytest

from tests.fuzz.generator import generate
from tests.fuzz.runner import run_program

SLICES = {"eager": range(0, 110), "triton": range(50_000, 50_016), "triton_grad": range(100, 106)}


@pytest.mark.parametrize("name", sorted(SLICES))
def test_fuzz_slice_equals_eager(name):
    """`triton_grad`: float arguments require grad; every argument's gradient equals eager's too."""
    backend, grad = name.removesuffix("_grad"), name.endswith("_grad")
    failures = []
    for seed in SLICES[name]:
        outcome = run_program(generate(seed).with_changes(grad=grad), backend, timeout=20.0)
        if outcome.failed:
            failures.append(f"seed {seed}: {outcome.status} at call {outcome.call}: {outcome.detail[:300]}")
    header = f"{len(failures)} of {len(SLICES[name])} programs differ from eager:"
    assert not failures, "\n".join([header] + failures)
