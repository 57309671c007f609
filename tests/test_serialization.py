"""ember.save / ember.load (torch's checkpoint format) and the safetensors helpers.

Round trips in ember, files written by torch read by ember, files written by ember read by
``torch.load(weights_only=True)``, refusal of pickled code, corrupt files, atomic saves.
"""

from __future__ import annotations

import importlib.util

import io
import os
import pathlib
import pickle
import struct
import sys
import warnings
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import serialization
from ember._backend.dtypes import DTYPES as _ALL_DTYPES

# bfloat16 needs the optional ml_dtypes (the bfloat16 extra): its cases skip without it
DTYPES = [pytest.param(d, marks=pytest.mark.skipif(
    d.name == "bfloat16" and importlib.util.find_spec("ml_dtypes") is None,
    reason="bfloat16 needs ml_dtypes (pip install ember[bfloat16])")) for d in _ALL_DTYPES]


def _sample(dtype, shape=(3, 4)):
    rng = np.random.default_rng(0)
    if dtype is ember.bool:
        return ember.tensor(rng.random(shape) > 0.5)
    if dtype.is_floating_point:
        return ember.tensor(rng.standard_normal(shape).astype(dtype.np))
    if dtype.is_complex:
        return ember.tensor((rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
                            .astype(dtype.np))
    info = np.iinfo(dtype.np)
    return ember.tensor(rng.integers(info.min, info.max, size=shape, dtype=dtype.np,
                                     endpoint=True))


def _roundtrip(obj, tmp_path, **load_kwargs):
    path = tmp_path / "ckpt.pt"
    ember.save(obj, path)
    return ember.load(path, **load_kwargs)


def _assert_same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())


def _zip_with_pickle(path, pickled: bytes, extra: dict | None = None):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/version", b"3\n")
        for name, data in (extra or {}).items():
            zf.writestr(name, data)


# ====================================================================== ember round trips
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_roundtrip_every_dtype(tmp_path, dtype):
    t = _sample(dtype)
    out = _roundtrip(t, tmp_path)
    _assert_same(out, t)
    assert out.stride() == t.stride()


def test_roundtrip_zero_dim_and_empty(tmp_path):
    obj = {"scalar": ember.tensor(3.5), "int": ember.tensor(7), "empty": ember.zeros(0, 3),
           "one": ember.ones(1)}
    out = _roundtrip(obj, tmp_path)
    for k, v in obj.items():
        _assert_same(out[k], v)
    assert out["scalar"].dim() == 0 and out["scalar"].item() == 3.5


def test_views_share_one_storage_and_keep_their_layout(tmp_path):
    base = ember.arange(24.0).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2],
             "exp": ember.arange(3.0)[:, None].expand(3, 5)}
    out = _roundtrip(views, tmp_path)
    for k, v in views.items():
        _assert_same(out[k], v)
        assert out[k].stride() == v.stride(), k
        assert out[k].storage_offset() == v.storage_offset(), k
    with zipfile.ZipFile(tmp_path / "ckpt.pt") as zf:  # base and its three views: one record
        assert sum(n.startswith("archive/data/") for n in zf.namelist()) == 2
    out["base"][2, 0] = 100.0  # still views of one base after loading
    assert out["row"][0].item() == 100.0 and out["t"][0, 2].item() == 100.0


def test_negative_stride_view_is_saved_as_a_copy(tmp_path):
    a = ember.arange(6.0)
    flipped = ember.tensor(0.0)
    flipped._data = a._data[::-1]  # NumPy-only layout torch has no tensors for
    out = _roundtrip(flipped, tmp_path)
    np.testing.assert_array_equal(out.cpu().numpy(), [5, 4, 3, 2, 1, 0])


def test_parameter_and_requires_grad(tmp_path):
    p = ember.nn.Parameter(ember.randn(3, 2))
    frozen = ember.nn.Parameter(ember.randn(2), requires_grad=False)
    leaf = ember.randn(4, requires_grad=True)
    out = _roundtrip({"p": p, "frozen": frozen, "leaf": leaf}, tmp_path)
    assert isinstance(out["p"], ember.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], ember.nn.Parameter) and not out["frozen"].requires_grad
    assert type(out["leaf"]) is ember.Tensor and out["leaf"].requires_grad
    assert out["leaf"].is_leaf
    _assert_same(out["p"], p)


