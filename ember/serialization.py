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
``weights_only=True`` does.

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

__all__ = ["load", "load_safetensors", "save", "save_safetensors"]

_ARCHIVE = "archive"
_ALIGNMENT = 64  # torch aligns every record's data to 64 bytes (its ``.storage_alignment``)
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001

# storage class name <-> NumPy dtype (torch's legacy typed-storage names, used in the pickle)
_STORAGE_OF = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
    "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
}
_NP_OF_STORAGE = {name: host.dtype(dt) for dt, name in _STORAGE_OF.items()}
_NP_OF_STORAGE["UntypedStorage"] = host.dtype(host.uint8)
_BFLOAT16 = "BFloat16Storage"  # no NumPy dtype: loaded as float32 (exact), with a warning
_UNSUPPORTED_STORAGES = ("ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage",
                         "QUInt8Storage", "QInt32Storage", "QUInt4x2Storage",
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
        ("builtins", "bytearray"): bytearray,
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


def _unsafe_extras() -> dict[tuple[str, str], Any]:
    """``weights_only=False`` adds NumPy arrays and scalars: data, still no code."""
    multiarray = host._core.multiarray
    extra = {("numpy", "ndarray"): host.ndarray, ("numpy", "dtype"): host.dtype}
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


def _refusal(module: str, name: str) -> pickle.UnpicklingError:
    full = f"{module}.{name}"
    hint = ""
    if name in _KNOWN_UNSUPPORTED:
        hint = f" (ember can't load {_KNOWN_UNSUPPORTED[name]})"
    elif name in _UNSUPPORTED_STORAGES:
        hint = " (ember has no complex or quantized dtypes)"
    return pickle.UnpicklingError(
        f"Weights only load failed. Unsupported global: GLOBAL {full} was not an allowed "
        f"global{hint}. ember.load never calls code named by a checkpoint: it rebuilds only "
        "tensors, Parameters, storages, torch.Size, dtypes, devices, OrderedDict and plain "
        "Python containers, numbers and strings. Load the file with torch and re-save the "
        "plain tensors (e.g. a state_dict) if you trust its source.")


class _RestrictedUnpickler(pickle._Unpickler):
    """An unpickler whose globals come from an allowlist of ember functions, never imports.

    NOTE: the pure-Python unpickler, so that BUILD / SETITEMS / APPENDS can be limited to
    the container types they are meant for (the C unpickler calls ``__setstate__`` and
    ``__setitem__`` on whatever object is on the stack).
    """

    dispatch: ClassVar[dict] = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, allowed: dict, persistent_load=None):
        super().__init__(file, encoding="utf-8")
        self._allowed = allowed
        self._persistent_load = persistent_load

    def find_class(self, module: str, name: str):
        if self.proto < 3:
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        try:
            return self._allowed[(module, name)]
        except (KeyError, TypeError):
            raise _refusal(module, name) from None

    def persistent_load(self, pid):
        if self._persistent_load is None:
            raise pickle.UnpicklingError("ember.load: unexpected persistent id in the pickle")
        return self._persistent_load(pid)

    def _load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
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
                "state_dict's _metadata, can be set)")
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

    dispatch[pickle.BUILD[0]] = _load_build
    dispatch[pickle.SETITEMS[0]] = _load_setitems
    dispatch[pickle.SETITEM[0]] = _load_setitem
    dispatch[pickle.APPENDS[0]] = _load_appends
    dispatch[pickle.APPEND[0]] = _load_append
    dispatch[pickle.ADDITEMS[0]] = _load_additems


def _unpickle(data, allowed: dict, persistent_load=None, what: str = "data.pkl"):
    file = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data
    try:
        return _RestrictedUnpickler(file, allowed, persistent_load).load()
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


def _storage_array(type_: _StorageType, numel) -> tuple:
    """An empty host array for a storage's bytes, and whether they are bfloat16 bits."""
    if not isinstance(type_, _StorageType):
        raise _corrupt(f"bad storage type {type_!r}")
    if type(numel) is not int or numel < 0:
        raise _corrupt(f"bad storage size {numel!r}")
    if type_.dtype is None:  # bfloat16: read the bits, widen to float32 (exact)
        return host.empty(numel, dtype=host.uint16), True
    return host.empty(numel, dtype=type_.dtype), False


