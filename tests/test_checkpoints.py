"""Whole-object checkpoints: ``torch.save(model)`` / ``torch.save(optimizer)`` files (written
by torch or by ember) loaded by ``ember.load`` as ember objects, under torch's
``weights_only`` contract (``add_safe_globals`` / ``safe_globals``), and crafted files whose
claimed sizes must be refused before anything large is allocated."""

from __future__ import annotations

import io
import pickle
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import ember
from ember import serialization

torch = pytest.importorskip("torch")
tnn = torch.nn


@pytest.fixture(autouse=True)
def _empty_allowlist():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


def _saved(obj, lib=torch) -> io.BytesIO:
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return buf


# ====================================================================== torch's files
def _torch_models():
    torch.manual_seed(0)
    return {
        "mlp": (tnn.Sequential(tnn.Linear(4, 8), tnn.ReLU(), tnn.LayerNorm(8), tnn.Linear(8, 3)),
                (2, 4)),
        "conv_bn": (tnn.Sequential(tnn.Conv2d(3, 4, 3, padding=1), tnn.BatchNorm2d(4),
                                   tnn.ReLU(), tnn.Flatten(), tnn.Linear(4 * 25, 2)),
                    (2, 3, 5, 5)),
        "bn1d": (tnn.BatchNorm1d(6), (4, 6)),
        "lstm": (tnn.LSTM(4, 5, num_layers=2, batch_first=True), (2, 3, 4)),
        "gru": (tnn.GRU(3, 4, bidirectional=True), (5, 2, 3)),
        "mha": (tnn.MultiheadAttention(8, 2, batch_first=True), (2, 3, 8)),
        "embedding": (tnn.Embedding(10, 4, padding_idx=0), None),
    }


def _run(model, lib, x):
    if isinstance(model, (tnn.MultiheadAttention, ember.nn.MultiheadAttention)):
        return model(x, x, x)[0]
    if isinstance(model, (tnn.RNNBase, ember.nn.RNNBase)):
        return model(x)[0]
    return model(x)