def test_module_state_dict_roundtrip(tmp_path):
    if not hasattr(ember.nn, "Linear"):
        pytest.skip("ember.nn.Linear not available")
    m = ember.nn.Linear(4, 3)
    sd = m.state_dict()
    out = _roundtrip(sd, tmp_path)
    assert type(out) is OrderedDict and list(out) == list(sd)
    assert getattr(out, "_metadata", None) == getattr(sd, "_metadata", None)
    m2 = ember.nn.Linear(4, 3)
    m2.load_state_dict(out)
    for k in sd:
        _assert_same(m2.state_dict()[k], sd[k])


def test_optimizer_state_dict_and_containers_roundtrip(tmp_path):
    w = ember.randn(3)
    state = {
        "state": {0: {"step": ember.tensor(3.0), "exp_avg": w * 0.1, "exp_avg_sq": w * w}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0,
                          "amsgrad": False, "maximize": False, "foreach": None,
                          "params": [0]}],
    }
    misc = {"none": None, "t": True, "f": False, "i": -(2**70), "s": "ünïcode", "b": b"\x00\xff",
            "c": 1 + 2j, "set": {1, 2}, "fs": frozenset({3}), "nested": [(1, [2, {"x": 3}])],
            "size": ember.Size([2, 3]), "dtype": ember.float16, "device": ember.device("cpu"),
            "ba": bytearray(b"ab"), "od": OrderedDict(a=1)}
    out = _roundtrip({"opt": state, "misc": misc}, tmp_path)
    assert out["misc"] == misc
    assert type(out["misc"]["size"]) is ember.Size and out["misc"]["dtype"] is ember.float16
    g = out["opt"]["param_groups"][0]
    assert g == state["param_groups"][0]
    for k, v in state["state"][0].items():
        _assert_same(out["opt"]["state"][0][k], v)


def test_shared_object_identity_is_kept(tmp_path):
    t = ember.randn(2)
    lst = [1, 2]
    out = _roundtrip({"a": t, "b": t, "l1": lst, "l2": lst}, tmp_path)
    assert out["a"] is out["b"] and out["l1"] is out["l2"]


def test_paths_and_file_objects(tmp_path):
    t = ember.randn(5)
    ember.save(t, str(tmp_path / "s.pt"))
    _assert_same(ember.load(str(tmp_path / "s.pt")), t)
    buf = io.BytesIO()
    ember.save(t, buf)
    buf.seek(0)
    _assert_same(ember.load(buf), t)

    class Stream(io.RawIOBase):  # write-only, not seekable
        def __init__(self):
            self.chunks = []

        def writable(self):
            return True

        def write(self, b):
            self.chunks.append(bytes(b))
            return len(b)

    s = Stream()
    ember.save(t, s)
    _assert_same(ember.load(io.BytesIO(b"".join(s.chunks))), t)


def test_records_are_torch_layout_and_aligned(tmp_path):
    path = tmp_path / "a.pt"
    ember.save({"x": ember.ones(3)}, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        assert names[0] == "archive/data.pkl"
        for rec in ("archive/byteorder", "archive/version", "archive/data/0",
                    "archive/.format_version", "archive/.storage_alignment"):
            assert rec in names
        assert zf.read("archive/version") == b"3\n"
        assert zf.read("archive/byteorder") == b"little"
        infos = zf.infolist()
    raw = path.read_bytes()
    for info in infos:  # each record's data starts on a 64-byte boundary, as torch's do
        n, e = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        assert (info.header_offset + 30 + n + e) % 64 == 0, info.filename


def test_map_location_forms(tmp_path):
    t = ember.randn(3)
    path = tmp_path / "m.pt"
    ember.save(t, path)
    for ml in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s,
               lambda s, loc: s.cpu(), lambda s, loc: None):
        _assert_same(ember.load(path, map_location=ml), t)
    with pytest.raises(RuntimeError, match="CUDA device"):
        ember.load(path, map_location="cuda")


def _cuda_checkpoint(tmp_path):
    """An ember checkpoint whose storage location says cuda:0 (as a GPU torch's would)."""
    src = tmp_path / "src.pt"
    ember.save({"w": ember.arange(4.0)}, src)
    path = tmp_path / "cuda.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("data.pkl"):
                data = data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            zout.writestr(info.filename, data)
    return path


