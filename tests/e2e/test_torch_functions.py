"""End-to-end: torch functions, torch.nn.functional and factory functions under pdyn, compared with eager."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import pdyn
from tests.helpers import CountingBackend, check, check_calls


def test_relu_add():
    check(lambda x: torch.relu(x) + 1, torch.randn(4, 5))


def test_cat_and_stack():
    def f(a, b):
        return torch.cat([a, b], dim=0), torch.stack((a, b), dim=1)

    check(f, torch.randn(2, 3), torch.randn(2, 3))


def test_where_with_scalar():
    check(lambda x: torch.where(x > 0, x, 0.0), torch.randn(3, 4))


def test_einsum_batched_matmul():
    check(lambda a, b: torch.einsum("bij,bjk->bik", a, b), torch.randn(2, 3, 4), torch.randn(2, 4, 5))


def test_matmul_and_softmax():
    def f(q, k):
        return torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / 8.0, dim=-1)

    check(f, torch.randn(2, 4, 8), torch.randn(2, 4, 8))


def test_factories_with_dtype():
    def f(x):
        a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
        z = torch.zeros(2, 3) + torch.ones(2, 3, dtype=torch.float64)
        return x + a, z, torch.full((2, 2), 7, dtype=torch.int64)

    check(f, torch.randn(2, 3))


def test_factory_from_input_shape():
    check(lambda x: torch.zeros(x.shape[0], 4) + x.sum(), torch.randn(3, 5))


def test_randn_under_manual_seed_matches_eager():
    check(lambda x: x + torch.randn(3, 4), torch.randn(3, 4))


def test_rand_like_and_tensor_literal():
    def f(x):
        return torch.rand_like(x) * torch.tensor([1.0, 2.0, 3.0])

    check(f, torch.randn(2, 3))


def test_tensor_literal_of_ints_as_index():
    def f(x):
        idx = torch.tensor([2, 0])
        return x[idx], x[:, idx] + torch.tensor(1.5)

    check(f, torch.randn(3, 3))


def test_boolean_mask_getitem_has_a_data_dependent_size_in_one_graph():
    def f(x):
        mask = torch.tensor([True, False, True])
        return x[:, mask] * 2

    check(f, torch.randn(3, 3), graphs=1)


def test_functional_linear_gelu_silu():
    def f(x, w, b):
        return F.silu(F.gelu(F.linear(x, w, b)))

    check(f, torch.randn(2, 4), torch.randn(3, 4), torch.randn(3))


def test_functional_gelu_tanh_approximate():
    check(lambda x: F.gelu(x, approximate="tanh"), torch.randn(5))


def test_functional_layer_norm():
    def f(x, w, b):
        return F.layer_norm(x, (4,), w, b, eps=1e-5)

    check(f, torch.randn(3, 4), torch.randn(4), torch.randn(4))


def test_functional_layer_norm_from_input_shape():
    check(lambda x: F.layer_norm(x, x.shape[-1:]), torch.randn(2, 6))


def test_functional_softmax_log_softmax():
    check(lambda x: (F.softmax(x, dim=1), F.log_softmax(x, -1)), torch.randn(3, 5))


def test_functional_dropout_eval_is_identity():
    check(lambda x: F.dropout(x, p=0.5, training=False) * 2, torch.randn(4, 4))


def test_functional_dropout_training_with_seed():
    check(lambda x: F.dropout(x, p=0.5, training=True), torch.randn(4, 4))


def test_functional_conv2d_and_max_pool():
    def f(x, w):
        return F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2)

    check(f, torch.randn(1, 2, 6, 6), torch.randn(3, 2, 3, 3))


def test_functional_cross_entropy():
    check(lambda logits, target: F.cross_entropy(logits, target), torch.randn(4, 5), torch.tensor([0, 3, 1, 4]))


def test_functional_cross_entropy_label_smoothing_sum():
    def f(logits, target):
        return F.cross_entropy(logits, target, reduction="sum", label_smoothing=0.1)

    check(f, torch.randn(3, 4), torch.tensor([1, 2, 0]))


def test_functional_pad():
    check(lambda x: (F.pad(x, (1, 2)), F.pad(x, (1, 1, 0, 1), value=-1.0)), torch.randn(2, 3))


def test_mse_and_normalize():
    check(lambda a, b: F.mse_loss(F.normalize(a, dim=-1), b), torch.randn(3, 4), torch.randn(3, 4))


def test_torch_max_with_dim_namedtuple():
    def f(x):
        m = torch.max(x, dim=1)
        return m.values * 2, m.indices, m[0]

    check(f, torch.randn(3, 4))


def test_sort_and_topk():
    def f(x):
        values, indices = torch.sort(x, dim=-1, descending=True)
        top = torch.topk(x, 2)
        return values, indices, top.values, top.indices

    check(f, torch.randn(3, 5))


def test_torch_functions_on_python_scalars_in_args():
    check(lambda x: torch.clamp(x, min=-0.5, max=0.5) + torch.pow(x, 2), torch.randn(6))


def test_cumsum_and_argmax_keepdim():
    check(lambda x: (torch.cumsum(x, 0), torch.argmax(x, dim=1, keepdim=True)), torch.randn(3, 4))


def test_is_tensor_and_numel():
    def f(x):
        return x * torch.numel(x) if torch.is_tensor(x) else x

    check(f, torch.randn(2, 3))


def test_matmul_shape_mismatch_raises_like_eager():
    check(lambda a, b: a @ b, torch.randn(2, 3), torch.randn(4, 5), graphs=0)


def test_cat_dtype_mismatch_raises_like_eager():
    check(lambda a: torch.cat([a, torch.zeros(2, 4)]), torch.randn(2, 3), graphs=0)


# -- torch functions written in Python, with no op row: inlined, so their sizes stay symbolic ----------


def _targets(backend: CountingBackend) -> set:
    return {node.target for gm in backend.graphs for node in gm.graph.nodes if node.op == "call_function"}


def test_python_functional_helper_without_rule_is_inlined_and_compiles_once():
    def f(x, pad):
        mask = F._canonical_mask(mask=pad, mask_name="key_padding_mask", other_type=None, other_name="",
                                 target_type=x.dtype)
        return x.sum(-1) + mask

    backend = CountingBackend()
    calls = [(torch.randn(b, s, 4), torch.rand(b, s) > 0.5) for b, s in [(2, 3), (3, 5), (4, 8), (7, 2)]]
    optimized = check_calls(f, *calls, compiles=1, backend=backend)
    assert len(backend.graphs) == 1 and pdyn.stats(optimized)["graph_breaks"] == 0
    assert F._canonical_mask not in _targets(backend)  # its ops are recorded, not the helper
    assert torch.zeros_like in _targets(backend)


def test_multi_head_attention_forward_slow_path_compiles_once():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True).train()  # training: the Python path, not the fused op

    def f(x, pad):
        return mha(x, x, x, key_padding_mask=pad, need_weights=False)[0]

    backend = CountingBackend()
    calls = [(torch.randn(b, s, 8), torch.arange(s).expand(b, s) >= s - 1) for b, s in [(2, 3), (3, 5), (5, 4)]]
    optimized = check_calls(f, *calls, compiles=1, backend=backend)
    assert len(backend.graphs) == 1 and pdyn.stats(optimized)["graph_breaks"] == 0
    assert F.multi_head_attention_forward not in _targets(backend)


def test_has_torch_function_answers_without_pinning_sizes():
    def f(x, w):
        if F.has_torch_function_variadic(x, w) or torch.overrides.has_torch_function((x, w, None)):
            return x
        return F.linear(x, w)

    backend = CountingBackend()
    w = torch.randn(3, 4)
    optimized = check_calls(f, *[(torch.randn(b, 4), w) for b in (2, 3, 6)], compiles=1, backend=backend)
    assert pdyn.stats(optimized)["graph_breaks"] == 0


def test_functional_with_shape_rule_stays_one_node():
    backend = CountingBackend()
    check_calls(lambda x: F.softmax(x, dim=-1), *[(torch.randn(b, 5),) for b in (2, 3)], compiles=1,
                backend=backend)
    assert F.softmax in _targets(backend)
