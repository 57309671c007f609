"""``ember.save`` / ``ember.load``: torch's checkpoint format, without torch.

Files are torch's zip format (``torch.save``'s default since 1.6): a pickle (protocol 2) in
``archive/data.pkl`` whose tensors are ``torch._utils._rebuild_tensor_v2`` calls on persistent
storage ids ``('storage', torch.FloatStorage, key, 'cpu', numel)``, the raw bytes of each
storage in ``archive/data/<key>`` (64-byte aligned, as torch aligns them), and the small
records torch 2.x writes beside them. ``torch.load(path, weights_only=True)`` reads ember's
files; ``ember.load`` reads torch's (and torch's legacy non-zip format).

Loading never imports torch and never runs code named by the file: a restricted unpickler maps
the few globals a checkpoint needs (the tensor rebuild functions, storage types, ``torch.Size``,
dtypes, devices, ``OrderedDict`` and a handful of builtins) to ember functions, and refuses any
other global with ``pickle.UnpicklingError`` before anything is called, as torch's
``weights_only=True`` does. Whole objects (``torch.save(model)``) follow torch's contract:
classes load once allowlisted (``add_safe_globals`` / ``safe_globals``); ``weights_only=False``
also admits ember's own modules, optimizers and schedulers (torch's map to them by name), never
a class the user has not allowlisted. Every size the file claims (zip records, storages, pickle
lengths) is checked against the file's real size before memory is allocated for it.

``save_safetensors`` / ``load_safetensors`` use the optional ``safetensors`` package.
"""

from __future__ import annotations

import _compat_pickle
import collections
import io
import os
import pickle
import struct
import sys
import tempfile
import uuid
import warnings
import zipfile
from typing import Any, BinaryIO, ClassVar

from ._backend import data_ptr, host, is_array, to_device_array, to_host, xp_of
from ._backend import dtypes as _dt
from ._backend.device import device as _device
from ._backend.device import to_device as _to_device
from ._tensor import Size, Tensor, _make
from .utils.hooks import HookDict

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load",
           "load_safetensors", "safe_globals", "save", "save_safetensors"]

_ARCHIVE = "archive"
_ALIGNMENT = 64  # torch aligns every record's data to 64 bytes (its ``.storage_alignment``)
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

# storage class name <-> NumPy dtype (torch's legacy typed-storage names, used in the pickle)
_STORAGE_OF = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "bfloat16": "BFloat16Storage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
}
_NP_OF_STORAGE = {name: host.dtype(dt) for dt, name in _STORAGE_OF.items()
                  if dt != "bfloat16"}
_NP_OF_STORAGE["UntypedStorage"] = host.dtype(host.uint8)
_BFLOAT16 = "BFloat16Storage"  # ml_dtypes' bfloat16, or (without it) float32 with a warning
_UNSUPPORTED_STORAGES = ("QInt8Storage", "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage",
                         "QUInt2x4Storage")

_CUDA_ERROR = ("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
               "is False. If you are running on a CPU-only machine, please use torch.load with "
               "map_location=torch.device('cpu') to map your storages to the CPU.")


# ====================================================================== saving
class _Global:
    """A name the pickle refers to by a GLOBAL opcode (``torch._utils _rebuild_tensor_v2``).

    ember writes torch's names without importing torch: the pickler below emits the opcode
    for these markers directly instead of looking the object up by its module.
    """

    __slots__ = ("module", "name")
    _cache: ClassVar[dict[tuple[str, str], _Global]] = {}

    def __new__(cls, module: str, name: str):
        key = (module, name)
        g = cls._cache.get(key)
        if g is None:  # one object per name, so the pickle memoizes it (BINGET after the first)
            g = object.__new__(cls)
            g.module, g.name = module, name
            cls._cache[key] = g
        return g

    def __call__(self, *args):  # pickle's save_reduce checks that a reduce function is callable
        raise TypeError(f"{self.module}.{self.name} is a name in a pickle, not a function")


class _StorageRef:
    __slots__ = ("key", "numel", "storage_type")

    def __init__(self, key: str, storage_type: _Global, numel: int):
        self.key, self.storage_type, self.numel = key, storage_type, numel


_REBUILD_TENSOR_V2 = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_TORCH_SIZE = _Global("torch", "Size")
_TORCH_DEVICE = _Global("torch", "device")


def _root(arr):
    """The array (of any backend) that owns ``arr``'s memory."""
    base = arr.base
    while base is not None and is_array(base):
        arr, base = base, base.base
    return arr


def _flat_memory(root):
    """The root array's memory as a 1-D array (a view), or None if it isn't one block."""
    if root.flags.c_contiguous:
        return root.reshape(-1)
    if root.flags.f_contiguous:
        return root.T.reshape(-1)
    return None


def _contiguous_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


