"""The fuzzing campaign: generate, run and classify programs seed after seed, reduce each failure
and write it as a pytest test under the output directory, print progress and a summary.

    python -m tests.fuzz --backend eager --count 10000 --seed 0
    python -m tests.fuzz --backend triton --minutes 30 --out fuzz_failures
    python -m tests.fuzz --kind sizes --count 20000 --seed 0   # size arithmetic (gen_sizes.py)
    python -m tests.fuzz --backend triton --grad --count 300     # gradients too (gradients.py)

Imports torch only after the arguments are read: the Triton backend on a machine without CUDA
needs TRITON_INTERPRET=1 set before Triton is first imported.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description="pdyn's differential fuzzer")
    ap.add_argument("--backend", choices=["eager", "triton"], default="eager")
    ap.add_argument("--kind", choices=["mixed", "sizes"], default="mixed",
                    help="mixed: tensor and Python programs; sizes: size arithmetic (gen_sizes.py)")
    ap.add_argument("--count", type=int, default=1000, help="programs to run (seeds seed..seed+count-1)")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--minutes", type=float, default=0, help="stop after this long (0: no limit)")
    ap.add_argument("--out", default="fuzz_failures", help="directory for reduced failures")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per program")
    ap.add_argument("--reduce-seconds", type=float, default=60.0, help="reducer budget per failure")
    ap.add_argument("--reduce-per-signature", type=int, default=3,
                    help="failures of one signature reduced; later ones are written unreduced")
    ap.add_argument("--progress-seconds", type=float, default=10.0)
    ap.add_argument("--grad", action="store_true",
                    help="float tensor arguments require grad; each call's backward and gradients compared too")
    return ap.parse_args(argv)


def interpret_triton_without_cuda(backend: str) -> None:
    if backend == "triton" and not os.path.exists("/dev/nvidiactl"):
        os.environ.setdefault("TRITON_INTERPRET", "1")


@dataclass
class Tally:
    """Counts by status, distinct failures (by group key) and pdyn's counters, summed."""

    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    signatures: collections.Counter[str] = field(default_factory=collections.Counter)
    groups: dict[str, list[str]] = field(default_factory=dict)  # group key -> files written
    fallbacks: collections.Counter[str] = field(default_factory=collections.Counter)
    pdyn: collections.Counter[str] = field(default_factory=collections.Counter)
    calls: int = 0
    eager_raised: int = 0

    def line(self) -> str:
        order = ["ok", "fallback", "wrong", "crash", "eager_error_mismatch", "timeout", "eager_timeout", "harness_error"]
        return " ".join(f"{s} {self.statuses[s]}" for s in order if self.statuses[s])


def group_key(outcome: Any) -> str:
    """Failures that differ only in names, numbers and values are one group."""
    detail = re.sub(r"\d+(\.\d+)?(e-?\d+)?", "N", outcome.detail)
    detail = re.sub(r"\b[a-z]+N+\b", "v", detail)
    detail = re.sub(r"\(.*", "", detail)
    return f"{outcome.signature()} | {detail[:90].strip()}"


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    interpret_triton_without_cuda(args.backend)
    from tests.fuzz.gen_sizes import generate_sizes
    from tests.fuzz.generator import generate
    from tests.fuzz.runner import Outcome, run_program

    os.makedirs(args.out, exist_ok=True)
    tally, start, last_print = Tally(), time.monotonic(), time.monotonic()
    done = 0
    for seed in range(args.seed, args.seed + args.count):
        if args.minutes and time.monotonic() - start > args.minutes * 60:
            break
        try:
            program = generate_sizes(seed) if args.kind == "sizes" else generate(seed)
            program = program.with_changes(grad=args.grad)
            outcome = run_program(program, args.backend, args.timeout)
        except Exception:  # noqa: BLE001  # NOTE: a harness bug must not stop the campaign
            outcome, program = Outcome("harness_error", detail=traceback.format_exc(limit=-3)), None
            print(f"seed {seed}: harness error\n{outcome.detail}", file=sys.stderr)
        done += 1
        record(tally, outcome)
        if outcome.failed and program is not None:
            handle_failure(args, tally, program, outcome)
        if time.monotonic() - last_print > args.progress_seconds:
            last_print = time.monotonic()
            print(f"[{args.backend}] {done}/{args.count} | {rate(done, start):.0f} programs/min | {tally.line()}",
                  flush=True)
    summary = summarize(args, tally, done, start)
    print(summary)
    with open(os.path.join(args.out, f"summary_{args.kind}_{args.backend}.md"), "w") as out:
        out.write(summary)
    return 0


def rate(done: int, start: float) -> float:
    return done / max(time.monotonic() - start, 1e-9) * 60


def record(tally: Tally, outcome: Any) -> None:
    tally.statuses[outcome.status] += 1
    tally.calls += outcome.calls
    tally.eager_raised += outcome.eager_raised
    tally.pdyn.update(outcome.stats)
    for message in outcome.fallbacks:
        tally.fallbacks[re.sub(r"at \S+:\d+|\d+", "", message)[:160]] += 1


def handle_failure(args: argparse.Namespace, tally: Tally, program: Any, outcome: Any) -> None:
    from tests.fuzz.reduce import as_pytest, reduce_program

    tally.signatures[outcome.signature()] += 1
    reduced, reduced_outcome = program, outcome
    if tally.signatures[outcome.signature()] <= args.reduce_per_signature:
        try:
            reduced, reduced_outcome = reduce_program(program, outcome, args.backend, args.reduce_seconds,
                                                      min(args.timeout, 20.0))
        except Exception:  # noqa: BLE001  # NOTE: keep the unreduced program rather than nothing
            traceback.print_exc()
    name = f"test_fuzz_{args.backend}{'_grad' if program.grad else ''}_seed_{program.seed}_{outcome.status}"
    path = os.path.join(args.out, f"{name}.py")
    with open(path, "w") as out:
        out.write(as_pytest(reduced, reduced_outcome, args.backend, name))
        if reduced_outcome.trace:
            out.write("\n# pdyn's traceback:\n" + "".join(f"# {line}\n" for line in reduced_outcome.trace.splitlines()))
    tally.groups.setdefault(group_key(reduced_outcome), []).append(path)
    print(f"  seed {program.seed}: {outcome.status}: {outcome.detail[:150]} -> {path}", flush=True)


def summarize(args: argparse.Namespace, tally: Tally, done: int, start: float) -> str:
    minutes = (time.monotonic() - start) / 60
    lines = [f"# pdyn fuzz campaign: {args.kind} programs, backend {args.backend}, seeds {args.seed}..{args.seed + done - 1}", "",
             f"- programs: {done} in {minutes:.1f} min ({rate(done, start):.0f} programs/min)",
             f"- statuses: {tally.line()}",
             f"- calls: {tally.calls}, eager raised on {tally.eager_raised} "
             f"({100 * tally.eager_raised / max(tally.calls, 1):.0f}%)",
             "- pdyn counters: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.pdyn.items())), ""]
    if tally.fallbacks:
        lines += ["## Fallbacks (not failures)", ""]
        lines += [f"- {n} x {message}" for message, n in tally.fallbacks.most_common()] + [""]
    if tally.groups:
        lines += ["## Distinct failures", ""]
        for key, paths in sorted(tally.groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {len(paths)} x `{key}`: {', '.join(paths[:3])}")
    return "\n".join(lines) + "\n"
