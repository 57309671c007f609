"""torch's names and calling forms beyond the op table: keyword spellings (torch's own and its
NumPy aliases), indexing keys, empty-input errors and NumPy interop, each compared with torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.ops._registry import KEYWORD_ALIASES, REGISTRY

torch = pytest.importorskip("torch")


def _same(e_fn, t_fn):
    """Run one call on ember and torch: equal values, or the same exception type and message."""
    try:
        with warnings.catch_warnings(record=True) as t_warned:
            warnings.simplefilter("always")
            t_out = t_fn(torch)
    except (TypeError, RuntimeError, IndexError, ValueError) as err:
        with pytest.raises(type(err)) as e_err:
            e_fn(ember)
        assert str(e_err.value) == str(err)
        return None
    with warnings.catch_warnings(record=True) as e_warned:
        warnings.simplefilter("always")
        e_out = e_fn(ember)
    # (torch's own DeprecationWarning from NumPy about its __array_wrap__ is not behaviour)
    msgs = {str(w.message).split(" (Triggered internally")[0] for w in t_warned
            if not issubclass(w.category, DeprecationWarning)}
    assert msgs <= {str(w.message) for w in e_warned}
    assert type(e_out).__name__ == type(t_out).__name__
    if isinstance(t_out, torch.Tensor):
        assert str(e_out.dtype) == str(t_out.dtype)
        np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-6)
    else:
        assert e_out == t_out
    return e_out


def same(fn):
    return _same(fn, fn)


X = np.arange(12.0, dtype=np.float32).reshape(3, 4)


def x(m, requires_grad=False):
    return m.tensor(X, requires_grad=requires_grad)


# --------------------------------------------------------------------------- keyword names


def test_keyword_aliases_are_torchs_list():
    """python_arg_parser.cpp's numpy_compatibility_arg_names, one entry per NumPy name."""
    assert KEYWORD_ALIASES == {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input",
                               "x1": "input", "x2": "other"}


@pytest.mark.parametrize("call", [
    lambda m: m.sum(x(m), axis=1, keepdims=True),
    lambda m: m.exp(a=x(m)),
    lambda m: m.exp(x=x(m)),
    lambda m: m.add(x1=x(m), x2=x(m)),
    lambda m: m.mul(x(m), x2=2.0),
    lambda m: x(m).add(x2=x(m)),
    lambda m: x(m).argmax(axis=0),
    lambda m: m.max(x(m), axis=1).values,
    lambda m: m.cumsum(x=x(m), axis=0),
    lambda m: m.eq(x1=x(m), x2=x(m)),
    # duplicates: torch names the alias as unexpected
    lambda m: m.sum(x(m), 0, axis=0),
    lambda m: m.sum(x(m), dim=0, axis=0),
    lambda m: m.exp(x(m), a=x(m)),
    lambda m: m.add(x(m), x(m), x2=x(m)),
    lambda m: m.exp(x=x(m), a=x(m)),
], ids=lambda f: "")
def test_numpy_keyword_aliases(call):
    same(call)


def test_method_forms_take_no_input_alias():
    """A method's tensor is ``self``: ``x.exp(x=...)`` is refused (torch: a TypeError too)."""
    with pytest.raises(TypeError):
        x(torch).exp(x=x(torch))
    with pytest.raises(TypeError):
        x(ember).exp(x=x(ember))


@pytest.mark.parametrize("call", [
    lambda m: m.flip(x(m), dims=[0]),
    lambda m: x(m).flip(dims=(0, 1)),
    lambda m: m.roll(x(m), shifts=1, dims=0),
    lambda m: m.permute(x(m), dims=(1, 0)),
    lambda m: x(m).permute(dims=[1, 0]),
    lambda m: m.transpose(x(m), dim0=0, dim1=1),
    lambda m: m.swapaxes(x(m), axis0=0, axis1=1),
    lambda m: x(m).swapdims(dim0=1, dim1=0),
    lambda m: x(m).view(size=(4, 3)),
    lambda m: m.reshape(x(m), shape=(2, 6)),
    lambda m: x(m).expand(size=(2, 3, 4)),
    lambda m: x(m).repeat(repeats=(1, 2)),
    lambda m: m.tile(x(m), dims=(2,)),
    lambda m: m.repeat_interleave(x(m), repeats=2, dim=0),
    lambda m: m.topk(x(m), k=2, dim=1, largest=False, sorted=True).values,
    lambda m: m.sort(x(m), dim=0, descending=True, stable=True).values,
    lambda m: m.searchsorted(sorted_sequence=m.tensor([1.0, 3.0]), input=x(m), right=True),
    lambda m: m.bucketize(input=x(m), boundaries=m.tensor([1.0, 3.0]), out_int32=True),
    lambda m: m.histc(input=x(m), bins=3, min=0, max=12),
    lambda m: m.bincount(input=m.tensor([0, 2]), weights=None, minlength=4),
    lambda m: m.cdist(x1=x(m), x2=x(m), p=1.0, compute_mode="use_mm_for_euclid_dist"),
    lambda m: x(m).unfold(dimension=1, size=2, step=2),
], ids=lambda f: "")
def test_torch_keyword_names(call):
    same(call)