@pytest.mark.parametrize("name", list(_torch_models()))
def test_torch_whole_model_loads_as_ember_and_runs_like_torch(name):
    model, shape = _torch_models()[name]
    if "bn" in name:  # non-trivial running statistics
        model.train()
        model(torch.randn(8, *shape[1:]))
    model.eval()
    loaded = ember.load(_saved(model), weights_only=False)
    assert type(loaded).__name__ == type(model).__name__
    assert type(loaded).__module__.startswith("ember.nn")
    assert not loaded.training
    assert list(loaded.state_dict()) == list(model.state_dict())
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(loaded.state_dict()[key].numpy(), value.numpy())
        assert str(loaded.state_dict()[key].dtype) == str(value.dtype)
    if shape is None:
        x = np.array([[1, 2, 0], [9, 3, 3]])
    else:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        want = _run(model, torch, torch.tensor(x)).numpy()
    with ember.no_grad():
        got = _run(loaded, ember, ember.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # and it trains: gradients reach the loaded parameters
    loaded.train()
    _run(loaded, ember, ember.tensor(x)).float().sum().backward()
    assert all(p.grad is not None for p in loaded.parameters() if p.requires_grad)


def test_weights_only_default_refuses_a_whole_model_as_torch_does():
    model = tnn.Sequential(tnn.Linear(2, 3), tnn.ReLU())
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(_saved(model))
    for weights_only in (True, None):
        with pytest.raises(pickle.UnpicklingError) as got:
            ember.load(_saved(model), weights_only=weights_only)
        message = str(got.value)
        assert message.startswith("Weights only load failed")
        assert "GLOBAL torch.nn.modules.container.Sequential was not an allowed global" in message
        assert "GLOBAL torch.nn.modules.container.Sequential" in str(want.value)
        assert "ember.serialization.add_safe_globals([ember.nn.Sequential])" in message
        assert "ember.serialization.safe_globals([ember.nn.Sequential])" in message
        assert "weights_only=False" in message


def test_allowlisted_classes_load_with_weights_only_true():
    model = tnn.Sequential(tnn.Linear(2, 3), tnn.ReLU())
    with serialization.safe_globals([ember.nn.Sequential]), \
            pytest.raises(pickle.UnpicklingError, match=r"add_safe_globals\(\[ember.nn.Linear\]\)"):
        ember.load(_saved(model))
    with serialization.safe_globals([ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU]):
        loaded = ember.load(_saved(model))
    assert isinstance(loaded[0], ember.nn.Linear)
    assert serialization.get_safe_globals() == []  # the block's entries are gone again
    serialization.add_safe_globals([ember.nn.Sequential, ember.nn.Linear, ember.nn.ReLU])
    assert isinstance(ember.load(_saved(model))[1], ember.nn.ReLU)


def _torch_training_state():
    torch.manual_seed(0)
    model = tnn.Sequential(tnn.Linear(3, 4), tnn.Tanh(), tnn.Linear(4, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    for _ in range(3):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
    return model, opt, x, y


@pytest.mark.parametrize("opt_name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_torch_optimizer_object_loads_as_ember(opt_name):
    torch.manual_seed(0)
    p = tnn.Parameter(torch.randn(3, 2))
    opt = getattr(torch.optim, opt_name)([p], lr=0.1)
    p.grad = torch.randn(3, 2)
    opt.step()
    loaded = ember.load(_saved(opt), weights_only=False)
    assert type(loaded) is getattr(ember.optim, opt_name)
    assert loaded.param_groups[0].keys() == opt.param_groups[0].keys()
    (lp,) = loaded.param_groups[0]["params"]
    assert isinstance(lp, ember.nn.Parameter)
    for key, value in opt.state[p].items():
        np.testing.assert_array_equal(loaded.state[lp][key].numpy(), value.numpy())
    # it keeps stepping as torch's does
    g = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    p.grad, lp.grad = torch.tensor(g), ember.tensor(g)
    opt.step()
    loaded.step()
    np.testing.assert_allclose(lp.detach().numpy(), p.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_full_training_checkpoint_resumes_like_torch():
    model, opt, x, y = _torch_training_state()
    ckpt = {"epoch": 3, "model": model, "optimizer": opt, "loss": 0.5,
            "model_state": model.state_dict(), "rng": torch.get_rng_state()}
    loaded = ember.load(_saved(ckpt), weights_only=False)
    assert loaded["epoch"] == 3 and loaded["loss"] == 0.5
    emodel, eopt = loaded["model"], loaded["optimizer"]
    # one pickle: the optimizer's parameters are the model's own objects
    assert [id(p) for p in eopt.param_groups[0]["params"]] == [id(p) for p in
                                                                emodel.parameters()]
    ex, ey = ember.tensor(x.numpy()), ember.tensor(y.numpy())
    for _ in range(3):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        eopt.zero_grad()
        ((emodel(ex) - ey) ** 2).mean().backward()
        eopt.step()
    for e, t in zip(emodel.parameters(), model.parameters()):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_torch_scheduler_object_loads():
    _, opt, _, _ = _torch_training_state()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    loaded = ember.load(_saved({"opt": opt, "sched": sched}), weights_only=False)
    esched = loaded["sched"]
    assert type(esched) is ember.optim.lr_scheduler.StepLR
    assert esched.optimizer is loaded["opt"]
    for _ in range(3):
        opt.step()
        sched.step()
        loaded["opt"].step()
        esched.step()
        assert esched.get_last_lr() == sched.get_last_lr()


# ====================================================================== ember's files
def test_ember_whole_model_and_optimizer_round_trip():
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3), ember.nn.BatchNorm2d(2),
                                ember.nn.ReLU(), ember.nn.Flatten(), ember.nn.Linear(8, 2))
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = ember.randn(3, 1, 4, 4)
    model(x).sum().backward()
    opt.step()
    model.eval()
    with pytest.raises(pickle.UnpicklingError,
                       match=r"GLOBAL ember.nn.modules.container.Sequential .*add_safe_globals"
                             r"\(\[ember.nn.Sequential\]\)"):
        ember.load(_saved(model, ember))
    loaded = ember.load(_saved({"model": model, "opt": opt}, ember), weights_only=False)
    np.testing.assert_array_equal(loaded["model"](x).detach().numpy(),
                                  model(x).detach().numpy())
    lopt = loaded["opt"]
    assert type(lopt) is ember.optim.SGD
    assert lopt.param_groups[0]["params"][0] is next(loaded["model"].parameters())
    # hook registries come back as ember's types: hooks can be added to the loaded model
    calls = []
    loaded["model"].register_forward_hook(lambda *a: calls.append(1))
    loaded["model"](x)
    assert calls == [1]


def test_ember_state_dict_of_a_model_loads_in_torch():
    model = ember.nn.Linear(2, 3)
    out = torch.load(_saved(model.state_dict(), ember), weights_only=True)
    np.testing.assert_array_equal(out["weight"].numpy(), model.weight.detach().numpy())


# ====================================================================== users' classes
class TorchNet(tnn.Module):
    def __init__(self):
        super().__init__()
        self.fc = tnn.Linear(3, 2)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(x) * self.scale


class EmberNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 2)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(x) * self.scale


def test_user_class_needs_the_allowlist_even_with_weights_only_false():
    net = TorchNet()
    name = f"{TorchNet.__module__}.TorchNet"
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError) as err:
            ember.load(_saved(net), weights_only=weights_only)
        assert f"GLOBAL {name} was not an allowed global" in str(err.value)
        assert f"add_safe_globals([{name}])" in str(err.value)
    # allowlisted under the name torch pickled it as: rebuilt as the user's ember class
    with serialization.safe_globals([(EmberNet, name), ember.nn.Linear]):
        loaded = ember.load(_saved(net))
    assert type(loaded) is EmberNet and loaded.scale == 2.0
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(loaded(ember.tensor(x)).detach().numpy(),
                               net(torch.tensor(x)).detach().numpy(), rtol=1e-6)


def test_class_pickled_in_main_resolves_to_the_running_scripts_class(monkeypatch):
    main = sys.modules["__main__"]
    torch_net = type("Net", (TorchNet,), {"__module__": "__main__"})
    ember_net = type("Net", (EmberNet,), {"__module__": "__main__"})
    monkeypatch.setattr(main, "Net", torch_net, raising=False)
    data = _saved(torch_net()).getvalue()
    assert b"c__main__\nNet\n" in data
    monkeypatch.setattr(main, "Net", ember_net)  # the script's own class, named as it is
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL __main__.Net"):
        ember.load(io.BytesIO(data), weights_only=False)
    serialization.add_safe_globals([ember_net, ember.nn.Linear])
    assert type(ember.load(io.BytesIO(data))) is ember_net


def test_torch_script_under_the_ember_alias_loads_its_own_class(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 2)

            def forward(self, x):
                return self.fc(x)

        if sys.argv[1] == "save":
            torch.manual_seed(0)
            net = Net()
            torch.save(net, sys.argv[2])
        else:
            try:
                torch.load(sys.argv[2])
            except Exception as e:
                print(type(e).__name__, "GLOBAL __main__.Net" in str(e))
            with torch.serialization.safe_globals([Net, nn.Linear]):
                net = torch.load(sys.argv[2])
            print(type(net).__name__, type(net).__module__)
        print([round(v, 5) for v in net(torch.ones(1, 3))[0].tolist()])
    """))
    ckpt = str(tmp_path / "net.pt")
    want = subprocess.run([sys.executable, str(script), "save", ckpt], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    got = subprocess.run([sys.executable, "-m", "ember", str(script), "load", ckpt],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert got == ["UnpicklingError True", "Net __main__", want[-1]]


def test_allowlist_api_like_torch():
    assert serialization.get_safe_globals() == []
    serialization.add_safe_globals([EmberNet, (ember.nn.Linear, "x.Lin")])
    assert serialization.get_safe_globals() == [EmberNet, (ember.nn.Linear, "x.Lin")]
    with serialization.safe_globals([ember.nn.ReLU]):
        assert ember.nn.ReLU in serialization.get_safe_globals()
    assert ember.nn.ReLU not in serialization.get_safe_globals()
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with pytest.raises(ValueError, match="Expected tuple of length 2"):
        serialization.add_safe_globals([(EmberNet,)])
    with pytest.raises(TypeError, match="Expected a callable"):
        serialization.add_safe_globals([3])


def test_ember_classes_trusted_by_weights_only_false_never_run_init_with_file_args():
    """A crafted ``Linear(10**6, 10**6)`` REDUCE would allocate terabytes in ``__init__``."""
    reduce_call = (b"\x80\x02cember.nn.modules.linear\nLinear\nJ\x40\x42\x0f\x00"
                   b"J\x40\x42\x0f\x00\x86R.")
    newobj_args = (b"\x80\x02cember.nn.modules.linear\nLinear\nJ\x40\x42\x0f\x00\x85\x81.")
    for payload, what in ((reduce_call, "refused to call Linear"),
                          (newobj_args, "refused Linear.__new__ with arguments")):
        with pytest.raises(pickle.UnpicklingError, match=what):
            ember.load(_zip({"archive/data.pkl": payload}), weights_only=False)


def test_module_holding_a_functional_activation_loads_and_runs_like_torch():
    """``TransformerEncoderLayer.activation`` is ``F.relu``: torch pickles the function by
    name; ember resolves it to its own ``F.relu`` as a value (weights_only=False)."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).eval()
    buf = io.BytesIO()
    torch.save(layer, buf)
    buf.seek(0)
    loaded = ember.load(buf, weights_only=False).eval()
    assert loaded.activation is ember.nn.functional.relu
    x = np.sin(np.arange(24, dtype=np.float32)).reshape(3, 1, 8)
    with torch.no_grad():
        expected = layer(torch.tensor(x)).numpy()
    np.testing.assert_allclose(loaded(ember.tensor(x)).detach().numpy(), expected, rtol=1e-5,
                               atol=1e-6)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="TransformerEncoderLayer"):
        ember.load(buf)  # weights_only=True: whole modules need the allowlist, as in torch


