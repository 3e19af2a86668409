"""Hook: the generated wrapper that intercepts calls, the per-code cache, the recompile policy and
one cache miss end to end (compile_frame). See docs/architecture.md."""
