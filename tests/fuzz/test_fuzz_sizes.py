"""A fixed-seed slice of the size-arithmetic fuzzer (gen_sizes.py): padding to multiples, windows,
unfold, chunks, view(-1), // and % of sizes, branches on derived sizes, over calls whose sizes take
every residue; each program must equal eager on every call. `make test` also runs it under
PDYN_TRANSLATION_VALIDATION=1. Reproduce one seed with
`python -m tests.fuzz --kind sizes --seed <seed> --count 1`."""

from __future__ import annotations

from tests.fuzz.gen_sizes import generate_sizes
from tests.fuzz.runner import run_program

SEEDS = range(0, 24)


def test_size_programs_equal_eager():
    failures = []
    for seed in SEEDS:
        outcome = run_program(generate_sizes(seed), "eager", timeout=30.0)
        if outcome.failed or outcome.status == "fallback":
            failures.append(f"seed {seed}: {outcome.status} at call {outcome.call}: {outcome.detail[:300]}")
    assert not failures, "\n".join(failures)