class _TorchPickler(pickle._Pickler):
    """Pickles ember tensors as torch does: storages by persistent id, written once.

    NOTE: the pure-Python pickler, because only it lets a type's save routine write an opcode
    (the GLOBAL of a torch name ember can't import). Only the small object tree goes through
    it; tensor bytes are written separately.
    """

    dispatch: ClassVar[dict] = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol=protocol)
        self.storages: list = []  # flat host arrays, by key
        # (address, bytes, dtype) of a root's memory -> (its storage, the root, kept alive)
        self._by_root: dict[tuple[int, int, str], tuple] = {}

    def _save_global_marker(self, obj: _Global) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("ascii"))
        self.memoize(obj)

    dispatch[_Global] = _save_global_marker

    def _save_dtype(self, obj: _dt.dtype) -> None:
        self._save_global_marker(_Global("torch", obj.name))

    dispatch[_dt.dtype] = _save_dtype

    def persistent_id(self, obj):
        if type(obj) is _StorageRef:
            return ("storage", obj.storage_type, obj.key, "cpu", obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if type(obj) is HookDict:  # a Module's hook registry: an OrderedDict, as torch's
            return (collections.OrderedDict, (), None, None, iter(obj.items()))
        if type(obj) is Size:
            return (_TORCH_SIZE, (tuple(obj),))
        if type(obj) is _device:
            return (_TORCH_DEVICE, (str(obj),))
        return NotImplemented

    def _new_storage(self, flat) -> _StorageRef:
        name = _STORAGE_OF.get(flat.dtype.name)
        if name is None:
            raise TypeError(f"ember.save: can't save a tensor of NumPy dtype {flat.dtype}")
        ref = _StorageRef(str(len(self.storages)), _Global("torch", name), flat.size)
        self.storages.append(flat)
        return ref

    def _storage_view(self, arr):
        """(storage, offset, stride) of ``arr`` inside its base array's memory, or None.

        The storage is a host copy of the base's memory (the memory itself for NumPy), made
        once per base, so tensors viewing one device array share one storage, as in torch."""
        root = _root(arr)
        flat = _flat_memory(root)
        item = arr.itemsize
        if flat is None or arr.size == 0 or flat.nbytes % item:
            return None
        start = data_ptr(arr) - data_ptr(flat)
        if start % item or any(s < 0 or s % item for s in arr.strides):
            return None  # (negative or odd strides: torch has no such tensors; save a copy)
        key = (data_ptr(flat), flat.nbytes, arr.dtype.str)
        hit = self._by_root.get(key)
        if hit is None:
            flat = to_host(flat)
            typed = flat.view(host.uint8).view(arr.dtype) if flat.dtype != arr.dtype else flat
            hit = (self._new_storage(typed), root)  # keeps root alive, so its id stays unique
            self._by_root[key] = hit
        return hit[0], start // item, tuple(s // item for s in arr.strides)

    def _reduce_tensor(self, t: Tensor):
        if type(t) is not Tensor and type(t).__name__ == "Parameter":
            plain = _make(t._data)  # torch: _rebuild_parameter(<the data as a tensor>, ...)
            return (_REBUILD_PARAMETER, (plain, t._requires_grad, collections.OrderedDict()))
        arr = t._data
        view = self._storage_view(arr)
        if view is None:
            copy = host.ascontiguousarray(to_host(arr)).reshape(-1)
            view = (self._new_storage(copy), 0, _contiguous_strides(arr.shape))
        storage, offset, stride = view
        args = (storage, offset, tuple(arr.shape), stride, t._requires_grad,
                collections.OrderedDict())
        return (_REBUILD_TENSOR_V2, args)


def _aligned_extra(zf: zipfile.ZipFile, fh: BinaryIO, name: str, zip64: bool) -> bytes:
    """The local-header extra field (torch's ``FB`` padding) that 64-byte-aligns the data."""
    try:
        pos = fh.tell()
    except (OSError, AttributeError):
        return b""
    header = 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
    pad = -(pos + header) % _ALIGNMENT
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


def _write_record(zf: zipfile.ZipFile, fh: BinaryIO, name: str, data) -> None:
    data = memoryview(data).cast("B")
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = data.nbytes
    zip64 = data.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a zip64 header
    info.extra = _aligned_extra(zf, fh, name, zip64)
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def _little_endian_bytes(flat):
    if flat.dtype.byteorder == ">" or (flat.dtype.byteorder == "=" and sys.byteorder == "big"):
        flat = flat.astype(flat.dtype.newbyteorder("<"))
    return host.ascontiguousarray(flat).view(host.uint8)


def _write_zip(fh: BinaryIO, pickled: bytes, storages: list) -> None:
    prefix = _ARCHIVE + "/"
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        _write_record(zf, fh, prefix + "data.pkl", pickled)
        _write_record(zf, fh, prefix + ".format_version", b"1")
        _write_record(zf, fh, prefix + ".storage_alignment", str(_ALIGNMENT).encode())
        _write_record(zf, fh, prefix + "byteorder", b"little")
        for key, flat in enumerate(storages):
            _write_record(zf, fh, f"{prefix}data/{key}", _little_endian_bytes(flat))
        _write_record(zf, fh, prefix + "version", b"3\n")
        _write_record(zf, fh, prefix + ".data/serialization_id",
                      str(uuid.uuid4().int).zfill(40)[:40].encode())


def _new_file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777  # keep an overwritten file's permissions
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def save(obj: Any, f, pickle_module=None, pickle_protocol: int = 2) -> None:
    """``torch.save``: write ``obj`` (tensors, Parameters, state dicts, containers) to ``f``.

    ``f`` is a path (``str``/``os.PathLike``) or a writable binary file object. The file is
    torch's zip format, so ``torch.load(f, weights_only=True)`` reads it; tensors that view one
    base array share one storage record and load back as views of it (same storage, offset
    and strides). A path is written atomically: to a temporary file in the same directory that
    replaces ``f`` only once complete, so an interrupted save never leaves a half-written file.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("ember.save supports only the standard pickle module")
    buf = io.BytesIO()
    pickler = _TorchPickler(buf, protocol=pickle_protocol)
    pickler.dump(obj)  # before touching f: an unpicklable object leaves the target untouched
    pickled, storages = buf.getvalue(), pickler.storages
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise RuntimeError(f"Parent directory {directory} does not exist.")
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                _write_zip(fh, pickled, storages)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, _new_file_mode(path))
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"ember.save: expected a path or a binary file object, "
                             f"but got {type(f).__name__}")
    seekable = getattr(f, "seekable", None)
    if seekable is not None and seekable():
        _write_zip(f, pickled, storages)
    else:  # zipfile needs to seek back over its headers: build it in memory first
        tmp_buf = io.BytesIO()
        _write_zip(tmp_buf, pickled, storages)
        f.write(tmp_buf.getvalue())
    if hasattr(f, "flush"):
        f.flush()


# ====================================================================== loading
def _corrupt(message: str) -> RuntimeError:
    return RuntimeError("ember.load: corrupt checkpoint: " + message)


class _StorageType:
    """What ``torch.FloatStorage`` & co. unpickle to: the storage's element dtype."""

    __slots__ = ("dtype", "name")

    def __init__(self, name: str, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class _Storage:
    """A loaded storage: one flat array (of any backend) that every tensor rebuilt from it
    views."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


def _check_ints(name: str, value, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(
            type(v) is int and v >= 0 for v in value):
        raise _corrupt(f"{what} of a tensor must be "
                           f"non-negative ints, but got {value!r}")
    return tuple(value)


def _view(storage, storage_offset, size, stride):
    """The tensor's array: a bounds-checked strided view into the storage's array."""
    if not isinstance(storage, _Storage):
        raise _corrupt(f"expected a storage, but got "
                           f"{type(storage).__name__}")
    flat = storage.array
    if type(storage_offset) is not int or storage_offset < 0:
        raise _corrupt(f"bad storage offset "
                           f"{storage_offset!r}")
    size = _check_ints("size", size, "sizes")
    stride = _check_ints("stride", stride, "strides")
    if len(size) != len(stride):
        raise _corrupt(f"{len(size)} sizes but "
                           f"{len(stride)} strides")
    if 0 in size:
        return xp_of(flat).empty(size, dtype=flat.dtype)
    last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= flat.size:
        raise _corrupt(f"a tensor of size {list(size)}, "
                           f"stride {list(stride)} and offset {storage_offset} needs "
                           f"{last + 1} elements, but its storage has {flat.size}")
    item = flat.itemsize
    strides = tuple(s * item for s in stride)
    xp = xp_of(flat)
    if xp is not host:  # a storage mapped to a device
        return xp.lib.stride_tricks.as_strided(flat[storage_offset:], size, strides)
    # (not as_strided: an ndarray on the buffer keeps flat as its base, so a re-save shares it)
    return host.ndarray(size, dtype=flat.dtype, buffer=flat, offset=storage_offset * item,
                        strides=strides)


def _tensor_from(arr, requires_grad) -> Tensor:
    t = _make(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None) -> Tensor:
    return _tensor_from(_view(storage, storage_offset, size, stride), requires_grad)


def _rebuild_tensor(storage, storage_offset, size, stride) -> Tensor:
    return _tensor_from(_view(storage, storage_offset, size, stride), False)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter  # lazy: save/load need not import all of ember.nn
    if not isinstance(data, Tensor):
        raise _corrupt(f"a Parameter's data must be a "
                           f"tensor, but got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    # ember's Parameter has no instance dict: extra Python attributes are dropped
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _codecs_encode(obj, encoding="utf-8"):
    """``_codecs.encode``: how protocol 2 pickles ``bytes``; only text codecs allowed."""
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "ascii"):
        raise pickle.UnpicklingError(f"ember.load: refused _codecs.encode({type(obj).__name__},"
                                     f" {encoding!r})")
    return obj.encode(encoding)


def _torch_device(*args):
    return _device(*args)


def _safe_globals() -> dict[tuple[str, str], Any]:
    allowed: dict[tuple[str, str], Any] = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch", "Size"): Size,
        ("torch", "device"): _torch_device,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "complex"): complex,
            ("builtins", "slice"): slice,
        ("_codecs", "encode"): _codecs_encode,
    }
    for name, np_dtype in _NP_OF_STORAGE.items():
        allowed[("torch", name)] = _StorageType(name, np_dtype)
        allowed[("torch.storage", name)] = allowed[("torch", name)]
    allowed[("torch", _BFLOAT16)] = _StorageType(_BFLOAT16, None)
    allowed[("torch.storage", "TypedStorage")] = _StorageType("UntypedStorage", host.dtype("u1"))
    for d in _dt.DTYPES:
        allowed[("torch", d.name)] = d
    return allowed


_SAFE = _safe_globals()


def _bytearray(source=b"", *args):
    """``bytearray`` for data only: ``bytearray(n)`` would let a file allocate ``n`` bytes."""
    if isinstance(source, int):
        raise pickle.UnpicklingError("ember.load: refused bytearray(<int>) (a size, not data)")
    return bytearray(source, *args)


_SAFE[("builtins", "bytearray")] = _bytearray


def _defaultdict(default_factory=None, *args):
    """``collections.defaultdict`` whose factory is a plain container type (an optimizer's
    ``state`` is a ``defaultdict(dict)``)."""
    if default_factory not in (None, dict, list, set, int, float):
        raise pickle.UnpicklingError(f"ember.load: refused defaultdict({default_factory!r})")
    return collections.defaultdict(default_factory, *args)


def _unsafe_extras() -> dict[tuple[str, str], Any]:
    """``weights_only=False`` adds plain data: NumPy arrays and scalars, ``defaultdict``."""
    multiarray = host._core.multiarray
    extra = {("numpy", "ndarray"): host.ndarray, ("numpy", "dtype"): host.dtype,
             ("collections", "defaultdict"): _defaultdict, ("builtins", "dict"): dict,
             ("builtins", "list"): list, ("builtins", "tuple"): tuple}
    for mod in ("numpy.core.multiarray", "numpy._core.multiarray"):
        extra[(mod, "_reconstruct")] = multiarray._reconstruct
        extra[(mod, "scalar")] = multiarray.scalar
    return {**_SAFE, **extra}


_KNOWN_UNSUPPORTED = {
    "_rebuild_qtensor": "quantized tensors", "_rebuild_sparse_tensor": "sparse tensors",
    "_rebuild_nested_tensor": "nested tensors", "_rebuild_meta_tensor_no_storage":
    "meta tensors", "_rebuild_wrapper_subclass": "tensor subclasses",
    "_rebuild_from_type_v2": "tensor subclasses", "_rebuild_tensor_v3": "this tensor layout",
    "_rebuild_device_tensor_from_numpy": "device tensors",
    "_rebuild_device_tensor_from_cpu_tensor": "device tensors",
}


# ====================================================================== the allowlist
# torch's weights_only contract: classes and functions a user trusts, by "module.qualname"
_marked_safe_globals: dict[str, Any] = {}


def _safe_global_key(entry) -> tuple[str, Any]:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), "
                             f"but got {entry!r}")
        return entry[1], entry[0]
    if not callable(entry):
        raise TypeError(f"Expected a callable or a (callable, str) tuple, but got {entry!r}")
    return f"{entry.__module__}.{entry.__qualname__}", entry


def add_safe_globals(safe_globals: list) -> None:
    """``torch.serialization.add_safe_globals``: let ``ember.load`` rebuild these classes
    (``Net.__new__`` then its state) or call these functions when a checkpoint names them.

    An entry is a class or function, matched by ``f"{obj.__module__}.{obj.__qualname__}"``,
    or a ``(obj, "module.name")`` pair for a name it was pickled under. ember's own classes
    (``ember.nn.Linear``) also match the ``torch.nn.modules...`` names torch pickles them as.
    """
    for entry in safe_globals:
        key, obj = _safe_global_key(entry)
        _marked_safe_globals[key] = obj


def get_safe_globals() -> list:
    """``torch.serialization.get_safe_globals``: the user's allowlist, as given."""
    return [obj if key == f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
            else (obj, key) for key, obj in _marked_safe_globals.items()]


def clear_safe_globals() -> None:
    """``torch.serialization.clear_safe_globals``: empty the user's allowlist."""
    _marked_safe_globals.clear()


class safe_globals:
    """``torch.serialization.safe_globals([...])``: allowlist these globals within the block
    (those that were allowlisted before it stay so after)."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = safe_globals
        self._saved: dict[str, Any] = {}

    def __enter__(self) -> None:
        self._saved = dict(_marked_safe_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc) -> None:
        _marked_safe_globals.clear()
        _marked_safe_globals.update(self._saved)


_ember_class_table: dict[tuple[str, str], type] | None = None


def _ember_classes() -> dict[tuple[str, str], type]:
    """ember's modules, optimizers and schedulers under their own names and under the torch
    names that pickles use for them (``torch.nn.modules.batchnorm BatchNorm2d``)."""
    global _ember_class_table
    if _ember_class_table is None:
        from . import nn, optim  # lazy: only a checkpoint with whole objects needs them
        from .optim import lr_scheduler

        table: dict[tuple[str, str], type] = {}
        todo = [nn.Module, optim.Optimizer, lr_scheduler.LRScheduler]
        seen: set[type] = set()
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            todo.extend(cls.__subclasses__())
            module = cls.__module__
            if not module.startswith("ember."):
                continue  # a user's subclass: only by the allowlist
            table[(module, cls.__qualname__)] = cls
            torch_module = "torch" + module[len("ember"):]
            table.setdefault((torch_module, cls.__qualname__), cls)
        _ember_class_table = table
    return _ember_class_table


def _torch_name_of(module: str, name: str) -> type | None:
    """The ember class a ``torch.nn.modules.*`` / ``torch.optim.*`` global names, if any
    (ember's modules sit in other files than torch's, so the match is by class name)."""
    table = _ember_classes()
    cls = table.get((module, name))
    if cls is not None:
        return cls
    if module.startswith(("torch.nn.modules.", "torch.optim.")) or module in (
            "torch.nn", "torch.optim", "torch.nn.modules"):
        from . import nn, optim  # lazy, as above
        from .optim import lr_scheduler

        for namespace in (nn, nn.modules, optim, lr_scheduler):
            cls = getattr(namespace, name, None)
            if isinstance(cls, type) and cls.__module__.startswith("ember."):
                return cls
    return None


def _functional_of(module: str, name: str):
    """ember's function for a ``torch.nn.functional``-style global a module keeps as an
    attribute (``TransformerEncoderLayer.activation`` is ``F.relu``), if any."""
    if not module.startswith(("torch.nn.functional", "torch._C._nn", "ember.nn.functional",
                              "ember.ops")) and module not in ("torch", "ember"):
        return None
    from . import nn  # lazy, as above

    for namespace in (nn.functional, sys.modules["ember"]):
        fn = getattr(namespace, name, None)
        if callable(fn) and not isinstance(fn, type) and \
                getattr(fn, "__module__", "").startswith("ember."):
            return fn
    return None


def _public_name(cls: type) -> str:
    from . import nn, optim  # lazy, as above

    for prefix, namespace in (("ember.nn", nn), ("ember.optim", optim)):
        if getattr(namespace, cls.__name__, None) is cls:
            return f"{prefix}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


class _Policy:
    """What one ``ember.load`` may rebuild: the fixed table of data globals, the user's
    allowlist (a snapshot), and whether ember's own classes need allowlisting."""

    __slots__ = ("allowed", "user", "user_objects", "weights_only")

    def __init__(self, allowed: dict, weights_only: bool) -> None:
        self.allowed = allowed
        self.weights_only = weights_only
        self.user = dict(_marked_safe_globals)
        self.user_objects = {id(o) for o in self.user.values()}


def _refusal(module: str, name: str, policy: _Policy | None = None,
             cls: type | None = None) -> pickle.UnpicklingError:
    full = f"{module}.{name}"
    if name in _KNOWN_UNSUPPORTED or name in _UNSUPPORTED_STORAGES or (
            module.startswith(("torch", "numpy", "ember")) and cls is None):
        what = ("ember can't load " + _KNOWN_UNSUPPORTED[name] if name in _KNOWN_UNSUPPORTED
                else "ember has no quantized dtypes" if name in _UNSUPPORTED_STORAGES
                else "not one ember knows")
        return pickle.UnpicklingError(
            f"Weights only load failed. Unsupported global: GLOBAL {full} was not an allowed "
            f"global ({what}). ember.load never calls code named by a checkpoint: it rebuilds "
            "tensors, Parameters, storages, torch.Size, dtypes, devices, OrderedDict, plain "
            "Python containers, numbers and strings, and the classes allowlisted with "
            "ember.serialization.add_safe_globals. Load the file with torch and re-save the "
            "plain tensors (e.g. a state_dict) if you trust its source.")
    fix = _public_name(cls) if cls is not None else full
    if cls is not None:
        option = ("Re-running `ember.load` with `weights_only=False` rebuilds ember's own "
                  "modules, optimizers and schedulers (torch's are mapped to ember's), still "
                  "without running code from the file.")
    else:
        option = ("ember.load never imports a class named by a file, even with "
                  "weights_only=False: a class of your own must be allowlisted.")
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint.\n"
        f"\t(1) {option}\n"
        "\t(2) Alternatively, to load with `weights_only=True` please check the recommended "
        "steps in the following error message.\n"
        f"\tWeightsUnpickler error: Unsupported global: GLOBAL {full} was not an allowed "
        f"global by default. Please use `ember.serialization.add_safe_globals([{fix}])` or the "
        f"`ember.serialization.safe_globals([{fix}])` context manager to allowlist this global "
        "if you trust this class/function.")


# a Module's hook registries: torch pickles OrderedDicts; ember keeps HookDicts and sets
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")
_HOOK_SETS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs",
              "_forward_hooks_always_called", "_non_persistent_buffers_set")


