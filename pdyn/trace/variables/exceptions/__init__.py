"""Exceptions as values: their fields, `str`/`repr`, and the stack slot an `except` handler holds."""