def test_functional_global_is_never_called_from_the_file():
    payload = b"\x80\x02ctorch.nn.functional\nrelu\nK\x01\x85R."
    with pytest.raises(pickle.UnpicklingError, match="refused to call relu"):
        ember.load(_zip({"archive/data.pkl": payload}), weights_only=False)


# ====================================================================== crafted files
def _zip(records: dict) -> io.BytesIO:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in records.items():
            zf.writestr(name, data)
    buf.seek(0)
    return buf


def _storage_pickle(numel: int) -> bytes:
    """``_rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', numel), 0, (numel,), (1,))``."""
    return (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
            b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
            + b"\x8a\x08" + struct.pack("<q", numel) + b"tQK\x00"
            + b"\x8a\x08" + struct.pack("<q", numel) + b"\x85K\x01\x85\x89tR.")


def _assert_refused_cheaply(make_file, match, **kwargs):
    """The load fails with ``match`` in well under a second, allocating under 10 MB."""
    f = make_file()
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises((RuntimeError, pickle.UnpicklingError), match=match):
            ember.load(f, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - start < 2
    assert peak < 10 * 2**20, f"peak allocation {peak} bytes"


def test_storage_claiming_a_terabyte_is_refused_before_allocating():
    _assert_refused_cheaply(
        lambda: _zip({"archive/data.pkl": _storage_pickle(2**38),
                      "archive/data/0": b"\x00" * 16}),
        r"FloatStorage of 274877906944 elements needs 1099511627776 bytes, but record "
        r"archive/data/0 holds 16")


def test_storage_count_mismatch_is_refused():
    _assert_refused_cheaply(
        lambda: _zip({"archive/data.pkl": _storage_pickle(5), "archive/data/0": b"\x00" * 40}),
        r"record archive/data/0 holds 40 bytes, but its torch.FloatStorage of 5 elements "
        r"needs 20")


def test_storage_count_matching_its_record_loads():
    out = ember.load(_zip({"archive/data.pkl": _storage_pickle(4),
                           "archive/data/0": np.arange(4, dtype="<f4").tobytes()}))
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3])