def _module_state(cls: type, state: dict) -> dict:
    """A module's pickled state (torch's or ember's) in the form ember's class keeps.

    Attributes that are properties in ember (an RNN's ``_flat_weights``) and torch's weak
    references are dropped: ember derives them. Hook registries become ember's types."""
    state = {k: v for k, v in state.items()
             if k != "_flat_weight_refs" and not isinstance(getattr(cls, k, None), property)}
    for key in _HOOK_DICTS:
        value = state.get(key)
        if isinstance(value, dict) and type(value) is not HookDict:
            state[key] = HookDict(value)
    for key in _HOOK_SETS:
        value = state.get(key)
        if isinstance(value, dict):
            state[key] = set(value)
    return state


class _RestrictedUnpickler(pickle._Unpickler):
    """An unpickler whose globals come from an allowlist, never from imports.

    NOTE: the pure-Python unpickler, so that BUILD / SETITEMS / APPENDS can be limited to
    the container types they are meant for (the C unpickler calls ``__setstate__`` and
    ``__setitem__`` on whatever object is on the stack).

    Classes come only from the user's allowlist (``add_safe_globals``) or, with
    ``weights_only=False``, from ember's own modules, optimizers and schedulers. An ember
    class trusted that way is only instantiated bare (``NEWOBJ`` with no arguments) and given
    its pickled attributes: its ``__init__`` never runs with arguments from the file.
    """

    dispatch: ClassVar[dict] = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, policy: _Policy, persistent_load=None):
        super().__init__(file, encoding="utf-8")
        self._policy = policy
        self._allowed = policy.allowed
        self._persistent_load = persistent_load
        self._classes: dict[type, bool] = {}  # class -> allowlisted by the user

    def find_class(self, module: str, name: str):
        if self.proto < 3:
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        policy = self._policy
        try:
            return self._allowed[(module, name)]
        except (KeyError, TypeError):
            pass
        if not isinstance(module, str) or not isinstance(name, str):
            raise _refusal(str(module), str(name))
        obj = policy.user.get(f"{module}.{name}")
        if obj is None and module == "__main__":
            # a class torch pickled in a script as __main__.Net: the running script's own
            # class (under `python -m ember`, the script is __main__), when allowlisted
            candidate = getattr(sys.modules.get("__main__"), name, None)
            if id(candidate) in policy.user_objects:
                obj = candidate
        if obj is not None:
            if isinstance(obj, type):
                self._classes[obj] = True
            return obj
        cls = _torch_name_of(module, name) if module.startswith(("torch", "ember")) else None
        if cls is not None:
            if id(cls) in policy.user_objects:
                self._classes[cls] = True
                return cls
            if not policy.weights_only:
                self._classes.setdefault(cls, False)
                return cls
        if not policy.weights_only:
            fn = _functional_of(module, name)
            if fn is not None:  # a module's activation (F.relu): a value, never called here
                self._classes.setdefault(fn, False)
                return fn
        raise _refusal(module, name, policy, cls)

    def persistent_load(self, pid):
        if self._persistent_load is None:
            raise pickle.UnpicklingError("ember.load: unexpected persistent id in the pickle")
        return self._persistent_load(pid)

    def _check_new(self, cls, args, kwargs=None) -> None:
        if self._classes.get(cls) is False and (args or kwargs):
            raise pickle.UnpicklingError(
                f"ember.load: refused {cls.__name__}.__new__ with arguments from the file "
                "(ember's classes are rebuilt bare, then given their pickled state)")

    def _load_newobj(self):
        args = self.stack.pop()
        cls = self.stack[-1]
        self._check_new(cls, args)
        self.stack[-1] = cls.__new__(cls, *args)

    def _load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack[-1]
        self._check_new(cls, args, kwargs)
        self.stack[-1] = cls.__new__(cls, *args, **kwargs)

    def _load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if self._classes.get(func) is False:
            raise pickle.UnpicklingError(
                f"ember.load: refused to call {func.__name__}(...) with arguments from the file "
                "(allowlist the class with ember.serialization.add_safe_globals to allow it)")
        self.stack[-1] = func(*args)

    def _load_build(self):
        state = self.stack[-1]
        inst = self.stack[-2]
        cls = type(inst)
        if cls in self._classes:
            from .nn.modules.module import Module  # lazy: loaded once a class was allowed

            if isinstance(inst, Module):
                if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
                    state = state[0]
                if not isinstance(state, dict) or not all(type(k) is str for k in state):
                    raise pickle.UnpicklingError(f"ember.load: refused BUILD of "
                                                 f"{cls.__name__} from {type(state).__name__}")
                self.stack.pop()
                inst.__setstate__(_module_state(cls, state))
                return
            if self._classes[cls] or isinstance(state, dict):
                pickle._Unpickler.load_build(self)  # __setstate__, else attributes
                return
        self.stack.pop()
        if isinstance(inst, (host.ndarray, host.dtype)) and ("numpy", "ndarray") in self._allowed:
            inst.__setstate__(state)
            return
        if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
            state = state[0]
        if not (isinstance(inst, (dict, list, set)) and hasattr(inst, "__dict__")
                and isinstance(state, dict) and all(type(k) is str for k in state)):
            raise pickle.UnpicklingError(
                f"ember.load: refused BUILD of {type(inst).__name__} from "
                f"{type(state).__name__} (only attributes of dict subclasses, such as a "
                "state_dict's _metadata, and of allowlisted classes can be set)")
        inst.__dict__.update(state)

    def _load_setitems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if not isinstance(target, dict):
            raise pickle.UnpicklingError(f"ember.load: refused SETITEMS on "
                                         f"{type(target).__name__}")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _load_setitem(self):
        value = self.stack.pop()
        key = self.stack.pop()
        target = self.stack[-1]
        if not isinstance(target, dict):
            raise pickle.UnpicklingError(f"ember.load: refused SETITEM on "
                                         f"{type(target).__name__}")
        target[key] = value

    def _load_appends(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if not isinstance(target, list):
            raise pickle.UnpicklingError(f"ember.load: refused APPENDS on "
                                         f"{type(target).__name__}")
        target.extend(items)

    def _load_append(self):
        value = self.stack.pop()
        target = self.stack[-1]
        if not isinstance(target, list):
            raise pickle.UnpicklingError(f"ember.load: refused APPEND on "
                                         f"{type(target).__name__}")
        target.append(value)

    def _load_additems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if not isinstance(target, set):
            raise pickle.UnpicklingError(f"ember.load: refused ADDITEMS on "
                                         f"{type(target).__name__}")
        target.update(items)

    def _load_bytearray8(self):
        # (pickle's own allocates bytearray(<claimed length>) before reading a byte)
        (n,) = struct.unpack("<Q", self.read(8))
        self.append(bytearray(self.read(n)))

    dispatch[pickle.BUILD[0]] = _load_build
    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8
    dispatch[pickle.NEWOBJ[0]] = _load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = _load_newobj_ex
    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.SETITEMS[0]] = _load_setitems
    dispatch[pickle.SETITEM[0]] = _load_setitem
    dispatch[pickle.APPENDS[0]] = _load_appends
    dispatch[pickle.APPEND[0]] = _load_append
    dispatch[pickle.ADDITEMS[0]] = _load_additems