def test_map_location_for_cuda_saved_storages(tmp_path):
    path = _cuda_checkpoint(tmp_path)
    with pytest.raises(RuntimeError, match="map_location=torch.device\\('cpu'\\)"):
        ember.load(path)
    seen = []
    for ml in ("cpu", ember.device("cpu"), {"cuda:0": "cpu"},
               lambda s, loc: seen.append(loc) or s):
        np.testing.assert_array_equal(ember.load(path, map_location=ml)["w"].cpu().numpy(),
                                      [0, 1, 2, 3])
    assert seen == ["cuda:0"]


def test_load_rejects_other_pickle_modules(tmp_path):
    ember.save(ember.ones(1), tmp_path / "a.pt")
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(tmp_path / "a.pt", pickle_module=object())


def test_import_ember_stays_lazy():
    import subprocess
    code = ("import sys, ember; assert 'ember.serialization' not in sys.modules; "
            "ember.save; assert 'ember.serialization' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=pathlib.Path(__file__).resolve().parent.parent)


# ====================================================================== torch -> ember
def test_torch_linear_state_dict_loads_in_ember(torch, tmp_path):
    lin = torch.nn.Linear(5, 3)
    path = tmp_path / "torch.pt"
    torch.save(lin.state_dict(), path)
    sd = ember.load(path)
    assert type(sd) is OrderedDict and list(sd) == ["weight", "bias"]
    assert sd._metadata == lin.state_dict()._metadata
    for k, v in lin.state_dict().items():
        np.testing.assert_array_equal(sd[k].cpu().numpy(), v.cpu().numpy())
        assert sd[k].dtype == ember.float32 and tuple(sd[k].shape) == tuple(v.shape)
    if hasattr(ember.nn, "Linear"):
        em = ember.nn.Linear(5, 3)
        em.load_state_dict(sd)
        x = np.random.default_rng(1).standard_normal((2, 5)).astype(np.float32)
        np.testing.assert_allclose(em(ember.tensor(x)).detach().cpu().numpy(),
                                   lin(torch.tensor(x)).detach().cpu().numpy(), rtol=1e-6, atol=1e-6)


_TORCH_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                 "float64", "complex64", "complex128"]


@pytest.mark.parametrize("name", _TORCH_DTYPES)
def test_torch_every_dtype_loads_in_ember(torch, tmp_path, name):
    t = torch.from_numpy(_sample(getattr(ember, name)).cpu().numpy().copy())
    obj = {"t": t, "tt": t.t(), "scalar": t[1, 2].clone(), "row": t[1]}
    torch.save(obj, tmp_path / "d.pt")
    out = ember.load(tmp_path / "d.pt")
    for k, v in obj.items():
        assert out[k].dtype == getattr(ember, name), k
        np.testing.assert_array_equal(out[k].cpu().numpy(), v.cpu().numpy())
        assert out[k].stride() == v.stride() and out[k].storage_offset() == v.storage_offset()
    assert out["t"].data_ptr() == out["tt"].data_ptr()  # one storage, as in torch


def test_torch_parameter_size_dtype_and_containers(torch, tmp_path):
    obj = {"p": torch.nn.Parameter(torch.randn(2, 2)), "size": torch.Size([2, 3]),
           "dtype": torch.int16, "device": torch.device("cpu"), "b": b"xy", "s": {1, 2},
           "c": 2 - 1j, "tup": (1, None, "s", 2.5), "od": OrderedDict(a=torch.ones(1))}
    torch.save(obj, tmp_path / "c.pt")
    out = ember.load(tmp_path / "c.pt")
    assert isinstance(out["p"], ember.nn.Parameter) and out["p"].requires_grad
    np.testing.assert_array_equal(out["p"].detach().cpu().numpy(), obj["p"].detach().cpu().numpy())
    assert out["size"] == ember.Size([2, 3]) and type(out["size"]) is ember.Size
    assert out["dtype"] is ember.int16 and out["device"] == ember.device("cpu")
    assert out["b"] == b"xy" and out["s"] == {1, 2} and out["c"] == 2 - 1j
    assert out["tup"] == (1, None, "s", 2.5)


def test_torch_optimizer_state_dict_loads_in_ember(torch, tmp_path):
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.randn(4, 3)).sum().backward()
    opt.step()
    torch.save(opt.state_dict(), tmp_path / "opt.pt")
    out = ember.load(tmp_path / "opt.pt")
    ref = opt.state_dict()
    assert out["param_groups"] == ref["param_groups"]
    for i, st in ref["state"].items():
        for k, v in st.items():
            np.testing.assert_array_equal(out["state"][i][k].cpu().numpy(), v.cpu().numpy())


