"""A fixed-seed slice of the fuzz campaign: every program must equal eager on every call (status
ok, or fallback: pdyn warned and ran eagerly). Reproduce one seed with
`python -m tests.fuzz --backend <backend> --seed <seed> --count 1` (it reduces and writes the test)."""

from __future__ import annotations

import pytest

from tests.fuzz.generator import generate
from tests.fuzz.runner import run_program

SLICES = {"eager": range(0, 110), "triton": range(50_000, 50_016)}


@pytest.mark.parametrize("backend", sorted(SLICES))
def test_fuzz_slice_equals_eager(backend):
    failures = []
    for seed in SLICES[backend]:
        outcome = run_program(generate(seed), backend, timeout=20.0)
        if outcome.failed:
            failures.append(f"seed {seed}: {outcome.status} at call {outcome.call}: {outcome.detail[:300]}")
    header = f"{len(failures)} of {len(SLICES[backend])} programs differ from eager:"
    assert not failures, "\n".join([header] + failures)