class _BoundedReader:
    """The unpickler's view of its file: a read past the end of the data is refused.

    Pickle opcodes carry their own lengths (``BINBYTES8``, ``BINUNICODE8``, ``LONG4``,
    ``BINSTRING``, ``FRAME``, ...), and a buffered file allocates a read's full claimed size
    before reading; checking each read against the bytes left keeps a crafted length from
    asking for more memory than the file has."""

    __slots__ = ("_end", "_file", "_what")

    def __init__(self, file, end: int, what: str) -> None:
        self._file, self._end, self._what = file, end, what

    def read(self, n: int = -1) -> bytes:
        left = self._end - self._file.tell()
        if n is None or n < 0:
            n = left
        elif n > left:
            raise _corrupt(f"{self._what} claims {n} bytes at offset {self._file.tell()}, but "
                           f"only {max(left, 0)} remain (the file is truncated or crafted)")
        return self._file.read(n)

    def readline(self) -> bytes:
        return self._file.readline(max(self._end - self._file.tell(), 0))


def _unpickle(data, policy: _Policy, persistent_load=None, what: str = "data.pkl"):
    if isinstance(data, (bytes, bytearray)):
        file, end = io.BytesIO(data), len(data)
    else:
        file = data
        pos = file.tell()
        end = file.seek(0, io.SEEK_END)
        file.seek(pos)
    try:
        return _RestrictedUnpickler(_BoundedReader(file, end, what), policy,
                                    persistent_load).load()
    except pickle.UnpicklingError as e:
        if str(e).startswith(("Weights only load failed", "ember.load")):
            raise
        raise _corrupt(f"can't unpickle {what}: {e}") from e
    except (EOFError, struct.error, IndexError, KeyError, ValueError, TypeError,
            AttributeError, UnicodeDecodeError) as e:
        raise _corrupt(f"can't unpickle {what} "
                           f"({type(e).__name__}: {e}); the file is truncated or not a "
                           "checkpoint") from e


