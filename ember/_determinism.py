"""``ember.use_deterministic_algorithms`` and friends: torch's switches, recorded.

Every ember CPU op is deterministic (NumPy's kernels give the same bits for the same inputs
and thread count), so no op ever warns or raises under ``mode=True``; the functions keep the
mode and answer as torch does, with torch's checks.
"""

from __future__ import annotations

_state = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms``: record the mode (ember's ops all comply)."""
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _state["enabled"] = mode
    _state["warn_only"] = warn_only  # kept even with mode=False, as torch does


def are_deterministic_algorithms_enabled() -> bool:
    return _state["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``torch.set_deterministic_debug_mode``: ``'default'``/0 off, ``'warn'``/1 warn only,
    ``'error'``/2 on."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = names[debug_mode]
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    elif debug_mode == 1:
        use_deterministic_algorithms(True, warn_only=True)
    elif debug_mode == 2:
        use_deterministic_algorithms(True)
    else:
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (on), as torch."""
    if not _state["enabled"]:
        return 0
    return 1 if _state["warn_only"] else 2
