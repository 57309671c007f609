"""``ember.device``: torch's device object, and the default device of creation functions.

Tensors live on ``cpu`` (NumPy) or on ``strict``, the CuPy-like CPU stand-in that keeps the
backend seam honest (``_backend/strict.py``); ``cuda`` is known but has no backend yet."""

from __future__ import annotations

_KNOWN_TYPES = ("cpu", "cuda", "meta", "mps", "strict")
_BACKED = ("cpu", "strict")  # the device types that have an array backend


class device:
    """``torch.device('cpu')``, ``torch.device('cuda', 0)``, ``torch.device('cuda:1')``."""

    __slots__ = ("index", "type")

    def __init__(self, type, index: int | None = None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if isinstance(type, int):
            raise RuntimeError(
                "ember has no accelerator backend yet: device index "
                f"{type} needs CUDA (use 'cpu')"
            )
        if not isinstance(type, str):
            raise TypeError(f"device() expected a string or device, but got {type!r}")
        name, _, idx = type.partition(":")
        if name not in _KNOWN_TYPES:
            raise RuntimeError(
                "Expected one of cpu, cuda, meta, mps device type at start of device string: "
                f"{type}"
            )
        if idx:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            index = int(idx)
        self.type = name
        self.index = index

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))


CPU = device("cpu")
STRICT = device("strict")
_default = CPU


def to_device(value) -> device:
    """Resolve a device argument (None: the default device); raise torch's error for a backend
    ember lacks."""
    if value is None:
        return _default
    dev = value if isinstance(value, device) else device(value)
    if dev.type not in _BACKED:
        raise AssertionError(
            f"Torch not compiled with CUDA enabled: ember has no {dev.type} backend yet; "
            "use device='cpu' (ember.cuda.is_available() is False)"
        )
    return CPU if dev.type == "cpu" else STRICT


def get_default_device() -> device:
    """``torch.get_default_device``: where creation functions put tensors by default."""
    return _default


def set_default_device(value) -> None:
    """``torch.set_default_device``: creation functions without ``device=`` use ``value``
    (None resets to the CPU)."""
    global _default
    _default = CPU if value is None else to_device(value)
