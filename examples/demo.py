"""pdyn in one page: optimize a small model, look at the graph it captured, the guards it
generated, and what the counters say after a few calls."""

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


def main() -> None:
    torch.manual_seed(0)
    model = Block().eval()
    reference = Block().eval()
    reference.load_state_dict(model.state_dict())
    model = pdyn.optimize(model)

    x = torch.randn(4, 16)
    print("== what pdyn captured for model(x) ==")
    report = pdyn.explain(model)(x)
    print(report)

    print("\n== calls ==")
    for label, args in [("x", (x,)), ("x again", (x,)), ("x with a mask", (x, x > 1)),
                        ("a new batch size", (torch.randn(8, 16),))]:
        out = model(*args)
        ok = torch.allclose(out, reference(*args), atol=1e-6)
        print(f"model({label}): matches eager: {ok}; counters: {pdyn.stats(model)}")
    print("\nA call that matches a compiled entry's guards is a cache hit. A new batch size is one too:\n"
          "the batch dim is symbolic, since forward() never reads its value. A new input type (the mask)\n"
          "is one more compile. Set PDYN_LOGS=recompiles,guards,graph to watch it happen.")


if __name__ == "__main__":
    main()