@pytest.mark.parametrize(("opcode", "length_format"), [
    (b"\x8e", "<Q"),   # BINBYTES8
    (b"\x8d", "<Q"),   # BINUNICODE8
    (b"\x96", "<Q"),   # BYTEARRAY8
    (b"\x8b", "<i"),   # LONG4
    (b"T", "<i"),      # BINSTRING
    (b"X", "<I"),      # BINUNICODE
    (b"B", "<I"),      # BINBYTES
    (b"\x95", "<Q"),   # FRAME
])
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_pickle_lengths_claiming_more_than_the_file_are_refused(opcode, length_format,
                                                                container, tmp_path):
    huge = 2**31 - 1 if length_format in ("<i", "<I") else 2**40
    pkl = b"\x80\x04" + opcode + struct.pack(length_format, huge) + b"abc."
    if container == "zip":
        def make():
            return _zip({"archive/data.pkl": pkl})
    else:  # a real file: a buffered read allocates its whole claimed size up front
        path = tmp_path / "legacy.pt"
        with open(path, "wb") as fh:
            for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
                pickle.dump(header, fh, protocol=2)
            fh.write(pkl)

        def make():
            return path
    _assert_refused_cheaply(make, rf"claims {huge} bytes at offset \d+, but only \d+ remain")


