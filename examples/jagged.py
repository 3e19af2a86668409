"""A small recommender over jagged features (the KeyedJaggedTensor layout): each of F features
has, per example, a variable number of ids; all ids are in one `values` tensor, and
`lengths[f, b]` says how many belong to feature f of example b. Each feature's ids are split off
(`values.split(lengths.sum(1).tolist())`: F data-dependent sizes u0.., no hint), embedded and
mean-pooled per example (segment ids from `repeat_interleave`, sums by `index_add_`).

Batch size and lengths change every call; one compile serves them all. Run with the log on:

    PDYN_LOGS=recompiles,dynamic python examples/jagged.py
"""

import torch
import torch.nn as nn

import pdyn

FEATURES, VOCAB, DIM = 4, 50, 8


class JaggedRecommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = nn.ModuleList(nn.Embedding(VOCAB, DIM) for _ in range(FEATURES))
        self.mlp = nn.Sequential(nn.Linear(FEATURES * DIM, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, values, lengths):
        batch = lengths.shape[1]
        per_feature = values.split(lengths.sum(1).tolist())   # F sizes only the data decides
        pooled = []
        for f, table in enumerate(self.tables):
            segment = torch.repeat_interleave(torch.arange(batch), lengths[f])   # example of each id
            sums = torch.zeros(batch, DIM).index_add_(0, segment, table(per_feature[f]))
            pooled.append(sums / lengths[f].clamp(min=1).unsqueeze(1))           # mean; 0 for no ids
        return self.mlp(torch.cat(pooled, dim=1)).squeeze(1)


def batch_of(size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, 5, (FEATURES, size), generator=g)
    values = torch.randint(0, VOCAB, (int(lengths.sum()),), generator=g)
    return values, lengths


def main() -> None:
    torch.manual_seed(0)
    model = JaggedRecommender().eval()
    reference = JaggedRecommender().eval()
    reference.load_state_dict(model.state_dict())
    model = pdyn.optimize(model, backend="eager")
    with torch.no_grad():
        for i, size in enumerate([3, 7, 16, 5, 32, 2]):
            values, lengths = batch_of(size, i)
            same = torch.allclose(model(values, lengths), reference(values, lengths), atol=1e-6)
            stats = pdyn.stats(model)
            print(f"batch {size:>2}, {values.shape[0]:>3} ids: matches eager: {same}; "
                  f"compiles: {stats['compiles']}, recompiles: {stats['recompiles']}, "
                  f"graph breaks: {stats['graph_breaks']}")
    explanation = pdyn.explain(reference)(*batch_of(4, 99))
    print(f"graphs: {explanation.graph_count}, graph breaks: {explanation.graph_break_count}; sizes:")
    print("\n".join(f"  {line}" for line in explanation.shape_decisions))


if __name__ == "__main__":
    main()
