"""Guards: the facts a cache entry assumed (guard classes, the size guards a ShapeEnv implies) and
the one generated `check(L, G)` function that tests them. See docs/architecture.md."""