def test_legacy_storage_claiming_more_than_the_file_is_refused(tmp_path):
    path = tmp_path / "legacy.pt"
    with open(path, "wb") as fh:
        for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
            pickle.dump(header, fh, protocol=2)
        fh.write(_storage_pickle(2**37))
        pickle.dump(["0"], fh, protocol=2)
        fh.write(struct.pack("<q", 2**37))
    _assert_refused_cheaply(lambda: path, r"needs 549755813888 bytes, but the rest of the "
                                          r"file holds \d+")


def test_zip_records_claiming_more_than_the_archive_are_refused():
    def crafted():
        raw = bytearray(_zip({"archive/data.pkl": _storage_pickle(2),
                              "archive/data/0": b"\x00" * 8}).getvalue())
        # the central directory's entry for data/0: claim 2**31 stored bytes
        cd = raw.rindex(b"PK\x01\x02")
        raw[cd + 20:cd + 28] = struct.pack("<II", 2**31, 2**31)
        return io.BytesIO(bytes(raw))
    _assert_refused_cheaply(crafted, r"record archive/data/0 claims 2147483648 bytes")


def test_deflated_record_claiming_an_impossible_ratio_is_refused():
    def crafted():
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("archive/data.pkl", _storage_pickle(2))
            zf.writestr("archive/data/0", b"\x00" * 8)
        raw = bytearray(buf.getvalue())
        cd = raw.rindex(b"PK\x01\x02")
        raw[cd + 24:cd + 28] = struct.pack("<I", 2**31)  # uncompressed size
        return io.BytesIO(bytes(raw))
    _assert_refused_cheaply(crafted, r"deflated record archive/data/0 claims 2147483648 bytes")


def test_truncated_whole_model_file_is_refused():
    raw = _saved(tnn.Sequential(tnn.Linear(30, 30), tnn.ReLU())).getvalue()
    for cut in (len(raw) - 5, len(raw) // 2, 100):
        _assert_refused_cheaply(lambda cut=cut: io.BytesIO(raw[:cut]), "ember.load",
                                weights_only=False)


def test_bytearray_of_a_huge_size_is_refused():
    pkl = b"\x80\x02c__builtin__\nbytearray\n\x8a\x05\x00\x00\x00\x00\x01\x85R."
    _assert_refused_cheaply(lambda: _zip({"archive/data.pkl": pkl}),
                            r"refused bytearray\(<int>\)")
