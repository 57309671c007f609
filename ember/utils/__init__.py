"""``ember.utils``: ``hooks``, ``data`` and ``checkpoint`` (loaded on first use, keeping ``import
ember`` light)."""
import importlib

_SUBMODULES = ("data", "hooks", "checkpoint")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
