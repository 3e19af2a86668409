"""Trackers of Python's own containers: tuples, torch.Size, lists, dicts, sets, defaultdict and deque, f-strings."""
