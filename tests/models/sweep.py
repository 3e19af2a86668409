"""A sweep over model architectures: one row per model with what pdyn did on it (graphs, breaks and
eager fallbacks of the first call, compiles over the call sequence, outputs equal to eager, seconds)
and, where it is not captured whole, the first break reasons.

    python -m tests.models.sweep              # the wider group (model_suite/wide_cases.py)
    python -m tests.models.sweep --all        # the suite's models too
    python -m tests.models.sweep bart vit     # the named ones

Not a test module (pytest collects only test_*.py); test_wide.py asserts the rows that pass.
"""

from __future__ import annotations

import argparse
import time
import traceback

from model_suite.case import ModelCase
from model_suite.cases import INFERENCE
from model_suite.wide_cases import WIDE, WIDE_CALLS
from tests.models.harness import first_breaks, run_inference


def sweep_one(case: ModelCase) -> tuple[str, str]:
    """(the row, the detail to print under it: break reasons or the error)."""
    start = time.perf_counter()
    try:
        report = run_inference(case, WIDE_CALLS)
        error = None
    except Exception as e:  # a mismatch or an error is one row of the table, not the sweep's end
        report, error = None, e
    seconds = time.perf_counter() - start
    if report is None:
        detail = "".join(traceback.format_exception_only(type(error), error)).strip().splitlines()
        return f"{case.name:<26}{'-':>7}{'-':>7}{'-':>10}{'-':>9}  {'error':<6}{seconds:>7.1f}", \
            " | ".join(detail[:3])[:400]
    whole = (report.first_graphs, report.first_breaks, report.first_fallbacks) == (1, 0, 0) and report.compiles <= 2
    row = (f"{case.name:<26}{report.first_graphs:>7}{report.first_breaks:>7}{report.first_fallbacks:>10}"
           f"{report.compiles:>9}  {'ok' if whole else 'part':<6}{seconds:>7.1f}")
    batch, seq = WIDE_CALLS[0]
    return row, "" if whole else first_breaks(case.build(), case.inputs(batch, seq, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="models to run (default: the wider group)")
    parser.add_argument("--all", action="store_true", help="the suite's models and the wider group")
    args = parser.parse_args()
    cases = INFERENCE + WIDE if args.all or args.names else WIDE
    if args.names:
        cases = [c for c in cases if c.name in args.names]
    print(f"{'model':<26}{'graphs':>7}{'breaks':>7}{'fallbacks':>10}{'compiles':>9}  {'ok':<6}{'s':>7}")
    for case in cases:
        row, detail = sweep_one(case)
        print(row + (f"\n    {detail}" if detail else ""), flush=True)


if __name__ == "__main__":
    main()
