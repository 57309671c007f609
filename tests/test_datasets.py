"""MNIST / FashionMNIST read from tiny IDX files written here, and ember.show_config()."""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember.utils.data import MNIST, DataLoader, FashionMNIST
from ember.utils.data.datasets import MNIST as MNIST_from_module

N_TRAIN, N_TEST = 5, 3


def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding of a uint8 array: magic (0, 0, 0x08, ndim), big-endian sizes, data."""
    header = bytes([0, 0, 0x08, array.ndim])
    header += b"".join(int(n).to_bytes(4, "big") for n in array.shape)
    return header + array.astype(np.uint8).tobytes()


def sample_arrays(n: int, seed: int):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8),
            rng.integers(0, 10, size=n, dtype=np.uint8))


def write_idx(folder: Path, gz: bool = False, prefixes=("train", "t10k")) -> dict:
    """Writes the four files (train with 5 images, test with 3); returns the arrays."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for prefix, n, seed in (("train", N_TRAIN, 0), ("t10k", N_TEST, 1)):
        if prefix not in prefixes:
            continue
        images, labels = sample_arrays(n, seed)
        arrays[prefix] = images, labels
        for name, array in ((f"{prefix}-images-idx3-ubyte", images),
                            (f"{prefix}-labels-idx1-ubyte", labels)):
            data = idx_bytes(array)
            if gz:
                (folder / (name + ".gz")).write_bytes(gzip.compress(data))
            else:
                (folder / name).write_bytes(data)
    return arrays


LAYOUTS = [  # (dataset class, sub-folder of root that holds the files, gzipped)
    (MNIST, "", False), (MNIST, "", True), (MNIST, "MNIST/raw", False),
    (MNIST, "MNIST/raw", True), (FashionMNIST, "", True), (FashionMNIST, "FashionMNIST/raw", False),
]


@pytest.mark.parametrize("cls, sub, gz", LAYOUTS)
@pytest.mark.parametrize("train", [True, False])
def test_reads_idx_files_in_every_layout(tmp_path, cls, sub, gz, train):
    arrays = write_idx(tmp_path / sub, gz=gz)
    images, labels = arrays["train" if train else "t10k"]
    ds = cls(tmp_path, train=train)
    assert len(ds) == len(labels)
    assert ds.data.dtype == ember.uint8 and tuple(ds.data.shape) == images.shape
    assert ds.targets.dtype == ember.int64 and ds.targets.tolist() == labels.tolist()
    np.testing.assert_array_equal(ds.data.numpy(), images)
    image, label = ds[1]
    assert isinstance(image, ember.Tensor) and image.dtype == ember.uint8
    assert tuple(image.shape) == (28, 28)
    np.testing.assert_array_equal(image.numpy(), images[1])
    assert type(label) is int and label == labels[1]
    assert ds[-1][1] == labels[-1]
    assert len(ds.classes) == 10 and ds.class_to_idx[ds.classes[3]] == 3
    assert f"Number of datapoints: {len(labels)}" in repr(ds)


def test_class_names_match_torchvision():
    assert MNIST.classes[0] == "0 - zero" and MNIST.classes[9] == "9 - nine"
    assert FashionMNIST.classes == ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    assert MNIST is MNIST_from_module


def test_root_accepts_str_and_prefers_plain_files(tmp_path):
    write_idx(tmp_path, gz=False)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip")  # ignored: plain first
    assert len(MNIST(str(tmp_path))) == N_TRAIN


def test_transforms_are_applied(tmp_path):
    arrays = write_idx(tmp_path)
    ds = MNIST(tmp_path, transform=lambda img: img.float().div(255).unsqueeze(0),
               target_transform=lambda y: y + 100)
    image, label = ds[0]
    assert image.dtype == ember.float32 and tuple(image.shape) == (1, 28, 28)
    np.testing.assert_allclose(image.numpy()[0], arrays["train"][0][0] / 255, rtol=1e-6)
    assert label == arrays["train"][1][0] + 100
    assert "Transform:" in repr(ds) and "Target transform:" in repr(ds)


def test_sample_is_a_copy_and_reassigned_data_is_used(tmp_path):
    write_idx(tmp_path)
    ds = MNIST(tmp_path)
    first = ds.data[0].clone()
    image, _ = ds[0]
    image.zero_()
    assert ember.equal(ds.data[0], first)
    ds.data, ds.targets = ds.data[:2], ds.targets[:2]  # torchvision users subset this way
    assert len(ds) == 2