def _bfloat16_to_float32(bits):
    return (bits.astype(host.uint32) << 16).view(host.float32)


def _bfloat16_dtype():
    """ml_dtypes' bfloat16 NumPy dtype, or None where the optional package is missing."""
    try:
        return _dt._bfloat16_numpy()
    except ModuleNotFoundError:
        return None


def _from_bfloat16_bits(bits, locations: _Locations):
    """A bfloat16 storage's bits as ember's bfloat16 (a view), or widened to float32."""
    bf16 = _bfloat16_dtype()
    if bf16 is not None:
        return bits.view(bf16)
    locations.widened_bfloat16 = True
    return _bfloat16_to_float32(bits)


class _Locations:
    """``map_location``: None, a device or its name, a dict of locations, or a callable."""

    def __init__(self, map_location):
        self.map_location = map_location
        self.widened_bfloat16 = False

    def restore(self, array, location):
        """The storage's host ``array`` where it belongs: the CPU unless ``map_location``
        names another device."""
        ml = self.map_location
        if not isinstance(location, str):
            raise _corrupt(f"bad storage location "
                               f"{location!r}")
        if callable(ml) and not isinstance(ml, (str, _device)):
            # torch passes (storage, location); ember passes the storage as a 1-D tensor
            result = ml(_make(array), location)
            if result is None:
                return self._check(array, location)
            if not isinstance(result, Tensor):
                raise TypeError(f"map_location should return a tensor (the storage), but "
                                f"returned {type(result).__name__}")
            out = result._data.reshape(-1)
            if out.size != array.size:
                raise RuntimeError(f"map_location returned {out.size} elements for a storage "
                                   f"of {array.size}")
            return out
        if isinstance(ml, dict):
            return self._check(array, ml.get(location, location))
        return self._check(array, location if ml is None else ml)

    @staticmethod
    def _check(array, target):
        dev = target if isinstance(target, _device) else _device(str(target))
        if dev.type == "cuda":
            raise RuntimeError(_CUDA_ERROR)
        return to_device_array(array, _to_device(dev))


