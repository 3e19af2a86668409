"""Python semantics under pdyn: calls of every shape, inlining, methods of plain objects, recursion."""

from __future__ import annotations

import functools

import torch

from tests.helpers import check


def scale_shift(x, scale=2.0, *, shift=0.0):
    return x * scale + shift


def posonly(a, b, /, c=1):
    return a * b + c


def varargs(*args, **kwargs):
    total = sum(args)
    for k in sorted(kwargs):
        total = total + kwargs[k]
    return total


def recursive_sum(xs, depth):
    if depth == 0:
        return xs[0]
    return xs[depth] + recursive_sum(xs, depth - 1)


class Affine:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def __eq__(self, other):
        return type(other) is type(self) and all(
            torch.equal(torch.as_tensor(a), torch.as_tensor(b)) for a, b in ((self.w, other.w), (self.b, other.b)))

    def __call__(self, x):
        return self.apply(x) * 1

    def apply(self, x):
        return x * self.w + self.b

    @staticmethod
    def twice(x):
        return x * 2

    @classmethod
    def name(cls):
        return cls.__name__

    @property
    def total(self):
        return self.w + self.b


def test_positional_keyword_and_default_arguments():
    def f(x):
        return scale_shift(x), scale_shift(x, 3.0), scale_shift(x, scale=0.5, shift=1.0), scale_shift(x, shift=-1)

    check(f, torch.randn(3))


def test_keyword_only_argument_missing_raises_type_error():
    def f(x):
        return scale_shift(x, 1.0, 2.0)

    check(f, torch.randn(3), graphs=0)


def test_positional_only_arguments():
    def f(x):
        return posonly(x, 2), posonly(x, x, c=3)

    check(f, torch.randn(3))


def test_positional_only_passed_by_keyword_raises():
    def f(x):
        return posonly(x, b=2)

    check(f, torch.randn(3), graphs=0)


def test_star_args_and_star_kwargs_calls():
    def f(x, y):
        args = (x, y)
        kwargs = {"a": x * 2, "b": 1}
        return varargs(*args), varargs(x, *args, **kwargs), varargs(*[x], c=y)

    check(f, torch.randn(2), torch.randn(2))


def test_star_kwargs_into_named_parameters():
    def f(x):
        opts = {"scale": 3.0, "shift": 1.0}
        return scale_shift(x, **opts), scale_shift(**{"x": x})

    check(f, torch.randn(2))


def test_function_with_star_args_parameter_called_directly():
    def f(*xs, weight=1.0):
        return sum(xs) * weight

    check(f, torch.randn(2), torch.randn(2), weight=0.5)


def test_optimized_function_with_kwargs_parameter():
    def f(x, **opts):
        for name, value in opts.items():
            x = x + value if name.startswith("add") else x * value
        return x

    check(f, torch.randn(2), add1=1.0, mul=2.0)


def test_lambda_and_nested_function_with_defaults():
    def f(x):
        sq = lambda t: t * t  # noqa: E731

        def clamp(t, lo=-1.0, hi=1.0):
            return t.clamp(lo, hi)

        return clamp(sq(x)), clamp(x, hi=0.5)

    check(f, torch.randn(4))


def test_recursion_with_constant_depth():
    def f(xs):
        return recursive_sum(xs, 3)

    check(f, [torch.randn(2) for _ in range(4)])


def test_methods_of_plain_python_object():
    def f(x, obj):
        return obj.apply(x), obj(x), Affine.twice(x), obj.twice(x), obj.name(), obj.total

    check(f, torch.randn(2), Affine(torch.randn(2), 0.5))


def test_method_object_created_outside_as_closure():
    aff = Affine(2.0, 1.0)

    def f(x):
        return aff.apply(x)

    check(f, torch.randn(2))


def test_bound_method_stored_in_variable():
    def f(x, obj):
        fn = obj.apply
        return fn(x) + fn(x + 1)

    check(f, torch.randn(2), Affine(3.0, torch.ones(2)))


def test_higher_order_function_passed_as_argument():
    def apply_all(fns, x):
        for fn in fns:
            x = fn(x)
        return x

    def f(x):
        return apply_all([torch.relu, lambda t: t + 1, torch.neg, abs], x)

    check(f, torch.randn(4))


def test_functools_partial_of_user_function():
    part = functools.partial(scale_shift, scale=4.0)

    def f(x):
        return part(x, shift=1.0)

    check(f, torch.randn(2))


def test_too_many_positional_arguments_raises_like_eager():
    def f(x):
        return posonly(x, 1, 2, 3)

    check(f, torch.randn(2), graphs=0)


def test_generator_function_call_is_traced():
    def gen(x):
        yield x + 1
        yield x + 2

    def f(x):
        return list(gen(x))

    check(f, torch.randn(2), graphs=1)


def test_call_through_dict_of_functions():
    table = {"relu": torch.relu, "double": lambda t: t * 2}

    def f(x, name):
        return table[name](x)

    check(f, torch.randn(3), "relu")
    check(f, torch.randn(3), "double")


def test_decorated_helper_with_functools_wraps():
    def logged(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            return fn(*args, **kwargs) + 1

        return inner

    @logged
    def plus(a, b):
        return a + b

    def f(x):
        return plus(x, b=2)

    check(f, torch.randn(2))


def test_functools_partial_made_in_trace():
    def f(x):
        part = functools.partial(scale_shift, shift=2.0)
        again = functools.partial(part, x)
        return part(x, 3.0), again(scale=0.5)

    check(f, torch.randn(2))


class Scaled(Affine):
    def apply(self, x):
        return super().apply(x) * 2 + super(Scaled, self).twice(x)


def test_super_method_call_in_subclass():
    def f(x, obj):
        return obj.apply(x), obj(x)

    check(f, torch.randn(2), Scaled(torch.randn(2), 1.0))


def test_super_forward_of_module_subclass():
    class DoubleLinear(torch.nn.Linear):
        def forward(self, x):
            return super().forward(x) * 2

    check(DoubleLinear(3, 2), torch.randn(4, 3))