def test_dataloader_batches(tmp_path):
    arrays = write_idx(tmp_path, gz=True)
    ds = FashionMNIST(tmp_path, transform=lambda img: img.float().unsqueeze(0))
    batches = list(DataLoader(ds, batch_size=2))
    assert [tuple(x.shape) for x, _ in batches] == [(2, 1, 28, 28), (2, 1, 28, 28),
                                                   (1, 1, 28, 28)]
    images, labels = batches[0]
    assert labels.dtype == ember.int64 and labels.tolist() == arrays["train"][1][:2].tolist()
    np.testing.assert_array_equal(images.numpy()[:, 0], arrays["train"][0][:2])
    raw_images, _ = next(iter(DataLoader(FashionMNIST(tmp_path), batch_size=4)))
    assert raw_images.dtype == ember.uint8 and tuple(raw_images.shape) == (4, 28, 28)


def test_missing_file_names_it_and_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'train-images-idx3-ubyte'.*apt-get install "
                       r"dataset-fashion-mnist"):
        FashionMNIST(tmp_path)
    write_idx(tmp_path, prefixes=("train",))
    MNIST(tmp_path)  # train present, test missing
    with pytest.raises(FileNotFoundError, match=r"'t10k-images-idx3-ubyte'.*MNIST/raw"):
        MNIST(tmp_path, train=False)
    (tmp_path / "train-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="train-labels-idx1-ubyte"):
        MNIST(tmp_path)


def test_download_true_never_downloads(tmp_path):
    with pytest.raises(FileNotFoundError, match="ember never downloads"):
        MNIST(tmp_path, download=True)
    assert list(tmp_path.iterdir()) == []  # nothing fetched, nothing written
    write_idx(tmp_path)  # files present: torchvision code passing download=True runs as is
    assert len(MNIST(tmp_path, download=True)) == N_TRAIN


@pytest.mark.parametrize("name, make_bad, message", [
    ("train-images-idx3-ubyte", lambda good: good[:-10], r"corrupt.*truncated"),
    ("train-images-idx3-ubyte", lambda good: good + b"\0", r"holds \d+ bytes"),
    ("train-images-idx3-ubyte", lambda good: b"\0\0\x08\x01" + good[4:],
     r"magic number 0x00000801, expected 0x00000803"),
    ("train-labels-idx1-ubyte", lambda good: b"\x1f\x8b" + good[2:], r"magic number"),
    ("train-labels-idx1-ubyte", lambda good: good[:3], r"shorter than its 8-byte header"),
    ("train-labels-idx1-ubyte", lambda good: good[:-1] + b"\xc8", r"label 200.*10 classes"),
])
def test_corrupt_plain_file_raises_clear_error(tmp_path, name, make_bad, message):
    write_idx(tmp_path)
    path = tmp_path / name
    path.write_bytes(make_bad(path.read_bytes()))
    with pytest.raises(ValueError, match=message) as info:
        MNIST(tmp_path)
    assert name in str(info.value) and "again" in str(info.value)


def test_corrupt_gzip_file_raises_clear_error(tmp_path):
    write_idx(tmp_path, gz=True)
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:40])  # truncated gzip stream
    with pytest.raises(ValueError, match=r"cannot read .*corrupt or truncated"):
        MNIST(tmp_path)
    path.write_bytes(b"plain text, not gzip")
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz"):
        MNIST(tmp_path)


def test_images_and_labels_counts_must_match(tmp_path):
    write_idx(tmp_path)
    images, _ = sample_arrays(4, 2)
    (tmp_path / "train-images-idx3-ubyte").write_bytes(idx_bytes(images))
    with pytest.raises(ValueError, match="4 images but .* 5 labels"):
        MNIST(tmp_path)


def test_show_config_reports_versions_devices_and_extras(capsys):
    text = ember.show_config()
    assert capsys.readouterr().out.strip() == text
    assert text.startswith(f"ember {ember.__version__}")
    assert f"NumPy: {np.__version__}" in text
    assert sys.version.split()[0] in text
    assert "cpu: available" in text and "cuda: not available" in text
    for name in ("torch", "safetensors", "sklearn", "matplotlib", "tqdm", "graphviz renderer"):
        assert f"    {name}: " in text


def test_version_matches_pyproject():
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE).group(1)
    assert ember.__version__ == version