def _fill(array, reader, what: str) -> None:
    view = memoryview(array.view(host.uint8).reshape(-1))
    got = 0
    while got < view.nbytes:
        n = reader.readinto(view[got:])
        if not n:
            raise _corrupt(f"{what} is truncated "
                               f"({got} of {view.nbytes} bytes)")
        got += n


def _storage_array(type_: _StorageType, numel, available: int, where: str) -> tuple:
    """An empty host array for a storage's bytes, and whether they are bfloat16 bits.

    ``available`` is how many bytes the file really has for it: a storage claiming more is
    refused before anything is allocated, so a small crafted file can't ask for gigabytes."""
    if not isinstance(type_, _StorageType):
        raise _corrupt(f"bad storage type {type_!r}")
    if type(numel) is not int or numel < 0:
        raise _corrupt(f"bad storage size {numel!r}")
    nbytes = numel * (2 if type_.dtype is None else type_.dtype.itemsize)
    if nbytes > available:
        raise _corrupt(f"a {type_!r} of {numel} elements needs {nbytes} bytes, but {where} "
                       f"holds {available}")
    if type_.dtype is None:  # bfloat16: read the bits, widen to float32 (exact)
        return host.empty(numel, dtype=host.uint16), True
    return host.empty(numel, dtype=type_.dtype), False


