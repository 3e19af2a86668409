"""pdyn in one screen: optimize a small model, see what was compiled, why it recompiled and what
the counters say. `PDYN_LOGS=graph,guards,recompiles python examples/demo.py` shows the graph,
the generated guard code and every recompile in full."""

from __future__ import annotations

import logging
import os
import re
import textwrap

import torch
import torch.nn as nn
import torch.nn.functional as F

import pdyn


class Block(nn.Module):
    def __init__(self, dim: int = 16, hidden: int = 32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.scale = 0.5

    def forward(self, x, mask=None):
        h = self.down(F.gelu(self.up(self.norm(x))))
        if mask is not None:
            h = h.masked_fill(mask, 0.0)
        return x + self.scale * h


def short(text: str) -> str:
    """File paths as their base names, so a line fits the screen."""
    return re.sub(r"(?:/[^\s:/]+)+/([^\s:/]+\.py)", r"\1", text)


class Recompiles(logging.Handler):
    """Collects the `pdyn.recompiles` log's messages: why each recompile happened."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def why(messages: list[str]) -> str:
    """The failing guard of a recompile message ("entry 1: L['mask'] == None failed (now ...)")."""
    if not messages:
        return ""
    found = re.search(r"entry \d+: (.*? failed(?: \(now .*?\)(?=, |$))?)", messages[-1])
    return "recompiled: " + short(found.group(1) if found else messages[-1])


def main() -> None:
    torch.manual_seed(0)
    model = Block().eval()
    reference = Block().eval()
    reference.load_state_dict(model.state_dict())
    model = pdyn.optimize(model)

    x = torch.randn(4, 16)
    report = pdyn.explain(model)(x)
    print("== what pdyn compiled for model(x) ==")
    for frame in report.frames:
        print(" ", short(str(frame)))
    for decision in report.shape_decisions:
        if "specialized" in decision:
            print(textwrap.fill("static: " + short(decision), 100, initial_indent="  ",
                                subsequent_indent="    "))
    print("  dims not named here stay symbolic (sizes 0 and 1 are specialized)")

    log = logging.getLogger("pdyn.recompiles")
    handler, level = Recompiles(), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    calls = [("x, batch 4", (x,)), ("x again", (x,)), ("batch 8", (torch.randn(8, 16),)),
             ("batch 13", (torch.randn(13, 16),)), ("x with a mask", (x, x > 1)),
             ("batch 8 with a mask", (torch.randn(8, 16), torch.randn(8, 16) > 1))]
    print("\n== calls ==")
    print(f"  {'call':<20} {'matches eager':<14} {'compiles':<9} {'cache hits':<11} what happened")
    results = []
    try:
        for label, args in calls:
            handler.messages.clear()
            before = pdyn.stats(model)["compiles"]
            ok = torch.allclose(model(*args), reference(*args), atol=1e-6)
            results.append(ok)
            stats = pdyn.stats(model)
            happened = (why(handler.messages) or "compiled") if stats["compiles"] > before else "cache hit"
            print(f"  {label:<20} {str(ok):<14} {stats['compiles']:<9} {stats['cache_hits']:<11} {happened}")
    finally:
        log.removeHandler(handler)
        log.setLevel(level)

    print("\n== counters: pdyn.stats(model) ==")
    counters = ", ".join(f"{k}={v}" for k, v in pdyn.stats(model).items())
    print(textwrap.fill(counters, 100, initial_indent="  ", subsequent_indent="  "))
    print(f"\nmatches eager: {all(results)}")
    command = "PDYN_LOGS=graph,guards,recompiles python examples/demo.py"
    if "PDYN_LOGS" not in os.environ:
        print(f"more (the graph, the generated guards, each recompile): {command}")


if __name__ == "__main__":
    main()
