"""Variable-length sequences: ``pad_sequence``, ``PackedSequence`` and the pack/unpack helpers,
as ``torch.nn.utils.rnn``. Everything is built from differentiable ops (cat, index_select), so
gradients flow through packing and padding."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ..._backend import host, ndarray, to_host, xp_of
from ..._tensor import Tensor, _make
from ...ops.creation import full
from ...ops.shape import cat, stack

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The time-major concatenation of a batch of sequences (``data``) plus how many sequences
    are still running at each step (``batch_sizes``, int64, on the CPU). Made by
    ``pack_padded_sequence`` / ``pack_sequence``; not meant to be built by hand."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> PackedSequence:
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def double(self) -> PackedSequence:
        return self._with_data(self.data.double())

    def float(self) -> PackedSequence:
        return self._with_data(self.data.float())

    def half(self) -> PackedSequence:
        return self._with_data(self.data.half())

    def long(self) -> PackedSequence:
        return self._with_data(self.data.long())

    def int(self) -> PackedSequence:
        return self._with_data(self.data.int())

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    perm = permutation._data
    xp = xp_of(perm)
    out = xp.empty_like(perm)
    out[perm] = xp.arange(perm.size, dtype=perm.dtype)
    return _make(out)


def _lengths_array(lengths) -> ndarray:
    """The lengths as a host int64 array (torch keeps lengths and batch sizes on the CPU)."""
    if isinstance(lengths, Tensor):
        return to_host(lengths._data).astype(host.int64)
    return host.asarray(lengths, dtype=host.int64).reshape(-1)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes ``(L_i, *)`` into ``(max L, B, *)`` (or ``(B, max L, *)``
    with ``batch_first``), padding with ``padding_value`` on ``padding_side``."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(  # noqa: TRY004 (torch's type)
            "pad_sequence: Expected iterable for input sequences, but got arg "
            f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    trailing = tuple(sequences[0].shape[1:])
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        rest = tuple(s.shape[1:])
        if rest != trailing:
            dim = next(i for i, (a, b) in enumerate(zip(trailing, rest)) if a != b) \
                if len(rest) == len(trailing) else 0
            raise RuntimeError(f"The size of tensor a ({trailing[dim]}) must match the size of "
                               f"tensor b ({rest[dim]}) at non-singleton dimension {dim + 1}")
        n = max_len - s.shape[0]
        if n:
            pad = full((n, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad] if padding_side == "right" else [pad, s])
        padded.append(s)
    return stack(padded, 1 if not batch_first else 0)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor,
                   batch_first: bool = False) -> list[Tensor]:
    """The inverse of ``pad_sequence``: a list of the unpadded sequences. (torch transposes a
    time-major input in place here; ember leaves the input alone.)"""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, _lengths_array(lengths))]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of
    the given lengths. With ``enforce_sorted`` the lengths must be decreasing; otherwise the
    batch is sorted and the permutation kept in the result."""
    lens = _lengths_array(lengths)
    xp = xp_of(input._data)
    sorted_indices = None
    if not enforce_sorted:
        order = host.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_indices = _make(xp.asarray(order.astype(host.int64)))
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    batch = input.shape[1]
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={batch})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if host.any(host.diff(lens) > 0):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected the longest length ({lens[0]}) to be at most the padded "
                           f"sequence length ({input.shape[0]})")
    steps = host.arange(lens[0])
    batch_sizes = (lens[None, :] > steps[:, None]).sum(1).astype(host.int64)
    idx = host.concatenate([t * batch + host.arange(b) for t, b in enumerate(batch_sizes)])
    flat = input.reshape(input.shape[0] * batch, *input.shape[2:])
    data = flat.index_select(0, _make(xp.asarray(idx.astype(host.int64))))
    return PackedSequence(data, _make(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """Unpack a ``PackedSequence`` into ``(padded batch, lengths)``, the inverse of
    ``pack_padded_sequence`` (the original batch order is restored)."""
    batch_sizes = to_host(sequence.batch_sizes._data).astype(host.int64)
    max_len = batch_sizes.size
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = int(batch_sizes[0]) if batch_sizes.size else 0
    n = data.shape[0]
    gather = host.full((max_len, batch), n, dtype=host.int64)  # row n: the padding row
    offset = 0
    for t, b in enumerate(batch_sizes):
        gather[t, :b] = host.arange(offset, offset + b)
        offset += b
    rest = tuple(data.shape[1:])
    src = cat([data, full((1, *rest), padding_value, dtype=data.dtype, device=data.device)])
    gather = _make(xp_of(data._data).asarray(gather.reshape(-1)))
    out = src.index_select(0, gather).reshape(max_len, batch, *rest)
    lengths = (batch_sizes[None, :] > host.arange(batch)[:, None]).sum(1).astype(host.int64)
    if batch_first:
        out = out.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[to_host(sequence.unsorted_indices._data)]  # as torch: on the CPU
    return out, _make(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences a ``PackedSequence`` holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
