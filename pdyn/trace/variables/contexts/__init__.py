"""Context managers pdyn models itself: grad mode, autocast and inference_mode, nullcontext, @contextmanager."""