def test_torch_bfloat16_loads_as_bfloat16(torch, tmp_path):
    pytest.importorskip("ml_dtypes")
    t = torch.tensor([1.5, -2.25, 3e38, 1e-30]).to(torch.bfloat16)
    torch.save({"t": t, "legacy": t}, tmp_path / "bf.pt")
    torch.save(t, tmp_path / "bf_legacy.pt", _use_new_zipfile_serialization=False)
    for out in (ember.load(tmp_path / "bf.pt")["t"], ember.load(tmp_path / "bf_legacy.pt")):
        assert out.dtype == ember.bfloat16
        np.testing.assert_array_equal(out.float().numpy(), t.float().numpy())


def test_torch_bfloat16_loads_as_float32_with_a_warning_without_ml_dtypes(torch, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setattr(serialization, "_bfloat16_dtype", lambda: None)
    t = torch.tensor([1.5, -2.25, 3e38, 1e-30]).to(torch.bfloat16)
    torch.save(t, tmp_path / "bf.pt")
    with pytest.warns(UserWarning, match="bfloat16"):
        out = ember.load(tmp_path / "bf.pt")
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.cpu().numpy(), t.float().cpu().numpy())


def test_torch_legacy_format_loads_in_ember(torch, tmp_path):
    base = torch.arange(6.0)
    obj = {"a": base, "b": base[2:], "c": torch.tensor([1, 2], dtype=torch.int16),
           "p": torch.nn.Parameter(torch.ones(2))}
    torch.save(obj, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    out = ember.load(tmp_path / "legacy.pt")
    for k, v in obj.items():
        np.testing.assert_array_equal(out[k].detach().cpu().numpy(), v.detach().cpu().numpy())
    assert isinstance(out["p"], ember.nn.Parameter)
    with open(tmp_path / "legacy.pt", "rb") as fh:
        np.testing.assert_array_equal(ember.load(fh)["b"].cpu().numpy(), [2, 3, 4, 5])


def test_torch_file_object_and_big_endian(torch, tmp_path):
    buf = io.BytesIO()
    torch.save({"x": torch.arange(5, dtype=torch.int32)}, buf)
    buf.seek(0)
    np.testing.assert_array_equal(ember.load(buf)["x"].cpu().numpy(), np.arange(5))
    path = tmp_path / "be.pt"
    src = tmp_path / "le.pt"
    ember.save(ember.arange(5, dtype=ember.int32), src)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                data = np.frombuffer(data, "<i4").astype(">i4").tobytes()
            zout.writestr(info.filename, data)
    np.testing.assert_array_equal(ember.load(path).cpu().numpy(), np.arange(5))


# ====================================================================== ember -> torch
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ember_files_load_in_torch_every_dtype(torch, tmp_path, dtype):
    t = _sample(dtype)
    ember.save({"t": t, "scalar": t[1, 2].clone()}, tmp_path / "e.pt")
    out = torch.load(tmp_path / "e.pt", weights_only=True)
    assert str(out["t"].dtype) == str(dtype)
    if dtype is ember.bfloat16:  # torch has no NumPy bfloat16: compare as float32
        out["t"], t = out["t"].float(), t.float()
    np.testing.assert_array_equal(out["t"].cpu().numpy(), t.cpu().numpy())
    assert out["scalar"].dim() == 0 and out["scalar"].item() == t[1, 2].item()


def test_ember_views_load_in_torch_with_shared_storage(torch, tmp_path):
    base = ember.arange(24.0).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2],
             "exp": base[0].expand(3, 6)}
    ember.save(views, tmp_path / "v.pt")
    out = torch.load(tmp_path / "v.pt", weights_only=True)
    ptr = out["base"].untyped_storage().data_ptr()
    for k, v in views.items():
        np.testing.assert_array_equal(out[k].cpu().numpy(), v.cpu().numpy())
        assert out[k].stride() == v.stride() and out[k].storage_offset() == v.storage_offset()
        assert out[k].untyped_storage().data_ptr() == ptr, k
    out["base"][2, 0] = -1.0
    assert out["row"][0].item() == -1.0
    mm = torch.load(tmp_path / "v.pt", weights_only=True, mmap=True)  # needs aligned records
    np.testing.assert_array_equal(mm["cols"].cpu().numpy(), views["cols"].cpu().numpy())


