"""``nn.Parameter``: a leaf tensor that a Module registers as one of its parameters."""

from __future__ import annotations

from .._tensor import Tensor, _make, _rewrap
from ..ops.creation import empty


class Parameter(Tensor):
    """``torch.nn.Parameter(data=None, requires_grad=True)``: shares ``data``'s memory."""

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, but got "
                            f"{type(data).__name__}")
        t = _make(data._data)
        t._vc = data._vc
        p = _rewrap(t, cls)
        p.requires_grad_(requires_grad)
        return p

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self._requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)

