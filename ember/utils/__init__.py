"""``ember.utils``: ``hooks`` and ``data`` (loaded on first use, keeping ``import ember`` light)."""
import importlib


def __getattr__(name: str):
    if name in ("data", "hooks"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
