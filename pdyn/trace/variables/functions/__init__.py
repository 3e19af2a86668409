"""User callables (functions inlined, bound methods, functools.partial) and builtins called without a rule."""
