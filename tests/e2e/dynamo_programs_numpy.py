"""The dynamo-style programs over NumPy arrays and containers (deque, min/max over mixed values,
user classes with container protocols), written afresh after the NumPy and container tests of
torch's test/dynamo/test_functions.py and test_misc.py (the rest are dynamo_programs.py)."""

from __future__ import annotations

import collections

import numpy as np
import torch

from tests.e2e.dynamo_programs import program


def square() -> tuple[torch.Tensor]:
    return (torch.randn(3, 3),)


def column() -> tuple[np.ndarray]:
    return (np.arange(3)[:, None],)


def ints() -> tuple[np.ndarray]:
    return (np.arange(10),)


def floats() -> tuple[np.ndarray]:
    return (np.random.default_rng(0).random(5),)


def rows() -> tuple[np.ndarray]:
    return (np.random.default_rng(1).standard_normal((2, 3)),)


ARANGE = np.arange(10)


# ---- arrays made from tensors --------------------------------------------------------------------

@program(square)
def np_meshgrid_of_tensors(x):
    gx, gy = np.meshgrid(x[0].numpy(), x[1].numpy())
    return torch.from_numpy(gx), torch.from_numpy(gy)


@program(square)
def np_from_numpy_branch_on_size(x):
    arr = x.numpy()
    t = torch.from_numpy(arr)
    return torch.tensor(t.size(0) == 1)


@program(square)
def np_size_attr(x):
    return x.numpy().size, x + 1


@program(square)
def np_array_attrs(x):
    arr = x.numpy()
    return (arr.itemsize, arr.strides, arr.shape, arr.ndim, arr.size,
            torch.from_numpy(arr.T), torch.from_numpy(arr.real))


@program(square)
def np_mean_then_sum(x):
    means = np.mean(x.numpy(), 1)
    total = np.sum(means)
    return torch.from_numpy(np.asarray(total))


@program(square)
def np_returns_transpose(x):
    return x.numpy().T


@program(square)
def np_returns_several(x):
    arr = x.numpy()
    return arr.T, arr.real, arr * 2


@program(square)
def np_method_copy(x):
    return x.numpy().copy()


@program(square)
def np_method_transpose(x):
    return x.numpy().transpose(0, 1)


@program(square)
def np_method_reshape(x):
    arr = x.numpy()
    return arr.reshape([1, arr.size])


@program(square)
def np_reductions_along_axis(x):
    arr = x.numpy()
    return arr.max(axis=0), arr.all(axis=0), arr.sum()


@program(square)
def np_operators(x):
    arr = x.numpy()
    return arr + arr, arr - arr, -arr, arr ** 2, arr > 0


@program(square)
def np_ones_like_dtype(x):
    return np.ones_like(x, dtype=np.float64)


@program(square)
def np_dtype_object(x):
    kind = np.dtype("float")
    return np.full_like(x, 2.4, dtype=kind)


@program(square)
def np_linalg_norm(x):
    return np.linalg.norm(x.numpy(), axis=0)


@program(square)
def np_where_and_clip(x):
    arr = x.numpy()
    return np.where(arr > 0, arr, 0.0), np.clip(arr, -0.5, 0.5)


@program(square)
def np_break_between(x):
    real = x.numpy().real
    print("a break")
    return np.multiply(real, 2.0)


@program(square)
def np_ones_like_then_add(x):
    arr = x.numpy()
    ones = np.ones_like(arr)
    return np.add(arr, ones), np.exp(arr)


# ---- arrays as arguments -------------------------------------------------------------------------

@program(rows)
def np_input_sum_over_len(arr):
    return arr.sum() / len(arr)


@program(ints)
def np_input_size_plus_array(arr):
    return arr.size + arr


@program(ints)
def np_input_compare(arr):
    return arr >= 3


@program(ints)
def np_input_minimum_maximum(arr):
    return np.minimum(arr, 3), np.maximum(arr, arr - 1)


