"""A small attention model called with many batch sizes and sequence lengths. Its Python code reads
the sequence length twice: in a comparison (a guard, so it stays dynamic) and in `range()` over
heads (a constant attribute). Run with the recompile log on:

    PDYN_LOGS=recompiles,dynamic python examples/dynamic_shapes.py
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import pdyn


class Attention(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, max_len: int = 128):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.heads = heads
        self.max_len = max_len
        self.pos = nn.Parameter(torch.randn(max_len, dim) * 0.02)

    def forward(self, x):
        b, t, d = x.shape
        if t > self.max_len:                       # a bool read: guards t <= 128, t stays dynamic
            raise ValueError(f"sequence of {t} is longer than {self.max_len}")
        x = x + self.pos[:t]                       # a symbolic slice
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = [z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v)]
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))   # sqrt of a size stays in the graph
        y = F.softmax(scores, dim=-1) @ v
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def main() -> None:
    torch.manual_seed(0)
    model = Attention().eval()
    reference = Attention().eval()
    reference.load_state_dict(model.state_dict())
    model = pdyn.optimize(model)
    with torch.no_grad():
        # one compile serves every size >= 2; a batch of 1 is specialized (it changes broadcasting)
        for batch, seq in [(2, 7), (3, 16), (4, 33), (8, 64), (2, 100), (5, 128), (1, 5)]:
            x = torch.randn(batch, seq, 32)
            same = torch.allclose(model(x), reference(x), atol=1e-5)
            print(f"batch {batch:>2}, seq {seq:>3}: matches eager: {same}; compiles so far: "
                  f"{pdyn.stats(model)['compiles']}")
    print(pdyn.explain(model)(torch.randn(2, 9, 32)))


if __name__ == "__main__":
    main()
