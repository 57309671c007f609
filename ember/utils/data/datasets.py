"""MNIST and Fashion-MNIST read from local IDX files, as ``torchvision.datasets.MNIST``.

ember never downloads: point ``root`` at a folder holding the four standard files

    train-images-idx3-ubyte   train-labels-idx1-ubyte   (60,000 images)
    t10k-images-idx3-ubyte    t10k-labels-idx1-ubyte    (10,000 images)

each plain or gzipped (``.gz``), either directly in ``root`` or in torchvision's layout
``root/MNIST/raw/`` (``root/FashionMNIST/raw/``), so a folder torchvision filled works as is.
On Debian and Ubuntu, ``apt-get install dataset-fashion-mnist`` puts Fashion-MNIST in
``/usr/share/datasets/fashion-mnist``.

Differences from torchvision, which has no place in a NumPy-only library: a sample's image is
a ``uint8`` ember tensor of shape ``(28, 28)`` (values 0-255), not a PIL image. The usual
``transforms.ToTensor()`` is ``lambda img: img.float().div(255).unsqueeze(0)`` here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any, ClassVar

from ..._backend import host
from ..._tensor import _make
from ...ops.creation import from_numpy
from .dataset import Dataset

__all__ = ["MNIST", "FashionMNIST"]

_IMAGES_MAGIC = 0x0803  # IDX: two zero bytes, dtype 0x08 (uint8), 3 dimensions
_LABELS_MAGIC = 0x0801  # IDX: two zero bytes, dtype 0x08 (uint8), 1 dimension


def _read_idx(path: str, expected_magic: int, ndim: int):
    """The array stored in an IDX file (plain or gzipped), after checking its header and size."""
    import gzip  # lazy: only reading a dataset needs them
    import zlib
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"cannot read '{path}': {err}. The file is corrupt or truncated: "
                         "delete it and fetch it again.") from err
    header = 4 + 4 * ndim
    kind = "images" if ndim == 3 else "labels"
    if len(raw) < header:
        raise ValueError(f"'{path}' is not an IDX {kind} file: {len(raw)} bytes, shorter than "
                         f"its {header}-byte header. The file is corrupt or truncated: "
                         "fetch it again.")
    magic = int.from_bytes(raw[:4], "big")
    if magic != expected_magic:
        raise ValueError(f"'{path}' is not an IDX {kind} file: magic number 0x{magic:08X}, "
                         f"expected 0x{expected_magic:08X} (uint8, {ndim} dimension"
                         f"{'s' if ndim > 1 else ''}). The file is corrupt, or is not the "
                         "file its name says: fetch it again.")
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    expected = header + math.prod(shape)
    if len(raw) != expected:
        raise ValueError(f"'{path}' is corrupt: its header promises shape {shape}, that is "
                         f"{expected} bytes, but the file holds {len(raw)} bytes"
                         f"{' (truncated)' if len(raw) < expected else ''}. Fetch it again.")
    # copy: a writable array owned by the tensor, not a view of the read-only bytes
    return host.frombuffer(raw, dtype=host.uint8, offset=header).reshape(shape).copy()


class MNIST(Dataset):
    """``torchvision.datasets.MNIST``: handwritten digits, 60,000 train and 10,000 test images.

    Args:
        root: the folder holding the IDX files, directly or in ``root/MNIST/raw/``.
        train: the training set (``train-*``) if True, else the test set (``t10k-*``).
        transform: applied to each image, a ``uint8`` tensor of shape ``(28, 28)``.
        target_transform: applied to each label, an ``int``.
        download: ember never downloads; kept so torchvision code runs unchanged. With
            ``download=True`` files already present are used; missing ones raise an error
            that says how to get them.

    ``dataset[i]`` is ``(image, label)``. ``data`` is a ``uint8`` tensor ``(N, 28, 28)``,
    ``targets`` an ``int64`` tensor ``(N,)``, ``classes`` the class names.
    """

    classes: ClassVar[list[str]] = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four",
               "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"]
    _display_name = "MNIST"
    _how_to_get = ("get them with torchvision once (torchvision.datasets.MNIST(root, "
                   "download=True) writes root/MNIST/raw/), or download the four .gz files "
                   "from https://ossci-datasets.s3.amazonaws.com/mnist/ into root")

    def __init__(self, root: str | os.PathLike, train: bool = True,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False) -> None:
        self.root = os.path.expanduser(os.fspath(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        images_path = self._find(f"{prefix}-images-idx3-ubyte", download)
        labels_path = self._find(f"{prefix}-labels-idx1-ubyte", download)
        images = _read_idx(images_path, _IMAGES_MAGIC, 3)
        labels = _read_idx(labels_path, _LABELS_MAGIC, 1)
        if len(images) != len(labels):
            raise ValueError(f"'{images_path}' holds {len(images)} images but '{labels_path}' "
                             f"holds {len(labels)} labels: the files do not belong together. "
                             "Fetch them again.")
        if len(labels) and int(labels.max()) >= len(self.classes):
            raise ValueError(f"'{labels_path}' holds label {int(labels.max())}, but "
                             f"{self._display_name} has {len(self.classes)} classes: the file "
                             "is corrupt. Fetch it again.")
        self.data = from_numpy(images)
        self.targets = from_numpy(labels.astype(host.int64))

    @property
    def raw_folder(self) -> str:
        """torchvision's layout: ``root/<ClassName>/raw``."""
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.classes)}

    def _find(self, name: str, download: bool) -> str:
        folders = [self.root, self.raw_folder]
        for folder in folders:
            for candidate in (name, name + ".gz"):
                path = os.path.join(folder, candidate)
                if os.path.isfile(path):
                    return path
        where = " nor ".join(f"'{folder}'" for folder in folders)
        lead = ("ember never downloads datasets, so download=True cannot fetch it. "
                if download else "")
        raise FileNotFoundError(f"{self._display_name} file '{name}' (or '{name}.gz') not found "
                                f"in {where}. {lead}To get the files, {self._how_to_get}.")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        # read through ``data``/``targets`` so that reassigning them (a subset) works, as in
        # torchvision; the image is a copy, so a transform changing it in place is harmless
        image = _make(self.data._data[index].copy())  # on data's device
        target = int(self.targets._data[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        lines = [f"Dataset {type(self).__name__}",
                 f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}",
                 f"    Split: {'Train' if self.train else 'Test'}"]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        if self.target_transform is not None:
            lines.append(f"    Target transform: {self.target_transform!r}")
        return "\n".join(lines)


class FashionMNIST(MNIST):
    """``torchvision.datasets.FashionMNIST``: Zalando's 28x28 grayscale clothing images, in
    ten classes, a drop-in replacement for MNIST (same files, sizes and arguments).

    On Debian/Ubuntu ``apt-get install dataset-fashion-mnist`` installs the four ``.gz`` files
    in ``/usr/share/datasets/fashion-mnist``: ``FashionMNIST("/usr/share/datasets/fashion-mnist")``.
    torchvision's layout ``root/FashionMNIST/raw/`` works too.
    """

    classes: ClassVar[list[str]] = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                    "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    _display_name = "Fashion-MNIST"
    _how_to_get = ("on Debian/Ubuntu run `sudo apt-get install dataset-fashion-mnist` and use "
                   "root='/usr/share/datasets/fashion-mnist'; elsewhere download the four .gz "
                   "files from https://github.com/zalandoresearch/fashion-mnist (data/fashion) "
                   "into root, or let torchvision.datasets.FashionMNIST(root, download=True) "
                   "write root/FashionMNIST/raw/")