@program(ints)
def np_input_plus_global(arr):
    return arr + ARANGE + ARANGE


@program(column)
def np_input_rows_iterated(arr):
    return [row for row in arr]


@program(floats)
def np_input_astype_chain(arr):
    return (arr * 5).astype(bool).astype(float).astype(int) + 8


@program(floats)
def np_input_where_scalar(arr):
    return np.where(arr < 0.5, 3, arr)


@program(floats)
def np_input_mean_std(arr):
    return np.mean(arr), np.std(arr), arr.mean(), arr.var()


# ---- arrays made in the frame --------------------------------------------------------------------

@program(lambda: (5,))
def np_arange_scaled(n):
    return 2 * np.arange(n)


@program(lambda: (3, torch.randn(1, 2, 3)))
def np_stack_to_tensor(n, y):
    arrays = [np.ones([2, n])]
    stacked = np.stack(arrays, axis=0)
    t = torch.tensor(stacked, dtype=torch.long)
    return t.unsqueeze(0) + y


@program(lambda: (3,))
def np_linspace_meshgrid_loop(steps):
    xs = np.linspace(-2.0, 1.0, 8, dtype=np.float64)
    ys = np.linspace(-1.0, 1.0, 6, dtype=np.float64)
    rx, iy = np.meshgrid(xs, ys, indexing="xy")
    x, y = rx.copy(), iy.copy()
    count = np.zeros_like(x)
    for _ in range(steps):
        x, y = x ** 2 - y ** 2 + rx, 2 * x * y + iy
        count = count + (np.sqrt(x ** 2 + y ** 2) <= 2)
    return count


# ---- numpy constants -----------------------------------------------------------------------------

@program(square)
def np_iinfo_max(x):
    return x + np.iinfo(np.int16).max


@program(square)
def np_finfo_min_eps(x):
    info = np.finfo(np.float32)
    return x + info.min, x * info.eps


@program(lambda: (torch.randn(10), 4096, np.int64(8)))
def np_int_scalar_argument(x, a, b):
    return x + (a % b)


@program(lambda: (torch.randn(10), 4096))
def np_issubdtype_of_type(x, n):
    return np.issubdtype(type(n), np.integer) + x


# ---- containers ----------------------------------------------------------------------------------

@program()
def deque_mixed_operations(a, b):
    d = collections.deque([a, b])
    d.append(a + 1)
    d.extend([a, b])
    d.insert(0, "first")
    last = d.pop()
    other = collections.deque([last])
    d.extendleft(other)
    other.clear()
    d.extend(other)
    d[2] = "set"
    d = d.copy()
    d.append(d.popleft())
    d.rotate(1)
    return d


@program()
def deque_maxlen_window(a, b):
    window = collections.deque(maxlen=2)
    for t in (a, b, a * b):
        window.append(t)
    return sum(window), len(window), window.maxlen


@program()
def min_max_of_sizes_and_floats(a, b):
    n = max(a.shape[0], 2.5)
    m = min(a.size(1), b.shape[0], 7)
    return a * n + m, max([a.shape[0], 1, b.shape[1]]), min(a.shape)


@program()
def min_max_of_symbolic_floats(a, b):
    return a * max(a.shape[0] * 1.5, a.shape[1]), min(b.shape[0] / 2, 1, b.shape[1] - 0.5)


class Bag:
    """A user container with the sequence protocols."""

    def __init__(self, items):
        self.items = list(items)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]

    def __contains__(self, item):
        return any(item is x for x in self.items)

    def __iter__(self):
        return iter(self.items)


class Indexed:
    """Iteration through __getitem__ alone (IndexError ends it)."""

    def __init__(self, *items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]


@program()
def user_container_protocols(a, b):
    bag = Bag([a, b, a * 2])
    total = sum(t for t in bag)
    return total + len(bag) + bag[-1], a in bag, (a + 1) in bag


