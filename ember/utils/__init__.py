"""``ember.utils``: ``hooks`` and ``data`` (loaded on first use, keeping ``import ember`` light)."""


def __getattr__(name: str):
    import importlib
    if name in ("data", "hooks"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
