"""guards: see docs/architecture.md."""