def _load_zip(zf: zipfile.ZipFile, locations: _Locations, allowed: dict):
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
        array, bf16 = _storage_array(type_, numel)
        name = f"{prefix}data/{key}"
        try:
            info = zf.getinfo(name)
        except KeyError:
            raise _corrupt(f"record {name} is "
                               "missing") from None
        if info.file_size != array.nbytes:
            raise _corrupt(f"record {name} holds "
                               f"{info.file_size} bytes, but its {type_!r} of {numel} "
                               f"elements needs {array.nbytes}")
        with zf.open(info) as reader:
            _fill(array, reader, name)
        if byteorder != sys.byteorder:
            array.byteswap(inplace=True)
        if bf16:
            locations.widened_bfloat16 = True
            array = _bfloat16_to_float32(array)
        storage = _Storage(locations.restore(array, location))
        loaded[key] = storage
        return storage

    return _unpickle(zf.read(pkl[0]), allowed, persistent_load, pkl[0])


def _load_legacy(fh: BinaryIO, locations: _Locations, allowed: dict):
    """torch's pre-1.6 format: magic, protocol and sys-info pickles, the object pickle, the
    list of storage keys, then each storage as an int64 element count and its bytes."""
    magic = _unpickle(fh, {}, what="the header")
    if magic != _LEGACY_MAGIC:
        raise RuntimeError("ember.load: not a torch/ember checkpoint (invalid magic number; "
                           "corrupt file?)")
    protocol = _unpickle(fh, {}, what="the header")
    if protocol != _LEGACY_PROTOCOL:
        raise RuntimeError(f"ember.load: invalid protocol version: {protocol}")
    sys_info = _unpickle(fh, {}, what="the header")
    little = sys_info.get("little_endian", True) if isinstance(sys_info, dict) else True
    roots: dict[str, tuple] = {}  # key -> (host array, location)
    views: dict[str, _Storage] = {}

    def persistent_load(pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"ember.load: unsupported persistent id {pid!r}")
        _, type_, key, location, numel = pid[:5]
        view_meta = pid[5] if len(pid) > 5 else None
        key = str(key)
        if key not in roots:
            array, bf16 = _storage_array(type_, numel)
            if bf16:
                raise RuntimeError("ember.load: bfloat16 storages in torch's legacy (non-zip) "
                                   "format are not supported; re-save the file with torch.save")
            roots[key] = (array, location)
        array = roots[key][0]
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

    result = _unpickle(fh, allowed, persistent_load)
    keys = _unpickle(fh, {}, what="the storage keys")
    if not isinstance(keys, list):
        raise _corrupt("bad storage key list")
    for key in keys:
        if str(key) not in roots:
            raise _corrupt(f"storage {key} is unused")
        array, location = roots[str(key)]
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
    ember-side functions, and anything else raises ``pickle.UnpicklingError`` naming the
    global, without importing or calling it. ``weights_only=False`` only adds NumPy arrays
    and scalars (plain data) to that list. bfloat16 tensors load as float32 (exactly), with a
    warning. ``mmap`` is accepted for torch compatibility; the data is read into memory.
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified: ember.load supports only the standard pickle module")
    if pickle_load_args.pop("encoding", "utf-8") not in ("utf-8", "latin1", "ASCII", "ascii"):
        raise ValueError("ember.load: unsupported encoding")
    if pickle_load_args:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(pickle_load_args)}")
    allowed = _SAFE if weights_only or weights_only is None else _unsafe_extras()
    locations = _Locations(map_location)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            result = _load_from(fh, locations, allowed, os.fspath(f))
    else:
        if not hasattr(f, "read"):
            raise AttributeError(f"ember.load: expected a path or a binary file object, "
                                 f"but got {type(f).__name__}")
        seekable = getattr(f, "seekable", None)
        if seekable is None or not seekable():
            f = io.BytesIO(f.read())
        result = _load_from(f, locations, allowed, getattr(f, "name", "<file object>"))
    if locations.widened_bfloat16:
        warnings.warn("ember has no bfloat16 dtype: bfloat16 tensors were loaded as float32 "
                      "(exactly: every bfloat16 value is a float32)", UserWarning, stacklevel=2)
    return result


def _load_from(fh: BinaryIO, locations: _Locations, allowed: dict, name) -> Any:
    start = fh.tell()
    head = fh.read(4)
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
                return _load_zip(zf, locations, allowed)
            except (zipfile.BadZipFile, EOFError, OSError, zipfile.LargeZipFile) as e:
                raise RuntimeError(f"ember.load: corrupt checkpoint {name!s}: {e}") from e
    if head[:1] == b"\x80":  # a pickle: torch's legacy format
        return _load_legacy(fh, locations, allowed)
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