# torch's schema names for its native ops; ember keeps some names of torch's Python wrappers or
# of overloads this comparison does not see
_SCHEMA_SKIP = {"out", "dtype", "layout", "device", "pin_memory", "requires_grad",
                "memory_format", "generator", "names", "implicit", "values", "indices",
                "out_dtype", "cudnn_enabled", "cudnn_enable"}
_NAME_EXCEPTIONS = {
    # torch.split/tensordot/einsum/... are Python functions with these names
    "split", "tensordot", "einsum", "meshgrid", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "chain_matmul", "tensor_split", "broadcast_tensors",
    # in-place and sampling methods: ``self`` is positional in every form torch has
    "copy_", "fill_", "zero_", "exponential_", "random_", "uniform_", "new_empty", "new_full",
    "new_ones", "new_zeros", "to",
    # factories (torch's ``size`` is ember's varargs ``size`` too, its data ``data``)
    "tensor", "as_tensor",
}


def _schema_params(name: str) -> list[set[str]] | None:
    try:
        schemas = torch._C._jit_get_schemas_for_operator(f"aten::{name}")
    except RuntimeError:
        return None
    out = []
    for s in schemas:
        args = s.arguments
        if s.overload_name.endswith("out") or not any("Tensor" in str(a.type) for a in args):
            continue  # out= overloads and TorchScript's scalar ops (add.int: a, b)
        if any("Dimname" in str(a.type) for a in args):
            continue
        out.append({"input" if a.name == "self" else a.name for a in args} - _SCHEMA_SKIP)
    return out or None


def _ember_params(fn) -> set[str]:
    code = fn.__code__
    n = code.co_argcount + code.co_kwonlyargcount
    names = set(code.co_varnames[:n])
    if code.co_flags & 0x04:  # *varargs: accepted by name (the registry's keyword path)
        names.add(code.co_varnames[n])
    return names


def test_parameter_names_match_torch_schemas():
    """Every registered op torch also has accepts torch's keyword names for it: its schema's
    arguments (some overload's names all present in ember's signature)."""
    bad = []
    for key, info in sorted(REGISTRY.items()):
        if key in _NAME_EXCEPTIONS or not hasattr(info.fn, "__code__"):
            continue
        for name in (info.name, *info.aliases):
            if not (hasattr(torch, name) or hasattr(torch.Tensor, name)):
                continue
            schemas = _schema_params(name)
            if not schemas:
                continue
            ours = _ember_params(info.fn)
            if not any(s <= ours for s in schemas):
                bad.append((name, sorted(ours), [sorted(s) for s in schemas]))
    assert not bad, bad


# --------------------------------------------------------------------------- empty reductions


@pytest.mark.parametrize("call", [
    lambda m: m.argmax(m.tensor([])), lambda m: m.argmin(m.zeros(2, 0)),
    lambda m: m.zeros(2, 0).argmax(1), lambda m: m.zeros(0, 3).argmin(dim=0, keepdim=True),
    lambda m: m.zeros(2, 0).argmax(0), lambda m: m.max(m.tensor([])), lambda m: m.min(m.zeros(0)),
    lambda m: m.zeros(2, 0).max(1), lambda m: m.zeros(2, 0).min(dim=-1),
    lambda m: m.zeros(2, 0).max(0).indices, lambda m: m.argmax(m.tensor(2.0), 0),
], ids=lambda f: "")
def test_empty_extremes(call):
    same(call)


# --------------------------------------------------------------------------- indexing


KEYS = [
    lambda m: (range(3), m.tensor([0, 1, 2])), lambda m: ([0, 1], [2, 3]), lambda m: [0, 1],
    lambda m: (0, 1), lambda m: [True, False, True], lambda m: [[0, 1], [1, 2]],
    lambda m: (([0, 1], [1, 2]),), lambda m: ([0, 1], slice(1, 3)),
    lambda m: (None, Ellipsis, [0, 1]), lambda m: [m.tensor(0), m.tensor(1)],
    lambda m: [0, slice(1, 3)], lambda m: range(2), lambda m: ([[0], [2]], [1, 3]),
    lambda m: ([0, 1], None, Ellipsis), lambda m: (Ellipsis, [True, False, True, True]),
    lambda m: [[True, False, True]], lambda m: (m.tensor([0, 2]), [[1], [3]]),
    lambda m: slice(m.tensor(1), m.tensor(1) + 2), lambda m: (0, slice(m.tensor(1), None)),
    lambda m: (slice(None), slice(m.tensor(1), m.tensor(3), m.tensor(2))),
]