def test_ember_state_dict_loads_into_torch_module(torch, tmp_path):
    sd = OrderedDict(weight=ember.randn(3, 5), bias=ember.randn(3))
    sd._metadata = OrderedDict({"": {"version": 1}})
    ember.save(sd, tmp_path / "sd.pt")
    loaded = torch.load(tmp_path / "sd.pt", weights_only=True)
    assert loaded._metadata == {"": {"version": 1}}
    lin = torch.nn.Linear(5, 3)
    lin.load_state_dict(loaded)
    np.testing.assert_array_equal(lin.weight.detach().cpu().numpy(), sd["weight"].cpu().numpy())


def test_ember_parameter_and_misc_load_in_torch(torch, tmp_path):
    obj = {"p": ember.nn.Parameter(ember.ones(2)), "g": ember.ones(2, requires_grad=True),
           "size": ember.Size([1, 2]), "dtype": ember.float64, "dev": ember.device("cpu"),
           "nested": [1, (2.5, "x"), {"k": None}], "b": b"\x01", "set": {3}}
    ember.save(obj, tmp_path / "p.pt")
    out = torch.load(tmp_path / "p.pt", weights_only=True)
    assert isinstance(out["p"], torch.nn.Parameter) and out["p"].requires_grad
    assert out["g"].requires_grad and not isinstance(out["g"], torch.nn.Parameter)
    assert out["size"] == torch.Size([1, 2]) and out["dtype"] is torch.float64
    assert out["dev"] == torch.device("cpu")
    assert out["nested"] == [1, (2.5, "x"), {"k": None}]
    assert out["b"] == b"\x01" and out["set"] == {3}


def test_ember_optimizer_state_dict_loads_into_torch_optimizer(torch, tmp_path):
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.randn(4, 3)).sum().backward()
    opt.step()
    ref = opt.state_dict()
    em_state = {"state": {i: {k: ember.tensor(v.cpu().numpy()) for k, v in st.items()}
                          for i, st in ref["state"].items()},
                "param_groups": ref["param_groups"]}
    ember.save(em_state, tmp_path / "o.pt")
    opt2 = torch.optim.Adam(lin.parameters(), lr=0.5)
    opt2.load_state_dict(torch.load(tmp_path / "o.pt", weights_only=True))
    assert opt2.param_groups[0]["lr"] == 0.01
    torch.testing.assert_close(opt2.state_dict()["state"][0]["exp_avg"],
                               ref["state"][0]["exp_avg"])


# ====================================================================== refusing code
class _Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


def _evil_pickles(marker):
    cmd = f"touch {marker}"
    return {
        "os.system": pickle.dumps({"x": _Reduce(os.system, (cmd,))}, protocol=2),
        "builtins.eval": pickle.dumps(_Reduce(eval, (f"open({str(marker)!r}, 'w')",)),
                                      protocol=2),
        "builtins.exec protocol 4": pickle.dumps(
            [_Reduce(exec, (f"open({str(marker)!r}, 'w')",))], protocol=4),
        "posix.system GLOBAL": (b"\x80\x02cposix\nsystem\nX" + struct.pack("<I", len(cmd))
                                + cmd.encode() + b"\x85R."),
        "__builtin__.eval": b"c__builtin__\neval\n(V" + f"open({str(marker)!r},'w')".encode()
                            + b"\ntR.",
    }


@pytest.mark.parametrize("weights_only", [True, False])
def test_malicious_pickle_in_zip_is_refused_and_not_run(tmp_path, weights_only):
    marker = tmp_path / "pwned"
    for label, payload in _evil_pickles(marker).items():
        path = tmp_path / "evil.pt"
        _zip_with_pickle(path, payload)
        with pytest.raises(pickle.UnpicklingError, match="Unsupported global") as err:
            ember.load(path, weights_only=weights_only)
        assert "GLOBAL " in str(err.value), label
        assert not marker.exists(), f"{label} ran"
    assert "GLOBAL posix.system" in str(err.value) or "GLOBAL builtins.eval" in str(err.value)


