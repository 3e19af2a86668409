"""pdyn in one screen: optimize a small model, see what was compiled, why it recompiled and what
the counters say. PDYN_LOGS=graph,guards,recompiles shows the graph, guards and recompiles in full."""

import logging.handlers
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


def why(log: logging.handlers.BufferingHandler) -> str:
    """The failing guard of the last recompile message: "L['mask'] == None failed (now ...)"."""
    message = log.buffer[-1].getMessage() if log.buffer else "compiled"
    found = re.search(r"entry \d+: (.*? failed(?: \(now .*?\)(?=, |$))?)", message)
    return "recompiled: " + short(found.group(1)) if found else message


def main() -> None:
    torch.manual_seed(0)
    model, reference = Block().eval(), Block().eval()
    reference.load_state_dict(model.state_dict())
    model, x = pdyn.optimize(model), torch.randn(4, 16)
    report = pdyn.explain(model)(x)
    print("== what pdyn compiled for model(x) ==")
    for line in [str(f) for f in report.frames] + [d for d in report.shape_decisions if "specialized" in d]:
        print(textwrap.fill(short(line), 100, initial_indent="  ", subsequent_indent="    "))
    print("  dims not named here stay symbolic (sizes 0 and 1 are specialized)")

    log, recompiles = logging.handlers.BufferingHandler(1000), logging.getLogger("pdyn.recompiles")
    level = recompiles.level
    recompiles.addHandler(log)
    recompiles.setLevel(logging.DEBUG)
    calls = [("x, batch 4", (x,)), ("x again", (x,)), ("batch 8", (torch.randn(8, 16),)),
             ("batch 13", (torch.randn(13, 16),)), ("x with a mask", (x, x > 1)),
             ("batch 8 with a mask", (torch.randn(8, 16), torch.randn(8, 16) > 1))]
    print(f"\n== calls ==\n  {'call':<20} {'matches eager':<14} {'compiles':<9} {'cache hits':<11} what happened")
    results = []
    for label, args in calls:
        log.flush()
        before = pdyn.stats(model)["compiles"]
        results.append(torch.allclose(model(*args), reference(*args), atol=1e-6))
        stats = pdyn.stats(model)
        happened = why(log) if stats["compiles"] > before else "cache hit"
        print(f"  {label:<20} {str(results[-1]):<14} {stats['compiles']:<9} {stats['cache_hits']:<11} {happened}")
    recompiles.removeHandler(log)
    recompiles.setLevel(level)
    counters = ", ".join(f"{k}={v}" for k, v in pdyn.stats(model).items())
    print("\n== counters: pdyn.stats(model) ==")
    print(textwrap.fill(counters, 100, initial_indent="  ", subsequent_indent="  "))
    print(f"\nmatches eager: {all(results)}")
    print("more (the graph, the generated guards, each recompile):\n"
          "  PDYN_LOGS=graph,guards,recompiles python examples/demo.py")


if __name__ == "__main__":
    main()
