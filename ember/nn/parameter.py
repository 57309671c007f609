"""``nn.Parameter``: a leaf tensor that a Module registers as one of its parameters; and the
uninitialised parameter and buffer of lazy modules (``torch.nn.parameter``)."""

from __future__ import annotations

import sys

from .._backend import dtypes
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



# ---------------------------------------------------------------------- lazy (uninitialised)
_raw_data = Tensor._data.__get__  # the slot's own getter: bypasses the mixin's guard below


def _uninitialized_error(cls: type, where: str) -> ValueError:
    return ValueError(
        f"Attempted to use an uninitialized parameter in {where}. This error happens when you "
        "are using a `LazyModule` or explicitly manipulating "
        f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call `forward` "
        "with a dummy batch to initialize the parameters before calling torch functions")


class UninitializedTensorMixin:
    """torch's ``UninitializedTensorMixin``: a tensor whose shape is not known yet.

    It holds an empty array that carries only its dtype and device. The moves torch allows
    (``to``, ``float``, ``cpu``, ``size``, ``copy_`` from another uninitialised tensor, ...)
    work; anything else reaches the array and raises torch's ``ValueError``. ``materialize``
    gives it a shape and turns it into ``cls_to_become``.
    """

    __slots__ = ()
    cls_to_become: type

    def __getattribute__(self, name: str):
        # NOTE: every op reads ``_data``, so guarding that one name blocks them all, at no cost
        # to ordinary tensors (only this class pays for the Python-level lookup).
        if name == "_data":
            where = sys._getframe(1).f_code.co_name
            raise _uninitialized_error(type(self), f"<method '{where}'>")
        return object.__getattribute__(self, name)

    def _shadow(self) -> Tensor:
        """A plain empty tensor with this one's dtype and device (for the allowed queries)."""
        return _make(_raw_data(self))

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialised values) and become ``cls_to_become``."""
        shadow = self._shadow()
        data = empty(shape, device=device if device is not None else shadow.device,
                     dtype=dtype if dtype is not None else shadow.dtype)
        self._data = data._data
        self._meta = None
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    @property
    def dtype(self):
        return self._shadow().dtype

    @property
    def device(self):
        return self._shadow().device

    @property
    def data(self) -> Tensor:
        return self

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = _raw_data(value) if is_lazy(value) else value._data
        self._meta = None

    def size(self, dim: int | None = None):
        return self._shadow().size(dim)

    def is_floating_point(self) -> bool:
        return self._shadow().is_floating_point()

    def is_complex(self) -> bool:
        return False

    def get_device(self) -> int:
        return self._shadow().get_device()

    def to(self, *args, **kwargs):
        """Same class, new dtype/device (torch allows moving an uninitialised tensor)."""
        moved = self._shadow().to(*args, **kwargs)
        if moved._data is _raw_data(self):
            return self
        out = _rewrap(moved, type(self))
        out._requires_grad = self._requires_grad
        return out

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    def half(self):
        return self.to(dtypes.float16)

    def cpu(self, memory_format=None):
        return self.to("cpu")

    def copy_(self, src: Tensor, non_blocking: bool = False):
        """Copying one uninitialised tensor into another is a no-op, as in torch."""
        if is_lazy(src):
            return self
        return self._shadow().copy_(src)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self._requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, self.device, self.dtype)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


def _uninitialized(cls: type, requires_grad: bool, device, dtype):
    out = _rewrap(empty(0, device=device, dtype=dtype), cls)
    out._requires_grad = requires_grad
    return out


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """``torch.nn.parameter.UninitializedParameter(requires_grad=True, device=None,
    dtype=None)``: a Parameter whose shape a lazy module infers on its first forward."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return _uninitialized(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """``torch.nn.parameter.UninitializedBuffer(requires_grad=False, device=None,
    dtype=None)``: a buffer whose shape a lazy module infers on its first forward."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        return _uninitialized(cls, requires_grad, device, dtype)