def test_refusal_names_the_global(tmp_path):
    path = tmp_path / "evil.pt"
    _zip_with_pickle(path, pickle.dumps(_Reduce(os.system, ("true",)), protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (os|posix)\.system"):
        ember.load(path)


def test_malicious_legacy_pickle_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "legacy_evil.pt"
    with open(path, "wb") as fh:
        for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(header, fh, protocol=2)
        fh.write(_evil_pickles(marker)["os.system"])
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(path)
    assert not marker.exists()
    bad_header = tmp_path / "legacy_evil_header.pt"
    bad_header.write_bytes(_evil_pickles(marker)["os.system"])
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(bad_header)
    assert not marker.exists()


def test_state_cannot_be_set_on_tensors_or_written_into_them(tmp_path):
    good = tmp_path / "good.pt"
    ember.save([ember.zeros(2)], good)
    with zipfile.ZipFile(good) as zf:
        records = {n: zf.read(n) for n in zf.namelist()}
    pkl = records.pop("archive/data.pkl")
    assert pkl.endswith(b"a.")  # ... tensor APPEND STOP
    attacks = {
        "BUILD": pkl[:-2] + b"}X\x05\x00\x00\x00_dataK\x01sba.",
        "SETITEM": pkl[:-2] + b"K\x00K\x07sa.",
    }
    for label, payload in attacks.items():
        path = tmp_path / f"{label}.pt"
        _zip_with_pickle(path, payload, {k: v for k, v in records.items()
                                         if k != "archive/version"})
        with pytest.raises(pickle.UnpicklingError, match=f"refused {label}"):
            ember.load(path)


def test_weights_only_false_adds_numpy_arrays_only(tmp_path):
    path = tmp_path / "np.pt"
    _zip_with_pickle(path, pickle.dumps({"a": np.arange(3.0), "s": np.float32(2)}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        ember.load(path)
    out = ember.load(path, weights_only=False)
    np.testing.assert_array_equal(out["a"], [0, 1, 2])
    assert out["s"] == 2


# ====================================================================== corrupt files
def test_truncated_files_raise_clear_errors(tmp_path):
    path = tmp_path / "full.pt"
    ember.save({"w": ember.randn(50, 50), "b": ember.randn(50)}, path)
    raw = path.read_bytes()
    for cut in (len(raw) - 1, len(raw) - 30, len(raw) // 2, 200, 10, 3):
        bad = tmp_path / f"cut{cut}.pt"
        bad.write_bytes(raw[:cut])
        with pytest.raises(RuntimeError, match="ember.load"):
            ember.load(bad)


def test_garbage_and_empty_files_raise_clear_errors(tmp_path):
    cases = {"garbage": os.urandom(64).replace(b"\x80", b"a").replace(b"PK", b"pk"),
             "text": b"hello world, not a checkpoint",
             "empty": b"", "bad pickle": b"\x80\x02}q\x00(X\x01",
             "zip without data.pkl": None}
    for label, data in cases.items():
        path = tmp_path / "bad.pt"
        if data is None:
            with zipfile.ZipFile(path, "w") as zf:
                zf.writestr("x/readme", b"hi")
        else:
            path.write_bytes(data)
        with pytest.raises(RuntimeError, match="ember.load") as err:
            ember.load(path)
        assert "checkpoint" in str(err.value), label


def test_corrupt_storage_records_raise_clear_errors(tmp_path):
    good = tmp_path / "good.pt"
    ember.save({"w": ember.arange(6.0)}, good)
    with zipfile.ZipFile(good) as zf:
        records = {n: zf.read(n) for n in zf.namelist()}
    pkl = records["archive/data.pkl"]
    variants = {
        "missing": ({k: v for k, v in records.items() if "/data/" not in k}, "missing"),
        "short": ({**records, "archive/data/0": records["archive/data/0"][:-4]}, "bytes"),
        # a stride that would read past the storage's end
        "bounds": ({**records, "archive/data.pkl": pkl.replace(b"K\x01\x85", b"K\x07\x85")},
                   "needs"),
    }
    for label, (recs, message) in variants.items():
        path = tmp_path / f"{label}.pt"
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in recs.items():
                zf.writestr(name, data)
        with pytest.raises(RuntimeError, match=message):
            ember.load(path)


def test_crc_damage_is_detected(tmp_path):
    path = tmp_path / "crc.pt"
    ember.save(ember.arange(64.0), path)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("archive/data/0")
    n, e = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
    raw[info.header_offset + 30 + n + e + 5] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match="corrupt"):
        ember.load(path)


# ====================================================================== atomic saves
def test_interrupted_save_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "model.pt"
    ember.save({"v": ember.ones(3)}, path)
    before = path.read_bytes()
    real = serialization._write_record
    calls = []

    def failing(zf, fh, name, data):
        calls.append(name)
        if name.startswith("archive/data/"):
            real(zf, fh, name, data)
            raise KeyboardInterrupt("simulated crash mid-write")
        real(zf, fh, name, data)

    monkeypatch.setattr(serialization, "_write_record", failing)
    with pytest.raises(KeyboardInterrupt):
        ember.save({"v": ember.zeros(1000)}, path)
    assert "archive/data.pkl" in calls
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.pt"]  # the temporary file is gone
    monkeypatch.undo()
    np.testing.assert_array_equal(ember.load(path)["v"].cpu().numpy(), [1, 1, 1])


def test_unpicklable_object_leaves_no_file(tmp_path):
    path = tmp_path / "new.pt"
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        ember.save({"f": lambda: 0}, path)
    assert os.listdir(tmp_path) == []


def test_save_keeps_permissions_and_replaces(tmp_path):
    path = tmp_path / "perm.pt"
    ember.save(ember.ones(1), path)
    os.chmod(path, 0o640)
    ember.save(ember.zeros(1), path)
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert ember.load(path).item() == 0.0


def test_save_to_missing_directory_raises(tmp_path):
    with pytest.raises(RuntimeError, match="does not exist"):
        ember.save(ember.ones(1), tmp_path / "nope" / "x.pt")


# ====================================================================== safetensors
def test_safetensors_roundtrip_every_dtype(tmp_path):
    pytest.importorskip("safetensors")
    tensors = {f"t_{d.name}": _sample(d) for d in _ALL_DTYPES
               if (d.name != "bfloat16" or importlib.util.find_spec("ml_dtypes"))
               and d.name != "complex128"}  # (the safetensors format has no complex128)
    tensors["scalar"] = ember.tensor(2.5)
    ember.save_safetensors(tensors, tmp_path / "m.safetensors", metadata={"format": "pt"})
    out = ember.load_safetensors(tmp_path / "m.safetensors")
    assert set(out) == set(tensors)
    for k, v in tensors.items():
        _assert_same(out[k], v)
    out["scalar"].add_(1.0)  # loaded tensors are writable
    from safetensors import safe_open
    with safe_open(str(tmp_path / "m.safetensors"), framework="numpy") as f:
        assert f.metadata() == {"format": "pt"}


def test_safetensors_transposed_view_regression(tmp_path):
    """safetensors 0.8 writes a non-contiguous array's memory order: ember passes a copy."""
    pytest.importorskip("safetensors")
    base = ember.arange(12.0).reshape(3, 4)
    views = {"t": base.t(), "cols": base[:, ::2], "exp": base[0].expand(2, 4)}
    ember.save_safetensors(views, tmp_path / "v.safetensors")
    out = ember.load_safetensors(tmp_path / "v.safetensors")
    for k, v in views.items():
        np.testing.assert_array_equal(out[k].cpu().numpy(), v.cpu().numpy())


def test_safetensors_interop_with_torch(torch, tmp_path):
    st_torch = pytest.importorskip("safetensors.torch")
    w = ember.randn(4, 3)
    ember.save_safetensors({"w": w.t()}, tmp_path / "e.safetensors")
    np.testing.assert_array_equal(st_torch.load_file(tmp_path / "e.safetensors")["w"].cpu().numpy(),
                                  w.t().cpu().numpy())
    st_torch.save_file({"x": torch.arange(6).reshape(2, 3)}, tmp_path / "t.safetensors")
    np.testing.assert_array_equal(ember.load_safetensors(tmp_path / "t.safetensors")["x"].cpu().numpy(),
                                  np.arange(6).reshape(2, 3))


def test_safetensors_bad_input(tmp_path):
    pytest.importorskip("safetensors")
    with pytest.raises(TypeError, match="not a Tensor"):
        ember.save_safetensors({"a": np.ones(2)}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="strings"):
        ember.save_safetensors({1: ember.ones(1)}, tmp_path / "x.safetensors")
    assert os.listdir(tmp_path) == []


def test_safetensors_missing_package_message(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match="pip install safetensors"):
        ember.save_safetensors({"a": ember.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(ImportError, match="pip install safetensors"):
        ember.load_safetensors(tmp_path / "x.safetensors")


def test_no_warnings_on_plain_roundtrip(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _roundtrip({"a": ember.ones(2)}, tmp_path)
