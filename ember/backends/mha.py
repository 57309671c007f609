"""``ember.backends.mha``: the fast-path switch of ``MultiheadAttention`` and
``TransformerEncoder`` (on by default, as in torch). ember has one path; the flag is kept."""

from __future__ import annotations

_is_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path is enabled (``torch.backends.mha.get_fastpath_enabled``)."""
    return _is_fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
