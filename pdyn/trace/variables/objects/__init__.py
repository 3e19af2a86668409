"""Instances of user classes: plain objects, nn.Modules, user subclasses of dict/list/tuple, and the rules of their own methods."""
