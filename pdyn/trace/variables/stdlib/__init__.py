"""The standard library's functions and objects: itertools/functools helpers, operator getters, os.environ, inspect.signature, lru_cache."""