_DEFLATE_MAX_RATIO = 1032  # deflate can't expand its input more than ~1032-fold


def _check_zip_records(zf: zipfile.ZipFile, end: int) -> None:
    """Every record's claimed sizes against the archive's real size, before reading any.

    A stored record must hold exactly its claimed bytes within the file; a deflated one can't
    claim more than deflate can produce from its compressed bytes."""
    for info in zf.infolist():
        if info.header_offset + info.compress_size > end:
            raise _corrupt(f"record {info.filename} claims {info.compress_size} bytes at offset "
                           f"{info.header_offset}, past the end of the {end}-byte file "
                           "(truncated or crafted)")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise _corrupt(f"stored record {info.filename} claims {info.file_size} bytes "
                               f"but holds {info.compress_size}")
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > info.compress_size * _DEFLATE_MAX_RATIO + 64:
                raise _corrupt(f"deflated record {info.filename} claims {info.file_size} "
                               f"bytes from {info.compress_size} compressed ones")
        else:
            raise _corrupt(f"record {info.filename} uses zip compression method "
                           f"{info.compress_type}; torch checkpoints store records "
                           "uncompressed")


def _load_zip(zf: zipfile.ZipFile, locations: _Locations, policy: _Policy, end: int):
    _check_zip_records(zf, end)
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError("ember.load: not a torch/ember checkpoint: the zip archive has no "
                           "<archive>/data.pkl record")
    prefix = pkl[0][: -len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = zf.read(prefix + "byteorder").decode("ascii", "replace").strip()
        if byteorder not in ("little", "big"):
            raise _corrupt(f"unknown byteorder "
                               f"{byteorder!r}")
    loaded: dict[str, _Storage] = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r}")
        _, type_, key, location, numel = pid[:5]
        key = str(key)
        if key in loaded:
            return loaded[key]
        name = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise _corrupt(f"record {name} is "
                               "missing") from None
        array, bf16 = _storage_array(type_, numel, info.file_size, f"record {name}")
        if info.file_size != array.nbytes:
            raise _corrupt(f"record {name} holds "
                               f"{info.file_size} bytes, but its {type_!r} of {numel} "
                               f"elements needs {array.nbytes}")
        with zf.open(info) as reader:
            _fill(array, reader, name)
        if byteorder != sys.byteorder:
            array.byteswap(inplace=True)
        if bf16:
            array = _from_bfloat16_bits(array, locations)
        storage = _Storage(locations.restore(array, location))
        loaded[key] = storage
        return storage

    return _unpickle(zf.read(pkl[0]), policy, persistent_load, pkl[0])