@program()
def user_getitem_iteration(a, b):
    return [t * 2 for t in Indexed(a, b)], list(reversed(Bag([a, b])))


# ---- more after torch's test_unspec.py and test_misc.py ------------------------------------------

@program(lambda: (torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64), torch.ones(2, 2, dtype=torch.int64),
                  np.int64(12)))
def np_scalars_in_a_dict(x, y, z):
    pair = [x + y, y, False]
    ax, ay = x.numpy(), y.numpy()
    return {"x": x, "z": z, "a": ay.sum(), "b": pair, "c": ay[0][0] / 68, "d": ax.sum(), "e": ax + ay}, x + z


@program(lambda: (np.int64(12), 10, torch.ones(2, 2, dtype=torch.float64)))
def np_scalar_builtin_max_min(a, b, t):
    return t + 1, max(a, b), min(a - 4, b)


@program(lambda: (np.arange(8),))
def np_input_break_between(arr):
    arr = arr ** 2
    print("a break")
    return 2 * arr


@program(lambda: (np.array([42], dtype=np.uint16),))
def np_input_isinstance_tensor(arr):
    return isinstance(arr, torch.Tensor), isinstance(arr, np.ndarray)


@program(lambda: (np.arange(12.0).reshape(3, 4), np.array([[0, 1, 2, 3], [3, 2, 1, 0]]).T[:3]))
def np_take_along_axis(x, idx):
    return np.take_along_axis(x, idx, 1)


@program(lambda: (torch.randn(4, 5),))
def np_concat_and_expand_dims(x):
    a = x.numpy()
    both = np.concatenate([a, a * 2], axis=0)
    return np.expand_dims(both, 0).shape, np.squeeze(both[None]).sum(axis=1), np.cumsum(a, axis=1)


@program(lambda: (torch.randn(4, 5),))
def np_argmax_sort_free(x):
    a = x.numpy()
    return np.argmax(a, axis=1), np.abs(a).max(), np.maximum(a, 0.0), np.exp(a).dtype


@program(lambda: (torch.randn(3, 4),))
def np_float32_stays_float32(x):
    a = x.numpy()
    return a * 2.0, a + np.float32(1.0), (a / 3).dtype, np.sqrt(np.abs(a)).dtype


@program(lambda: (torch.randn(6),))
def np_results_back_to_torch(x):
    a = np.clip(x.numpy(), -1.0, 1.0)
    t = torch.from_numpy(a)
    return torch.relu(t) + x, torch.as_tensor(np.ones(6)), torch.tensor(a * 2)


@program(lambda: (torch.randn(2, 3),))
def np_fft_and_linalg(x):
    a = x.numpy()
    return np.fft.fftshift(a), np.linalg.norm(a), np.dot(a, a.T)


@program(lambda: (torch.randn(3),))
def np_ufunc_out_is_out(x):
    arr = np.arange(5)
    out = np.empty((arr.shape[0], arr.shape[0]))
    res = np.sin(arr, out=out)
    return res is out, out, x + 1


@program(lambda: (torch.tensor([2.3]), np.array([1, 2, 3])))
def np_isinstance_branch(x, m):
    if isinstance(m, np.ndarray):
        return x + m.sum()
    return x - 1


@program(lambda: ())
def np_scalars_into_long_tensor():
    arr = np.array([1, 2, 3, 4, 5, 6], dtype=np.int64)
    picked = [arr[0], arr[2], arr[4]]
    return torch.LongTensor(picked)


@program()
def min_max_sorted_over_size_tuples(a, b):
    widest = max((a.shape[1], "a"), (b.shape[0], "b"))
    ranked = sorted([(b.shape[1], 1), (3, 0), (a.shape[0], 2)], reverse=True)
    return a * widest[0] + ranked[0][0], a.shape < (3, 5), [b.shape[0]] >= [3, 1]