@pytest.mark.parametrize("key", KEYS, ids=lambda f: "")
def test_getitem_keys(key):
    """Values, the deprecation warning for list keys read as tuples, and the gradient."""
    for m in (torch, ember):
        t = x(m, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = t[key(m)]
            out.backward(m.ones_like(out) * 2)
        if m is torch:
            expected, grad = out.detach().numpy(), t.grad.numpy()
    np.testing.assert_array_equal(out.detach().numpy(), expected)
    np.testing.assert_array_equal(t.grad.numpy(), grad)
    same(lambda m: x(m)[key(m)])


@pytest.mark.parametrize("key", KEYS, ids=lambda f: "")
def test_setitem_keys(key):
    def write(m):
        t = x(m, requires_grad=True) * 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t[key(m)] = -1.0
        return t
    same(write)
    grads = []
    for m in (torch, ember):
        leaf = x(m, requires_grad=True)
        (write(m) * leaf).sum().backward()
        grads.append(leaf.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_slices_bounded_by_tensors_iterated():
    """``data[i:i + n]`` with ``i`` from iterating a tensor (a 0-d int tensor)."""
    for_each = lambda m: m.stack([m.arange(10)[i:i + 3] for i in m.tensor([1, 4, 6])])
    same(for_each)


def test_index_dunder():
    """``__index__``: integer (or bool) tensors of one element, as torch."""
    for v in ([2], 2, True):
        assert [10, 11, 12][ember.tensor(v)] == [10, 11, 12][torch.tensor(v)]
    for bad in (ember.tensor(2.0), ember.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            [1, 2, 3][bad]


# --------------------------------------------------------------------------- NumPy interop


@pytest.mark.parametrize("call", [
    lambda m: np.exp(x(m)), lambda m: np.add(x(m), 1), lambda m: np.maximum(x(m), 3.5),
    lambda m: np.exp(m.tensor(1.0)), lambda m: np.exp(m.tensor([1, 2])),
    lambda m: np.isnan(x(m)), lambda m: np.add(x(m), x(m)), lambda m: np.multiply(2.0, x(m)),
    lambda m: np.exp(x(m, requires_grad=True)),
], ids=lambda f: "")
def test_numpy_ufuncs_give_tensors(call):
    same(call)


def test_asarray_is_the_array():
    e = x(ember)
    arr = np.asarray(e)
    assert type(arr) is np.ndarray and np.shares_memory(arr, e.numpy())
    assert type(np.asarray(x(torch))) is np.ndarray
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        np.asarray(x(ember, requires_grad=True))


def test_untyped_storage_is_shared_by_views_and_counts_bytes_as_torch():
    for lib in (ember, torch):
        t = lib.arange(6, dtype=lib.float32)
        view = t[2:].view(2, 2)
        storage = view.untyped_storage()
        assert storage.nbytes() == 24 and len(storage) == 24 and storage.element_size() == 1
        assert storage.data_ptr() == t.untyped_storage().data_ptr() == t.data_ptr()


@pytest.mark.parametrize("case", [
    lambda lib: lib.ones(2) + np.ones(2),
    lambda lib: lib.ones(2) + np.ones(2, dtype=np.float32),
    lambda lib: lib.ones(2) * np.float64(2),
    lambda lib: np.float32(2) * lib.ones(2),
    lambda lib: lib.ones(2, dtype=lib.int64) * np.float64(2.5),
    lambda lib: lib.arange(3) - np.int64(1),
])
def test_numpy_operands_act_as_tensors_and_numbers_as_in_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch's own __array_wrap__
        expected = case(torch)
    got = case(ember)
    assert isinstance(got, ember.Tensor) and str(got.dtype) == str(expected.dtype)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_relu_backward_matches_torch_on_nan_inf_and_signed_zero():
    x = np.array([-1.0, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf, 3.0], dtype=np.float32)
    g = np.array([-5.0, np.nan, 1.0, -0.0, 7.0, np.nan, 2.0, -3.0], dtype=np.float32)
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        lib.relu(t).backward(lib.tensor(g))
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert (np.signbit(grads[0]) == np.signbit(grads[1])).all()


def test_leaf_gradients_taken_over_never_alias_what_else_holds_them():
    """.grad may take over the engine's gradient array, never one something else can reach."""
    w = ember.ones(3, requires_grad=True)
    seed = ember.ones(3)
    w.backward(seed)  # the root seed is the user's: copied
    assert w.grad.data_ptr() != seed.data_ptr()
    seed.add_(1)
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    x = ember.ones(3, requires_grad=True)
    (w * 2 + x * 2).sum().backward()
    assert w.grad.data_ptr() != x.grad.data_ptr()
    assert w.grad.tolist() == [3.0] * 3 and x.grad.tolist() == [2.0] * 3


def test_threshold_backward_passes_the_gradient_at_nan_inputs_as_torch():
    x = np.array([np.nan, 0.5, 0.7, -1.0], dtype=np.float32)
    grads = []
    for lib in (ember, torch):
        t = lib.tensor(x, requires_grad=True)
        lib.nn.functional.threshold(t, 0.5, 2.0).backward(lib.tensor([3.0, -4.0, 5.0, 6.0]))
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
    assert (np.signbit(grads[0]) == np.signbit(grads[1])).all()