def _load_legacy(fh: BinaryIO, locations: _Locations, policy: _Policy, end: int):
    """torch's pre-1.6 format: magic, protocol and sys-info pickles, the object pickle, the
    list of storage keys, then each storage as an int64 element count and its bytes."""
    header = _Policy({}, True)
    magic = _unpickle(fh, header, what="the header")
    if magic != _LEGACY_MAGIC:
        raise RuntimeError("ember.load: not a torch/ember checkpoint (invalid magic number; "
                           "corrupt file?)")
    protocol = _unpickle(fh, header, what="the header")
    if protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"ember.load: invalid protocol version: {protocol}")
    sys_info = _unpickle(fh, header, what="the header")
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    roots: dict[str, tuple] = {}  # key -> (host array, location)
    views: dict[str, _Storage] = {}
    claimed = [0]  # bytes the storages seen so far need: together they must fit in the file

    def persistent_load(pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r}")
        _, type_, key, location, numel = pid[:5]
        view_meta = pid[5] if len(pid) > 5 else None
        key = str(key)
        if key not in roots:
            available = end - fh.tell() - claimed[0]
            array, bf16 = _storage_array(type_, numel, available, "the rest of the file")
            claimed[0] += array.nbytes
            if bf16 and _bfloat16_dtype() is None:
                raise RuntimeError("ember.load: bfloat16 storages in torch's legacy (non-zip) "
                                   "format need the ml_dtypes package; re-save the file with "
                                   "torch.save, or pip install ml_dtypes")
            # the bits are read into ``array`` later; bfloat16 tensors view them as such
            roots[key] = (array, location, array.view(_bfloat16_dtype()) if bf16 else array)
        array = roots[key][2]
        if view_meta is None:
            view_key, start, count = key, 0, array.size
        else:
            view_key, start, count = view_meta
        view_key = str(view_key)
        if view_key not in views:
            if type(start) is not int or type(count) is not int or not (
                    0 <= start and start + count <= array.size):
                raise _corrupt("bad storage view")
            views[view_key] = _Storage(array[start:start + count])
        return views[view_key]

    result = _unpickle(fh, policy, persistent_load)
    keys = _unpickle(fh, header, what="the storage keys")
    if not isinstance(keys, list):
        raise _corrupt("bad storage key list")
    for key in keys:
        if str(key) not in roots:
            raise _corrupt(f"storage {key} is unused")
        array, location = roots[str(key)][:2]
        head = fh.read(8)
        if len(head) != 8:
            raise _corrupt(f"storage {key} is truncated")
        numel = struct.unpack("<q" if little else ">q", head)[0]
        if numel != array.size:
            raise _corrupt(f"storage {key} has {numel} "
                               f"elements, expected {array.size}")
        _fill(array, fh, f"storage {key}")
        if little != (sys.byteorder == "little"):
            array.byteswap(inplace=True)
        if locations.restore(array, location) is not array:
            raise RuntimeError("ember.load: a map_location that moves storages (to a device, "
                               "or a callable returning a new storage) is not supported for "
                               "torch's legacy format; load onto the CPU, then move tensors")
    return result


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True,
         mmap: bool | None = None, **pickle_load_args) -> Any:
    """``torch.load``: read a checkpoint written by ``ember.save`` or ``torch.save``.

    ``f`` is a path or a readable binary file object; both torch's zip format and its legacy
    (pre-1.6) format are read. ``map_location`` may be None, ``'cpu'``, an ``ember.device``,
    a dict mapping saved locations to new ones (``{'cuda:0': 'cpu'}``) or a callable
    ``(storage, location) -> storage`` (the storage is passed as a 1-D ember tensor). ember
    computes on the CPU, so storages saved on CUDA need ``map_location='cpu'``, as on a
    CPU-only torch.

    Loading never runs code from the file, whatever ``weights_only`` says: pickled globals
    resolve only against an allowlist (tensor and Parameter rebuilds, storage types,
    ``torch.Size``, dtypes, devices, ``OrderedDict``/``Counter``, sets, complex, bytes) of
    ember-side functions plus the user's ``add_safe_globals`` entries, and anything else
    raises ``pickle.UnpicklingError`` naming the global and the fix, without importing or
    calling it.

    ``weights_only=True`` (the default, as in torch 2.6+; ``None`` means the same): whole
    modules and optimizers load only when their classes are allowlisted, torch's error and
    remedy included. ``weights_only=False``: also NumPy arrays, ``defaultdict``, and ember's
    own ``nn``/``optim`` classes (``torch.nn.modules.linear.Linear`` loads as
    ``ember.nn.Linear``), built bare and given their pickled attributes (``__init__`` never
    runs); a user's own class (``__main__.Net``) still needs ``add_safe_globals``, since
    ember never imports what a file names. bfloat16 tensors load as bfloat16 (as float32, with
    a warning, without ml_dtypes). ``mmap`` is accepted for torch compatibility; the data is
    read into memory.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified: ember.load supports only the standard pickle module")
    if pickle_load_args.pop("encoding", "utf-8") not in ("utf-8", "latin1", "ASCII", "ascii"):
        raise ValueError("ember.load: unsupported encoding")
    if pickle_load_args:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(pickle_load_args)}")
    weights_only = weights_only is None or bool(weights_only)  # torch: None means True
    policy = _Policy(_SAFE if weights_only else _unsafe_extras(), weights_only)
    locations = _Locations(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            result = _load_from(fh, locations, policy, os.fspath(f))
    else:
        if not hasattr(f, "read"):
            raise AttributeError(f"ember.load: expected a path or a binary file object, "
                                 f"but got {type(f).__name__}")
        seekable = getattr(f, "seekable", None)
        if seekable is None or not seekable():
            f = io.BytesIO(f.read())
        result = _load_from(f, locations, policy, getattr(f, "name", "<file object>"))
    if locations.widened_bfloat16:
        warnings.warn("ember has no bfloat16 dtype: bfloat16 tensors were loaded as float32 "
                      "(exactly: every bfloat16 value is a float32)", UserWarning, stacklevel=2)
    return result


def _load_from(fh: BinaryIO, locations: _Locations, policy: _Policy, name) -> Any:
    start = fh.tell()
    head = fh.read(4)
    end = fh.seek(0, io.SEEK_END)
    fh.seek(start)
    if not head:
        raise RuntimeError(f"ember.load: {name!s} is empty: not a checkpoint")
    if head == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise RuntimeError(f"ember.load: corrupt checkpoint {name!s}: failed reading the "
                               f"zip archive ({e}); the file is truncated or damaged") from e
        with zf:
            try:
                return _load_zip(zf, locations, policy, end)
            except (zipfile.BadZipFile, EOFError, OSError, zipfile.LargeZipFile) as e:
                raise RuntimeError(f"ember.load: corrupt checkpoint {name!s}: {e}") from e
    if head[:1] == b"\x80":  # a pickle: torch's legacy format
        return _load_legacy(fh, locations, policy, end)
    raise RuntimeError(f"ember.load: {name!s} is not a torch/ember checkpoint (it starts with "
                       f"{head!r}, neither a zip archive nor a pickle)")


# ====================================================================== safetensors
def _safetensors_numpy():
    try:
        import safetensors.numpy as st  # lazy: optional dependency
    except ImportError:
        raise ImportError("ember.save_safetensors / ember.load_safetensors need the optional "
                          "'safetensors' package: pip install safetensors") from None
    return st


def save_safetensors(tensors: dict, path, metadata: dict | None = None) -> None:
    """Write a dict of named tensors as a ``.safetensors`` file (``safetensors`` package).

    Each tensor is written contiguously (safetensors 0.8 silently writes the wrong bytes for
    a non-contiguous NumPy array). Written atomically, as ``ember.save`` writes a path.
    """
    st = _safetensors_numpy()
    if not isinstance(tensors, dict):
        raise TypeError(f"save_safetensors expects a dict of tensors, but got "
                        f"{type(tensors).__name__}")
    arrays = {}
    for key, value in tensors.items():
        if not isinstance(key, str):
            raise TypeError(f"save_safetensors: keys must be strings, but got {key!r}")
        if not isinstance(value, Tensor):
            raise TypeError(f"save_safetensors: {key!r} is a {type(value).__name__}, "
                            "not a Tensor")
        # (ascontiguousarray makes 0-d arrays 1-d: the reshape restores the shape)
        arrays[key] = host.ascontiguousarray(to_host(value._data)).reshape(value._data.shape)
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    os.close(fd)
    try:
        st.save_file(arrays, tmp, metadata=metadata)
        os.chmod(tmp, _new_file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_safetensors(path, device="cpu") -> dict[str, Tensor]:
    """Read a ``.safetensors`` file into a dict of ember tensors (``safetensors`` package)."""
    st = _safetensors_numpy()
    dev = _to_device(device)
    arrays = st.load_file(os.fspath(path))
    out = {}
    for key, arr in arrays.items():
        if not arr.flags.writeable or not arr.flags.c_contiguous:
            arr = host.array(arr, order="C")
        _dt.from_numpy_dtype(arr.dtype)  # torch's error for dtypes ember lacks
        out[key] = _make(to_device_array(arr, dev))
    return out
