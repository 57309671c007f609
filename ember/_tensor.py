"""``Tensor``: an array of some backend (NumPy, or a device's) plus autograd metadata.

Operators and methods that compute something are declared once in ``ember.ops`` and bound
here by ``ember.ops._bind``; this module holds the data model: construction, properties,
conversions and the autograd API (``backward``, ``grad``, hooks, ``detach``).
"""

from __future__ import annotations

import warnings
import weakref

from ._backend import (
    DIFF_KINDS,
    FLOAT_KINDS,
    data_ptr,
    device_of,
    generic,
    host,
    is_array,
    module_for_device,
    ndarray,
    to_device_array,
    to_host,
    xp_of,
)
from ._backend import dtypes as _dt
from ._backend import trace as _trace
from ._backend.device import device, to_device
from .autograd.grad_mode import set_enabled as _set_enabled
from .autograd.grad_mode import state as _grad_state
from .utils.hooks import HookDict, add_hook

_new = object.__new__


class Size(tuple):
    """``torch.Size``: a tuple of ints that prints as ``torch.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out


class _Extra:
    """Rarely used per-tensor state, allocated on first use to keep Tensor creation cheap."""

    __slots__ = ("hooks", "inference", "name", "post_acc_hooks", "retains_grad", "tangent")

    def __init__(self) -> None:
        self.hooks = None
        self.tangent = None  # forward-mode AD's tangent (autograd/forward_ad.py)
        self.retains_grad = False
        self.post_acc_hooks = None
        self.inference = False
        self.name = None


NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)
# the C++ type names torch's messages use for a dtype
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
              "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}
REQUIRES_GRAD_DTYPE_ERROR = "only Tensors of floating point and complex dtype can require gradients"


# [autograd.graph.AccumulateGrad], put here by that module, which builds on Tensor. NOTE: an
# import statement in ``_accumulator`` cost ~0.6 µs per new accumulator (each parameter, each
# step: the graph owns it)
_accumulate_grad: list = [None]


def _make(data: ndarray, grad_fn=None) -> Tensor:
    """Wrap an array (made by an op) as a Tensor: the hot path of every op."""
    t = _new(Tensor)
    t._data = data
    t._grad_fn = grad_fn
    t._requires_grad = grad_fn is not None
    t._output_nr = 0
    t._vc = [0]
    t._grad = None
    t._base = None
    t._view = None
    t._acc = None
    t._extra = None
    t._meta = None
    if _grad_state.inference:
        t._get_extra().inference = True
    return t


def _refresh_view(t: Tensor) -> None:
    """Re-derive a view's history if its base's history changed (an in-place op) since.

    The view's values changed with its base, so its gradient must flow through the base's new
    history, as torch's regenerated ``AsStridedBackward0`` does. Cheap when nothing changed: it
    walks the view's chain back to the node of the base it was made from.
    """
    base_fn = t._base._grad_fn
    chain = t._view
    fn = t._grad_fn
    if base_fn is None or chain is None or fn is None:
        return  # (a view made without grad, e.g. under no_grad, stays without)
    for _ in chain:
        fn = fn.next_functions[0][0]
        if fn is None:
            break
    if fn is base_fn:
        return
    prev = _grad_state.grad_enabled
    _set_enabled(True)
    try:
        fresh = t._base._replay_view(chain)  # bound from ops/shape.py by the op registry
    finally:
        _set_enabled(prev)
    t._grad_fn = fresh._grad_fn
    t._output_nr = fresh._output_nr
    t._requires_grad = fresh._requires_grad


def _as_array(data, dtype: _dt.dtype | None) -> ndarray:
    """Array for ``ember.tensor(data)``: torch's inferred dtypes (Python floats -> float32).

    A copy on the device of ``data`` (a Tensor or an array), else a host array."""
    if isinstance(data, Tensor):
        arr = data._data
        return arr.copy() if dtype is None else arr.astype(dtype.np)
    if is_array(data):
        arr = xp_of(data).array(data, dtype=None if dtype is None else dtype.np, copy=True)
        if dtype is None:
            _dt.from_numpy_dtype(arr.dtype)  # reject dtypes torch lacks
        return arr
    leaves = None
    if isinstance(data, (list, tuple)):
        leaves = _leaf_types(data)
        if any(issubclass(t, Tensor) for t in leaves):
            data = _tensors_to_lists(data)
            leaves = _leaf_types(data)
    if dtype is not None:
        return host.array(data, dtype=dtype.np)
    arr = host.array(data)
    kind = arr.dtype.kind
    if kind in FLOAT_KINDS:
        if arr.dtype.itemsize == 8 and not _holds(data, leaves, host.float64):
            return arr.astype(_dt.get_default_dtype().np)
        return arr
    if kind == "i" or kind == "u":
        return arr.astype(host.int64, copy=False) if arr.dtype != host.uint8 else arr
    if kind == "b":
        return arr
    if kind == "c":  # torch: Python complex -> the default complex dtype (complex64)
        if arr.dtype.itemsize == 16 and not _holds(data, leaves, host.complex128):
            return arr.astype(_dt.get_default_dtype().to_complex().np)
        return arr
    if arr.size == 0 and kind != "O":
        return arr.astype(_dt.get_default_dtype().np)
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _holds(data, leaves: set | None, scalar_type) -> bool:
    """Whether ``data`` is, or nests (``leaves``: its leaf types), a NumPy scalar of
    ``scalar_type``: torch keeps the dtype of NumPy scalars (np.float64(1.0) -> float64), not
    of Python floats."""
    if isinstance(data, generic):
        return isinstance(data, scalar_type)
    return leaves is not None and any(issubclass(t, scalar_type) for t in leaves)


def _leaf_types(seq) -> set:
    """The types of the leaves of ``seq``'s nested lists and tuples. NOTE: a C-level ``map``
    per innermost list: ``tensor(list)`` of 64 x 64 floats took 1.1 ms with per-element
    generators (torch: 0.44), 0.1 ms so."""
    types = set(map(type, seq))
    nested = [t for t in types if issubclass(t, (list, tuple))]
    if nested:
        types.difference_update(nested)
        for x in seq:
            if isinstance(x, (list, tuple)):
                types |= _leaf_types(x)
    return types


def _tensors_to_lists(seq):
    return [x.tolist() if isinstance(x, Tensor) else
            _tensors_to_lists(x) if isinstance(x, (list, tuple)) else x for x in seq]


class UntypedStorage:
    """What ``Tensor.untyped_storage()`` returns (torch's ``UntypedStorage``, read-only): the
    size and address of the memory a tensor and its views share; no element access."""

    __slots__ = ("_root",)

    def __init__(self, root) -> None:
        self._root = root

    def nbytes(self) -> int:
        return int(self._root.nbytes)

    size = nbytes  # torch: an untyped storage's size is counted in bytes

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return data_ptr(self._root)

    def __sizeof__(self) -> int:  # sys.getsizeof: the object and its bytes, as torch
        return object.__sizeof__(self) + self.nbytes()


class Tensor:
    """A multi-dimensional array that can record the operations applied to it.

    ``Tensor(3, 5)`` and ``Tensor([1, 2])`` are torch's legacy constructors (default dtype);
    ``ember.tensor(data)`` is the usual way to make one.

    ``_meta`` caches the shape-and-dtype entry of ``_data`` (``autograd.record.meta_entry``)
    that recording an op stores for the engine, or is None: an elementwise op's output takes
    its operands' entry, and an input's is kept once computed, so a chain of such ops never
    reads an array's shape (``_record1``/``_record2``). Whatever replaces ``_data`` sets it
    back to None.
    """

    __slots__ = (
        "__weakref__",
        "_acc",
        "_base",
        "_data",
        "_extra",
        "_grad",
        "_grad_fn",
        "_meta",
        "_output_nr",
        "_requires_grad",
        "_vc",
        "_view",
    )

    __array_priority__ = 1000  # make ndarray + Tensor defer to Tensor.__radd__

    def __new__(cls, *args, **kwargs):
        dev = to_device(kwargs.pop("device", None))
        dtype = _dt.to_dtype(kwargs.pop("dtype")) if "dtype" in kwargs else cls._legacy_dtype()
        if kwargs:
            raise TypeError(f"Tensor() got unexpected keyword arguments {sorted(kwargs)}")
        if len(args) == 1 and not isinstance(args[0], (int, Size)):
            data = to_device_array(_as_array(args[0], dtype), dev)
        else:
            shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
            if not all(isinstance(s, int) for s in shape):
                raise TypeError(f"Tensor(): expected a sequence of ints as the size, got {args}")
            data = module_for_device(dev).empty(shape, dtype=dtype.np)
        t = _make(data)
        if cls is not Tensor:
            t = _rewrap(t, cls)
        return t

    @classmethod
    def _legacy_dtype(cls) -> _dt.dtype:
        return _dt.get_default_dtype()

    # ------------------------------------------------------------------ basic properties
    @property
    def dtype(self) -> _dt.dtype:
        return _dt._FROM_NP[self._data.dtype]

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape as ``torch.Size``, or the length of dimension ``dim``."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    @property
    def device(self) -> device:
        """Where the data lives: derived from the array (NumPy's: cpu; a strict array's: strict)."""
        return device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return False

    @property
    def is_xpu(self) -> bool:
        return False

    @property
    def is_mps(self) -> bool:
        return False

    @property
    def is_cpu(self) -> bool:
        return device_of(self._data).type == "cpu"

    @property
    def layout(self) -> str:
        return "torch.strided"

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def is_meta(self) -> bool:
        return False

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind in FLOAT_KINDS

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        """Strides in elements, as torch counts them (NumPy counts bytes)."""
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim, "stride")]

    def is_contiguous(self, memory_format=None) -> bool:
        return self._data.flags.c_contiguous

    def storage_offset(self) -> int:
        base = self._storage_root()
        return (data_ptr(self._data) - data_ptr(base)) // self._data.itemsize

    def _storage_root(self) -> ndarray:
        arr = self._data
        while is_array(arr.base):
            arr = arr.base
        return arr

    def data_ptr(self) -> int:
        return data_ptr(self._data)

    def untyped_storage(self) -> UntypedStorage:
        return UntypedStorage(self._storage_root())

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's storage has seen (shared with its views).

        The counter itself is ``_vc``, a one-element list that views and detached aliases share.
        """
        return self._vc[0]

    def is_inference(self) -> bool:
        return self._extra is not None and self._extra.inference

    def _get_extra(self) -> _Extra:
        extra = self._extra
        if extra is None:
            extra = self._extra = _Extra()
        return extra

    @property
    def name(self):
        return None if self._extra is None else self._extra.name

    # ------------------------------------------------------------------ autograd state
    @property
    def requires_grad(self) -> bool:
        if self._base is not None:
            _refresh_view(self)
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and self._grad_fn is None and self._data.dtype.kind not in DIFF_KINDS:
            raise RuntimeError(REQUIRES_GRAD_DTYPE_ERROR)
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set whether a leaf records operations (freezing: ``p.requires_grad_(False)``)."""
        if self._base is not None:
            _refresh_view(self)
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if requires_grad and self._data.dtype.kind not in DIFF_KINDS:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._extra is not None and self._extra.inference \
                and not _grad_state.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op (all tensors that don't require grad)."""
        if self._base is not None:
            _refresh_view(self)
        return self._grad_fn is None

    @property
    def grad_fn(self):
        if self._base is not None:
            _refresh_view(self)
        return self._grad_fn

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self) -> Tensor | None:
        if self._grad_fn is not None and not (self._extra is not None
                                              and self._extra.retains_grad):
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_CPP_NAMES[value.dtype.name]}'"
                    f" to a tensor with grad_dtype '{self.dtype._legacy[:-6]}'. The gradient "
                    "must match the tensor's grad_dtype (defaults to the tensor's dtype). You "
                    "can set the tensor's grad_dtype attribute with a specific dtype, or None to "
                    "allow any dtype. Set grad_dtype with caution. Diverging the dtypes of a "
                    "tensor and its gradient may break downstream systems that assume they "
                    "match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                    "and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._extra is not None and self._extra.retains_grad

    def _is_view(self) -> bool:
        return self._base is not None

    def _accumulator(self):
        """This leaf's AccumulateGrad node; cached weakly so the graph owns it, as in torch."""
        acc = self._acc
        if acc is not None:
            node = acc()
            if node is not None:
                return node
        node = _accumulate_grad[0](self)
        self._acc = weakref.ref(node)
        return node

    def _edge(self):
        """The (node, output_nr) a consumer of this tensor links to; (None, 0) if no grad."""
        if self._base is not None:
            _refresh_view(self)
        if self._grad_fn is not None:
            return (self._grad_fn, self._output_nr)
        if self._requires_grad:
            return (self._accumulator(), 0)
        return (None, 0)

    @property
    def data(self) -> Tensor:
        """The same storage without history (changes to it are not tracked by autograd)."""
        return _make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._meta = None

    def detach(self) -> Tensor:
        """A new tensor sharing storage (and version counter), cut from the graph."""
        t = _make(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that doesn't require grad."""
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for a non-leaf after backward (a no-op on leaves)."""
        if self._base is not None:
            _refresh_view(self)
        if self._grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        extra = self._get_extra()
        if extra.retains_grad:
            return
        extra.retains_grad = True
        ref = weakref.ref(self)  # the node must not keep its output alive (no cycle)

        def retain(grad):
            t = ref()
            if t is None:
                return
            if t._grad is None:
                t._grad = grad.detach().clone() if not grad._requires_grad else grad
            else:
                t._grad = t._grad + grad

        self._grad_fn._get_hooks().retain[self._output_nr] = retain

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new one."""
        if self._base is not None:
            _refresh_view(self)
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            return self._grad_fn._register_tensor_prehook(self._output_nr, hook)
        extra = self._get_extra()
        if extra.hooks is None:
            extra.hooks = HookDict()
        return add_hook(extra.hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after this leaf's ``.grad`` has been accumulated."""
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        extra = self._get_extra()
        if extra.post_acc_hooks is None:
            extra.post_acc_hooks = HookDict()
        return add_hook(extra.post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (``torch.Tensor.backward``)."""
        from .autograd.api import backward as _backward  # cycle: autograd builds on Tensor
        _backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # ------------------------------------------------------------------ conversions
    def numpy(self, *, force: bool = False) -> ndarray:
        """The underlying array (shares memory), as ``torch.Tensor.numpy``; a CPU tensor only,
        unless ``force`` (then a host copy of a device tensor's data)."""
        if force:
            return to_host(self._data)
        self._check_host()
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if _trace.state.rec is not None:  # the data leaves for Python: ember.compile stops
            _trace.graph_break("Tensor.numpy(): the data leaves for NumPy code")
            return _trace.plain(self._data)
        return self._data

    def _check_host(self) -> None:
        if type(self._data) is not ndarray and device_of(self._data).type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")

    def __array__(self, dtype=None, copy=None):
        self._check_host()
        if self._requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if _trace.state.rec is not None:
            _trace.graph_break("numpy.asarray(tensor): the data leaves for NumPy code")
            data = _trace.plain(self._data)
            return data if dtype is None else data.astype(dtype)
        return self._data if dtype is None else self._data.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar: bool = False) -> Tensor:
        """NumPy ufuncs on tensors (``np.exp(t)``, ``np.add(t, 1)``) give tensors, as in torch:
        NumPy's result dtype, a bool result as uint8 (torch's ``__array_wrap__``)."""
        array = host.asarray(array)
        if array.dtype == host.bool_:
            array = array.astype(host.uint8)
        return _make(array)

    def item(self):
        """The single value as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.item()

    def tolist(self):
        return self._data.tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous"
                               if self._data.size == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data)

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self._data.item())

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self._data.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self._data.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr  # lazy: printing loads on first use
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and spec:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._data, self._requires_grad))

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        t = _make(self._data.copy())
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        if type(self) is not Tensor:
            t = _rewrap(t, type(self))
        memo[id(self)] = t
        return t

    # ------------------------------------------------------------------ dtype / device moves
    # ``to`` is bound from ops/unary.py by the op registry (a copy or cast is an op)

    def cpu(self, memory_format=None) -> Tensor:
        """A copy on the host (self if already there), differentiable (``ToCopyBackward0``)."""
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> Tensor:
        to_device("cuda")
        return self

    def type(self, dtype=None, non_blocking: bool = False):
        """No argument: the legacy type name ('torch.FloatTensor'); else a cast to that type."""
        if dtype is None:
            return "torch." + self.dtype._legacy
        return self.to(_dt.to_dtype(dtype))

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(other.dtype)

    def float(self) -> Tensor:
        return self.to(_dt.float32)

    def double(self) -> Tensor:
        return self.to(_dt.float64)

    def half(self) -> Tensor:
        return self.to(_dt.float16)

    def bfloat16(self) -> Tensor:
        return self.to(_dt.bfloat16)

    def long(self) -> Tensor:
        return self.to(_dt.int64)

    def int(self) -> Tensor:
        return self.to(_dt.int32)

    def short(self) -> Tensor:
        return self.to(_dt.int16)

    def char(self) -> Tensor:
        return self.to(_dt.int8)

    def byte(self) -> Tensor:
        return self.to(_dt.uint8)

    def bool(self) -> Tensor:
        return self.to(_dt.bool_)

    @property
    def T(self) -> Tensor:
        if self._data.ndim == 0:
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity "
                          "in these cases.", UserWarning, stacklevel=2)
        elif self._data.ndim != 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release. Consider `x.mT` to transpose batches of matrices or "
                          "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(*range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self) -> Tensor:
        if self._data.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self._data.ndim}-D tensor.")
        return self.transpose(-2, -1)


def _rebuild(data: ndarray, requires_grad: bool) -> Tensor:
    t = _make(data)
    t._requires_grad = requires_grad
    return t


def _rewrap(t: Tensor, cls: type) -> Tensor:
    """Re-home a freshly made Tensor's fields in an instance of a Tensor subclass."""
    out = _new(cls)
    for slot in Tensor.__slots__:
        if slot != "__weakref__":
            setattr(out, slot, getattr(t, slot))
    return out


def _wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """Torch's negative-dim wrapping with its IndexError wording."""
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim
