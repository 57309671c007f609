"""Multi-rank checks of ``ember.distributed``, run under MPI by ``tests/test_distributed.py``.

    mpiexec -n N python tests/distributed/collectives_worker.py OUT_DIR [DEVICE]

Every rank runs the same checks in the same order. Rank r's inputs are a deterministic function
of r, so each rank computes the expected result of every collective locally with NumPy. Each
rank appends JSON lines to ``OUT_DIR/rank{r}.jsonl``: ``{"start": name}`` before a check,
``{"check": name, "result": "ok" | "skip: why" | error text}`` after it, and ``{"done": n}``
at the end; written line by line, so when a check hangs the test can name it. The ranks meet
at an MPI barrier (on a communicator of their own) between checks, so a hang shows up in the
check that caused it. ``DEVICE`` (default ``cpu``) is the device tensors are made on:
``strict`` runs the collectives on the CuPy-like stand-in, whose arrays MPI cannot use
directly (the copy path).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback
import warnings
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # test the working tree

import numpy as np

import ember as torch
import ember.distributed as dist
from ember.distributed import ReduceOp

OUT_DIR = Path(sys.argv[1])
DEVICE = torch.device(sys.argv[2] if len(sys.argv) > 2 else "cpu")
torch.set_default_device(DEVICE)

CHECKS: list[tuple[str, object]] = []


def check(name: str):
    """Register ``fn`` as the check ``name`` (checks run in registration order)."""
    def register(fn):
        CHECKS.append((name, fn))
        return fn
    return register


class Skip(Exception):
    """A check that does not apply here (raised identically on every rank)."""


# ------------------------------------------------------------------------------- helpers
R = N = -1  # this rank and the world size, set once the default group exists

INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
DTYPES = (torch.bool, *INTS, *FLOATS)
HALF = (torch.float16, torch.bfloat16)
OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")
BITWISE = ("BAND", "BOR", "BXOR")


def data(r: int, shape=(3, 5), kind: str = "float", salt: int = 0) -> np.ndarray:
    """Rank ``r``'s deterministic input: small values, so sums and products are exact."""
    i = np.arange(int(np.prod(shape, dtype=np.int64)))
    if kind == "bool":
        v = (i + r + salt) % 3 == 0
    elif kind == "bits":
        v = (i * 7 + r * 13 + salt) % 64
    elif kind == "uint":
        v = (i + r + salt) % 3
    elif kind == "int":
        v = (i + r + salt) % 4 - 1
    else:  # multiples of 0.5 in [-2, 2]
        v = ((i * 3 + r * 5 + salt) % 9 - 4) * 0.5
    return v.reshape(shape)


def kind_of(dtype, op: str = "SUM") -> str:
    if dtype == torch.bool:
        return "bool"
    if dtype in INTS:
        return "bits" if op in BITWISE else ("uint" if dtype == torch.uint8 else "int")
    return "float"


def make(a, dtype=None, requires_grad: bool = False) -> torch.Tensor:
    """A tensor on the run's device holding the NumPy array ``a``, cast to ``dtype``
    (float64 arrays make float32 tensors unless ``dtype`` says otherwise, as Python floats)."""
    a = np.asarray(a)
    if dtype is None and a.dtype == np.float64:
        dtype = torch.float32
    t = torch.tensor(a, device=DEVICE)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def inp(r: int, dtype=torch.float32, shape=(3, 5), op: str = "SUM", salt: int = 0):
    return make(data(r, shape, kind_of(dtype, op), salt), dtype)


def value(t: torch.Tensor) -> np.ndarray:
    """``t``'s values as a host NumPy array (bfloat16 widened to float32)."""
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return np.array(t.numpy(), copy=True)


def rounded(ref: np.ndarray, dtype) -> np.ndarray:
    """``ref`` as ``dtype`` holds it (via ember's cast), back on the host."""
    if dtype == torch.bool:
        return np.asarray(ref, dtype=bool)
    if dtype in INTS:
        return np.asarray(ref).astype(np.int64)  # the inputs are chosen not to overflow
    return value(make(np.asarray(ref, dtype=np.float64), dtype))


def expect(t: torch.Tensor, ref, dtype=None, tol: float = 0.0, what: str = "") -> None:
    """Assert ``t`` has ``ref``'s shape and values (and ``dtype``, when given)."""
    ref = np.asarray(ref)
    label = f"{what}: " if what else ""
    if not isinstance(t, torch.Tensor):
        raise AssertionError(f"{label}expected a tensor, got {type(t).__name__}")  # noqa: TRY004
    if dtype is not None and t.dtype != dtype:
        raise AssertionError(f"{label}dtype changed: expected {dtype}, got {t.dtype}")
    if tuple(t.shape) != ref.shape:
        raise AssertionError(f"{label}expected shape {ref.shape}, got {tuple(t.shape)}")
    got = value(t)
    same = (np.allclose(got, ref, rtol=tol, atol=tol) if tol else
            np.array_equal(got.astype(ref.dtype) if got.dtype != ref.dtype else got, ref))
    if not same:
        raise AssertionError(f"{label}expected {ref.tolist()}, got {got.tolist()}")


def raises(kind: type[BaseException], fn, *args, match: str | None = None, exact=None, **kw):
    """Assert ``fn(*args, **kw)`` raises ``kind`` (its text containing ``match`` or equal to
    ``exact``); return the exception."""
    try:
        fn(*args, **kw)
    except kind as e:
        if match is not None and match not in str(e):
            raise AssertionError(f"{kind.__name__} raised, but its message {str(e)!r} does not "
                                 f"contain {match!r}") from e
        if exact is not None and str(e) != exact:
            raise AssertionError(f"{kind.__name__} raised with message {str(e)!r}, expected "
                                 f"{exact!r}") from e
        return e
    except Exception as e:
        raise AssertionError(f"expected {kind.__name__}, got {type(e).__name__}: {e}") from e
    raise AssertionError(f"expected {kind.__name__}, nothing was raised")


def ensure(cond, message: str) -> None:
    if not cond:
        raise AssertionError(message)


def reference(op: str, stack: np.ndarray, dtype) -> np.ndarray:
    """The reduction ``op`` of the per-rank inputs ``stack`` (axis 0), in wide arithmetic."""
    if dtype == torch.bool:
        return {"SUM": np.any, "MAX": np.any, "BOR": np.any, "PRODUCT": np.all,
                "MIN": np.all, "BAND": np.all,
                "BXOR": lambda s, axis: np.logical_xor.reduce(s, axis=axis)}[op](stack, axis=0)
    wide = stack.astype(np.int64 if dtype in INTS else np.float64)
    return {"SUM": lambda s: s.sum(0), "AVG": lambda s: s.sum(0) / len(s),
            "PRODUCT": lambda s: s.prod(0), "MIN": lambda s: s.min(0),
            "MAX": lambda s: s.max(0), "BAND": np.bitwise_and.reduce,
            "BOR": np.bitwise_or.reduce, "BXOR": np.bitwise_xor.reduce}[op](wide)


def valid(op: str, dtype) -> bool:
    if op == "AVG":
        return dtype in FLOATS
    if op in BITWISE:
        return dtype == torch.bool or dtype in INTS
    return True


def wait_until_completed(work, what: str) -> None:
    deadline = time.monotonic() + 60
    while not work.is_completed():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: is_completed() still False after 60 s")
        time.sleep(0.0005)


TYPE_ERROR = ("Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
              "             but got {type} instead.")
LIST_ERROR = ("Invalid function argument. Expected parameter `{name}` of type "
              "List[torch.Tensor]\n             but got {type} instead.")


# ------------------------------------------------------------------------ init and world
@check("before init: not initialized, get_rank raises torch's ValueError")
def _():
    ensure(not dist.is_initialized(), "is_initialized() is True before init_process_group")
    ensure(dist.group.WORLD is None and dist.GroupMember.WORLD is None,
           "group.WORLD is set before init_process_group")
    msg = ("Default process group has not been initialized, please make sure to call "
           "init_process_group.")
    raises(ValueError, dist.get_rank, exact=msg)
    raises(ValueError, dist.get_world_size, exact=msg)
    raises(ValueError, dist.all_reduce, make(np.ones(2)), exact=msg)


@check("init_process_group('gloo')")
def _():
    global R, N
    dist.init_process_group("gloo", timeout=timedelta(minutes=5))
    R, N = dist.get_rank(), dist.get_world_size()
    ensure(dist.is_initialized(), "is_initialized() is False after init_process_group")
    ensure(N == int(os.environ.get("EXPECTED_WORLD_SIZE", N)),
           f"world size {N}, expected {os.environ.get('EXPECTED_WORLD_SIZE')}")


@check("init_process_group twice raises ValueError")
def _():
    raises(ValueError, dist.init_process_group, "gloo",
           exact="trying to initialize the default process group twice!")


@check("world: group.WORLD, backend, ranks")
def _():
    pg = dist.group.WORLD
    ensure(isinstance(pg, dist.ProcessGroup), f"group.WORLD is {pg!r}")
    ensure(dist.GroupMember.WORLD is pg, "GroupMember.WORLD is not group.WORLD")
    ensure(pg.rank() == R and pg.size() == N, f"WORLD.rank()/size() {pg.rank()}/{pg.size()}")
    ensure(dist.get_rank(pg) == R and dist.get_world_size(pg) == N, "get_rank(WORLD)")
    ensure(dist.get_backend() == "gloo" and dist.get_backend() == dist.Backend.GLOO,
           f"get_backend() is {dist.get_backend()!r}")
    ensure(dist.get_process_group_ranks(pg) == list(range(N)), "get_process_group_ranks(WORLD)")
    ensure(dist.get_global_rank(pg, N - 1) == N - 1, "get_global_rank(WORLD, N - 1)")
    ensure(dist.get_group_rank(pg, R) == R, "get_group_rank(WORLD, rank)")
    raises(ValueError, dist.get_global_rank, pg, N)
    raises(ValueError, dist.get_group_rank, pg, N)
    # every rank agrees on who it is
    got = [None] * N
    dist.all_gather_object(got, R)
    ensure(got == list(range(N)), f"all_gather_object of the ranks gave {got}")


# ----------------------------------------------------------------------------- all_reduce
def _all_reduce_case(dtype, op: str):
    def run():
        x = inp(R, dtype, op=op)
        if not valid(op, dtype):
            raises(ValueError, dist.all_reduce, x, getattr(ReduceOp, op))
            expect(x, value(inp(R, dtype, op=op)), dtype,
                   what="a refused all_reduce left its tensor unchanged")
            return
        stack = np.stack([value(inp(r, dtype, op=op)) for r in range(N)])
        ref = rounded(reference(op, stack, dtype), dtype)
        ensure(dist.all_reduce(x, op=getattr(ReduceOp, op)) is None,
               "all_reduce(async_op=False) returned something")
        tol = 1e-2 if dtype == torch.float16 and op in ("PRODUCT", "AVG") else 0.0
        expect(x, ref, dtype, tol)
    return run


for _dt in DTYPES:
    for _op in OPS:
        check(f"all_reduce {_op} {_dt}")(_all_reduce_case(_dt, _op))


@check("all_reduce complex64 SUM/AVG/PRODUCT; MAX refused")
def _():
    if not hasattr(torch, "complex64"):
        raise Skip("ember has no complex dtypes yet")
    parts = [data(r) + 1j * data(r, salt=1) for r in range(N)]
    x = make(parts[R]).to(torch.complex64)
    dist.all_reduce(x)
    expect(x, np.sum(parts, 0).astype(np.complex64), torch.complex64)
    raises(ValueError, dist.all_reduce, x, ReduceOp.MAX, match="complex")


@check("all_reduce default op is SUM; op passed positionally and by keyword")
def _():
    x, y = inp(R), inp(R)
    dist.all_reduce(x)
    dist.all_reduce(y, ReduceOp.SUM, None, False)
    ref = sum(data(r) for r in range(N))
    expect(x, ref)
    expect(y, ref)


@check("all_reduce of a 0-d tensor")
def _():
    x = make(np.float32(R + 1))
    dist.all_reduce(x)
    expect(x, np.float32(N * (N + 1) / 2), torch.float32)
    y = make(np.int64(R))
    dist.all_reduce(y, op=ReduceOp.MAX)
    expect(y, np.int64(N - 1), torch.int64)


@check("all_reduce of empty tensors")
def _():
    for shape in ((0,), (0, 3), (2, 0, 4)):
        x = make(np.zeros(shape, dtype=np.float32))
        dist.all_reduce(x)
        expect(x, np.zeros(shape, dtype=np.float32), torch.float32, what=str(shape))
    x = make(np.zeros((0,), dtype=np.float64)).to(torch.bfloat16)
    dist.all_reduce(x, op=ReduceOp.AVG)
    expect(x, np.zeros((0,)), torch.bfloat16, what="bfloat16")


@check("all_reduce of a transposed view writes through to its base")
def _():
    base = make(data(R, (4, 6)))
    view = base.t()
    ensure(not view.is_contiguous(), "the transposed view is contiguous")
    v0, ptr = base._version, base.data_ptr() if DEVICE.type == "cpu" else None
    dist.all_reduce(view)
    ref = sum(data(r, (4, 6)) for r in range(N))
    expect(view, ref.T, torch.float32, what="the view")
    expect(base, ref, torch.float32, what="the base")
    ensure(base._version > v0 and view._version > v0,
           f"version counter not bumped ({v0} -> base {base._version}, view {view._version})")
    if ptr is not None:
        ensure(base.data_ptr() == ptr, "the base's storage was replaced")


@check("all_reduce of a strided slice leaves the rest of the base alone")
def _():
    base = make(data(R, (8, 5)))
    view = base[::2, 1:4]
    ensure(not view.is_contiguous(), "the strided slice is contiguous")
    dist.all_reduce(view, op=ReduceOp.MAX)
    ref = data(R, (8, 5)).copy()
    ref[::2, 1:4] = np.max([data(r, (8, 5))[::2, 1:4] for r in range(N)], axis=0)
    expect(view, ref[::2, 1:4], torch.float32, what="the slice")
    expect(base, ref, torch.float32, what="the base")


@check("all_reduce of a contiguous row slice writes into its base only there")
def _():
    base = make(data(R, (5, 3)))
    rows = base[1:3]
    ensure(rows.is_contiguous(), "the row slice is not contiguous")
    dist.all_reduce(rows, op=ReduceOp.PRODUCT)
    ref = data(R, (5, 3)).copy()
    ref[1:3] = np.prod([data(r, (5, 3))[1:3] for r in range(N)], axis=0)
    expect(base, ref, torch.float32)


@check("all_reduce of a bfloat16 and an int64 strided slice")
def _():
    for dtype in (torch.bfloat16, torch.int64):
        base = inp(R, dtype, (6, 4))
        view = base[1::2, ::3]
        dist.all_reduce(view)
        ref = rounded(data(R, (6, 4), kind_of(dtype)), dtype).astype(np.float64)
        ref[1::2, ::3] = rounded(sum(data(r, (6, 4), kind_of(dtype)) for r in range(N)),
                                 dtype)[1::2, ::3]
        expect(base, ref, dtype, what=str(dtype))


@check("all_reduce is in place: same storage, version counter bumped")
def _():
    x = inp(R)
    data_obj, v0 = x._data, x._version
    ptr = x.data_ptr() if DEVICE.type == "cpu" else None
    dist.all_reduce(x)
    ensure(x._data is data_obj, "all_reduce replaced the tensor's array")
    if ptr is not None:
        ensure(x.data_ptr() == ptr, "all_reduce moved the tensor's storage")
    ensure(x._version > v0, f"version counter {v0} -> {x._version}")
    alias = x.view(-1)
    dist.all_reduce(x)
    expect(alias, (N * sum(data(r) for r in range(N))).reshape(-1), what="a view of it")


@check("all_reduce async_op=True: Work wait/is_completed/result")
def _():
    x = inp(R)
    work = dist.all_reduce(x, async_op=True)
    ensure(isinstance(work, dist.Work), f"async all_reduce returned {type(work).__name__}")
    wait_until_completed(work, "all_reduce")
    ensure(work.wait() is True, "wait() did not return True")
    ensure(work.is_completed(), "is_completed() False after wait()")
    ensure(work.is_success(), "is_success() False after wait()")
    out = work.result()
    ensure(isinstance(out, list) and len(out) == 1 and out[0] is x,
           f"result() is {out!r}, expected [tensor]")
    expect(x, sum(data(r) for r in range(N)))


@check("all_reduce async on a view and in bfloat16: values final after wait()")
def _():
    base = make(data(R, (4, 6)))
    y = inp(R, torch.bfloat16)
    works = [dist.all_reduce(base.t(), async_op=True),
             dist.all_reduce(y, op=ReduceOp.AVG, async_op=True)]
    for w in works:
        ensure(w.wait(timeout=timedelta(seconds=60)) is True, "wait(timeout) not True")
    expect(base, sum(data(r, (4, 6)) for r in range(N)))
    stack = np.stack([value(inp(r, torch.bfloat16)) for r in range(N)])
    expect(y, rounded(stack.sum(0) / N, torch.bfloat16), torch.bfloat16)


@check("all_reduce of a leaf requiring grad keeps it a leaf and differentiable")
def _():
    p = make(data(R), requires_grad=True)
    dist.all_reduce(p)
    ensure(p.requires_grad and p.is_leaf and p.grad_fn is None,
           f"after all_reduce: requires_grad={p.requires_grad} is_leaf={p.is_leaf} "
           f"grad_fn={p.grad_fn}")
    expect(p, sum(data(r) for r in range(N)))
    (p * 3).sum().backward()
    expect(p.grad, np.full((3, 5), 3.0, dtype=np.float32), what="grad")


@check("all_reduce of a .grad (the DDP idiom) averages gradients")
def _():
    w = make(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    (w * make(data(R, (2, 3)))).sum().backward()
    dist.all_reduce(w.grad, op=ReduceOp.AVG)
    expect(w.grad, sum(data(r, (2, 3)) for r in range(N)) / N, torch.float32)


@check("all_reduce errors: AVG on int, MAX on complex, bad op, wrong types")
def _():
    raises(ValueError, dist.all_reduce, inp(R, torch.int64), ReduceOp.AVG)
    raises(ValueError, dist.all_reduce, inp(R, torch.int32), op=ReduceOp.AVG)
    raises(ValueError, dist.all_reduce, inp(R, torch.float32), op=ReduceOp.BXOR)
    raises(ValueError, dist.all_reduce, inp(R), op=42)
    raises(NotImplementedError, dist.all_reduce, inp(R), op=ReduceOp.PREMUL_SUM)
    bad = np.ones(3)
    raises(TypeError, dist.all_reduce, bad, exact=TYPE_ERROR.format(name="tensor",
                                                                    type=type(bad)))
    raises(TypeError, dist.all_reduce, [inp(R)],
           exact=TYPE_ERROR.format(name="tensor", type=list))
    raises(TypeError, dist.broadcast, 3.0, 0, exact=TYPE_ERROR.format(name="tensor",
                                                                      type=float))
    raises(TypeError, dist.all_gather, (inp(R),) * N, inp(R),
           exact=LIST_ERROR.format(name="tensor_list", type=tuple))
    raises(TypeError, dist.all_gather, [inp(R), 1.0], inp(R), match="with elements of type")
    if hasattr(torch, "complex64"):
        raises(ValueError, dist.all_reduce, make(np.ones(2) * 1j).to(torch.complex64),
               op=ReduceOp.MAX, match="complex")


@check("ReduceOp members are torch's RedOpType values")
def _():
    ensure(ReduceOp.SUM == ReduceOp.RedOpType.SUM, "ReduceOp.SUM != ReduceOp.RedOpType.SUM")
    ensure(repr(ReduceOp.MAX) == "<RedOpType.MAX: 4>", f"repr {ReduceOp.MAX!r}")
    ensure(dist.reduce_op is ReduceOp, "reduce_op (the deprecated alias) is not ReduceOp")
    x = inp(R)
    dist.all_reduce(x, op=dist.reduce_op.MIN)
    expect(x, np.min([data(r) for r in range(N)], axis=0))


# ------------------------------------------------------------------------------ broadcast
@check("broadcast from each src (float32, int64, bool, bfloat16)")
def _():
    for src in range(N):
        for dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16):
            x = inp(R, dtype)
            v0 = x._version
            ensure(dist.broadcast(x, src=src) is None, "broadcast returned something")
            expect(x, value(inp(src, dtype)), dtype, what=f"src={src} {dtype}")
            ensure(R == src or x._version > v0, "broadcast did not bump the version counter")


@check("broadcast with group_src, positional src, 0-d, empty and a transposed view")
def _():
    x = inp(R)
    dist.broadcast(x, group_src=N - 1)
    expect(x, data(N - 1), what="group_src")
    y = make(np.float64(R * 10), torch.float64)
    dist.broadcast(y, N - 1)
    expect(y, np.float64((N - 1) * 10), torch.float64, what="0-d")
    e = make(np.zeros((0, 4), np.float32))
    dist.broadcast(e, 0)
    expect(e, np.zeros((0, 4), np.float32), what="empty")
    base = make(data(R, (3, 4)))
    dist.broadcast(base.t(), src=1)
    expect(base, data(1, (3, 4)), what="through a view")
    raises(ValueError, dist.broadcast, inp(R), match="src")  # no src at all
    raises(ValueError, dist.broadcast, inp(R), src=N)
    raises(ValueError, dist.broadcast, inp(R), src=0, group_src=0)


@check("broadcast async_op=True")
def _():
    xs = [inp(R, salt=s) for s in range(N)]
    works = [dist.broadcast(xs[s], src=s, async_op=True) for s in range(N)]
    for w in works:
        w.wait()
    for s in range(N):
        expect(xs[s], data(s, salt=s), what=f"src={s}")


# --------------------------------------------------------------------------------- reduce
@check("reduce to each dst: SUM/MAX/AVG there, other ranks unchanged")
def _():
    for dst in range(N):
        for op, dtype in (("SUM", torch.float32), ("MAX", torch.int64), ("AVG", torch.float64),
                          ("PRODUCT", torch.bfloat16), ("BOR", torch.bool)):
            x = inp(R, dtype, op=op)
            mine = value(x)
            ensure(dist.reduce(x, dst=dst, op=getattr(ReduceOp, op)) is None,
                   "reduce returned something")
            if R == dst:
                stack = np.stack([value(inp(r, dtype, op=op)) for r in range(N)])
                expect(x, rounded(reference(op, stack, dtype), dtype), dtype,
                       what=f"dst={dst} {op} {dtype}")
            else:
                expect(x, mine, dtype, what=f"non-dst rank, dst={dst} {op} {dtype}")


@check("reduce with group_dst, async, into a transposed view")
def _():
    x = inp(R)
    dist.reduce(x, group_dst=N - 1)
    expect(x, sum(data(r) for r in range(N)) if R == N - 1 else data(R), what="group_dst")
    base = make(data(R, (4, 3)))
    w = dist.reduce(base.t(), 0, ReduceOp.MIN, async_op=True)
    w.wait()
    ref = np.min([data(r, (4, 3)) for r in range(N)], axis=0) if R == 0 else data(R, (4, 3))
    expect(base, ref, what="view")
    raises(ValueError, dist.reduce, inp(R), match="dst")


# ----------------------------------------------------------------------------- all_gather
@check("all_gather: equal sizes, several dtypes")
def _():
    for dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.float16):
        out = [make(np.zeros((3, 5))).to(dtype) for _ in range(N)]
        versions = [t._version for t in out]
        ensure(dist.all_gather(out, inp(R, dtype)) is None, "all_gather returned something")
        for r in range(N):
            expect(out[r], value(inp(r, dtype)), dtype, what=f"{dtype} from rank {r}")
            ensure(out[r]._version > versions[r], "all_gather did not bump a version counter")


@check("all_gather: uneven sizes")
def _():
    out = [make(np.zeros((r + 1, 2), np.float32)) for r in range(N)]
    dist.all_gather(out, make(data(R, (R + 1, 2))))
    for r in range(N):
        expect(out[r], data(r, (r + 1, 2)), what=f"from rank {r}")
    out = [make(np.zeros((0 if r % 2 else 3,), np.float32)) for r in range(N)]
    dist.all_gather(out, make(data(R, (0 if R % 2 else 3,))))
    for r in range(N):
        expect(out[r], data(r, (0 if r % 2 else 3,)), what=f"empty parts, rank {r}")


@check("all_gather into non-contiguous views of one tensor, async")
def _():
    big = make(np.zeros((4, N), np.float32))
    views = [big[:, r] for r in range(N)]
    work = dist.all_gather(views, make(data(R, (4,))), async_op=True)
    work.wait()
    expect(big, np.stack([data(r, (4,)) for r in range(N)], axis=1))
    res = work.result()
    ensure(len(res) == N and all(a is b for a, b in zip(res, views)),
           "result() is not the tensor_list")


@check("all_gather errors: dtype mismatch, list length, size")
def _():
    raises(ValueError, dist.all_gather, [make(np.zeros(3), torch.float64) for _ in range(N)],
           make(np.zeros(3, np.float32)), match="dtype")
    raises(ValueError, dist.all_gather, [inp(R)] * (N + 1), inp(R))
    raises(ValueError, dist.all_gather, [make(np.zeros(2, np.float32))] * N, inp(R))


@check("all_gather_into_tensor: concatenated and stacked outputs, size error")
def _():
    ref = np.concatenate([data(r, (3, 2)) for r in range(N)])
    out = make(np.zeros((3 * N, 2), np.float32))
    ensure(dist.all_gather_into_tensor(out, make(data(R, (3, 2)))) is None, "returned a value")
    expect(out, ref, what="concatenated")
    out = make(np.zeros((N, 3, 2), np.float32))
    dist.all_gather_into_tensor(out, make(data(R, (3, 2))))
    expect(out, ref.reshape(N, 3, 2), what="stacked")
    out = make(np.zeros((3 * N, 2))).to(torch.bfloat16)
    w = dist.all_gather_into_tensor(out, make(data(R, (3, 2))).to(torch.bfloat16),
                                    async_op=True)
    w.wait()
    expect(out, ref, torch.bfloat16, what="bfloat16, async")
    out = make(np.zeros((2, 3 * N), np.float32))
    dist.all_gather_into_tensor(out.t(), make(data(R, (3, 2))))
    expect(out, ref.T, what="into a transposed view")
    raises(ValueError, dist.all_gather_into_tensor, make(np.zeros((3 * N + 1, 2), np.float32)),
           make(data(R, (3, 2))), match="size")
    raises(ValueError, dist.all_gather_into_tensor, make(np.zeros((3 * N, 2)), torch.float64),
           make(data(R, (3, 2))), match="dtype")


# ------------------------------------------------------------------------- reduce_scatter
@check("reduce_scatter: SUM and AVG")
def _():
    for op in ("SUM", "AVG", "MAX"):
        out = make(np.zeros((2, 3), np.float32))
        parts = [make(data(R, (2, 3), salt=j)) for j in range(N)]
        ensure(dist.reduce_scatter(out, parts, op=getattr(ReduceOp, op)) is None,
               "returned a value")
        stack = np.stack([data(r, (2, 3), salt=R) for r in range(N)])
        expect(out, reference(op, stack, torch.float32), torch.float32, what=op)


@check("reduce_scatter: int64 SUM, bfloat16 AVG, async, errors")
def _():
    out = make(np.zeros(4, np.int64))
    dist.reduce_scatter(out, [make(data(R, (4,), "int", salt=j)) for j in range(N)])
    expect(out, sum(data(r, (4,), "int", salt=R) for r in range(N)), torch.int64)
    out = make(np.zeros(4)).to(torch.bfloat16)
    w = dist.reduce_scatter(out, [inp(R, torch.bfloat16, (4,), salt=j) for j in range(N)],
                            op=ReduceOp.AVG, async_op=True)
    w.wait()
    stack = np.stack([value(inp(r, torch.bfloat16, (4,), salt=R)) for r in range(N)])
    expect(out, rounded(stack.mean(0), torch.bfloat16), torch.bfloat16, what="bfloat16 AVG")
    raises(ValueError, dist.reduce_scatter, make(np.zeros(4, np.float32)), [inp(R)] * (N + 1))
    raises(ValueError, dist.reduce_scatter, make(np.zeros(4, np.int64)),
           [make(np.zeros(4, np.int64))] * N, op=ReduceOp.AVG)


@check("reduce_scatter: parts of different sizes")
def _():
    out = make(np.zeros(R + 1, np.float32))
    dist.reduce_scatter(out, [make(data(R, (j + 1,), salt=j)) for j in range(N)])
    expect(out, sum(data(r, (R + 1,), salt=R) for r in range(N)))


@check("reduce_scatter_tensor: concatenated and stacked inputs, SUM and AVG")
def _():
    for op in ("SUM", "AVG"):
        full = [data(r, (2 * N, 3), salt=7) for r in range(N)]
        ref = reference(op, np.stack(full), torch.float32)[2 * R:2 * R + 2]
        out = make(np.zeros((2, 3), np.float32))
        ensure(dist.reduce_scatter_tensor(out, make(full[R]), op=getattr(ReduceOp, op))
               is None, "returned a value")
        expect(out, ref, what=f"concatenated {op}")
        out = make(np.zeros((2, 3), np.float32))
        dist.reduce_scatter_tensor(out, make(full[R].reshape(N, 2, 3)), getattr(ReduceOp, op))
        expect(out, ref, what=f"stacked {op}")
    raises(ValueError, dist.reduce_scatter_tensor, make(np.zeros((2, 3), np.float32)),
           make(np.zeros((2 * N + 1, 3), np.float32)), match="size")


@check("reduce_scatter_tensor: bfloat16, a transposed output, async")
def _():
    full = [value(inp(r, torch.bfloat16, (N, 4))) for r in range(N)]
    out = make(np.zeros(4)).to(torch.bfloat16)
    w = dist.reduce_scatter_tensor(out, inp(R, torch.bfloat16, (N, 4)), async_op=True)
    w.wait()
    expect(out, rounded(np.sum(full, axis=0)[R], torch.bfloat16), torch.bfloat16)
    base = make(np.zeros((3, 2), np.float32))
    dist.reduce_scatter_tensor(base.t(), make(data(R, (2 * N, 3))))
    expect(base, sum(data(r, (2 * N, 3)) for r in range(N))[2 * R:2 * R + 2].T,
           what="transposed output")


# ------------------------------------------------------------------------ gather, scatter
@check("gather to dst 0 and to the last rank (uneven sizes at the last)")
def _():
    for dst in sorted({0, N - 1, 1}):
        uneven = dst == N - 1
        shape = (lambda r: (r + 1, 2)) if uneven else (lambda r: (2, 2))
        x = make(data(R, shape(R)))
        got = [make(np.zeros(shape(r), np.float32)) for r in range(N)] if R == dst else None
        ensure(dist.gather(x, got, dst=dst) is None, "gather returned something")
        if R == dst:
            for r in range(N):
                expect(got[r], data(r, shape(r)), what=f"dst={dst} from rank {r}")
        expect(x, data(R, shape(R)), what="the input is unchanged")


@check("gather: default dst 0, group_dst, async, bfloat16")
def _():
    got = [make(np.zeros(3)).to(torch.bfloat16) for _ in range(N)] if R == 0 else None
    dist.gather(inp(R, torch.bfloat16, (3,)), gather_list=got)
    if R == 0:
        for r in range(N):
            expect(got[r], value(inp(r, torch.bfloat16, (3,))), torch.bfloat16)
    got = [make(np.zeros(3, np.int64)) for _ in range(N)] if R == N - 1 else None
    w = dist.gather(inp(R, torch.int64, (3,)), got, group_dst=N - 1, async_op=True)
    w.wait()
    if R == N - 1:
        for r in range(N):
            expect(got[r], data(r, (3,), "int"), torch.int64)


@check("gather errors: gather_list on the wrong ranks")
def _():
    dst = N - 1
    x = inp(R)
    if R == dst:
        for missing in (None, []):
            raises(ValueError, dist.gather, x, missing, dst=dst,
                   exact="Argument ``gather_list`` must be specified on destination rank.")
        raises(ValueError, dist.gather, x, [x] * (N + 1), dst=dst)
        raises(ValueError, dist.gather, x, [make(np.zeros(2, np.float32))] * N, dst=dst,
               match="elements")  # its own slot is too small: no silent truncation
    else:
        raises(ValueError, dist.gather, x, [x] * N, dst=dst,
               exact="Argument ``gather_list`` must NOT be specified on non-destination ranks.")


@check("scatter from src 0 and from the last rank")
def _():
    for src in sorted({0, N - 1}):
        out = make(np.zeros((2, 3), np.float32))
        parts = [make(data(r, (2, 3), salt=src)) for r in range(N)] if R == src else None
        ensure(dist.scatter(out, parts, src=src) is None, "scatter returned something")
        expect(out, data(R, (2, 3), salt=src), what=f"src={src}")


@check("scatter: default src, group_src, async, bfloat16 into a view, uneven error")
def _():
    out = make(np.zeros(3, np.int64))
    dist.scatter(out, [make(data(r, (3,), "int")) for r in range(N)] if R == 0 else None)
    expect(out, data(R, (3,), "int"), torch.int64, what="default src")
    base = make(np.zeros((3, 2))).to(torch.bfloat16)
    parts = [inp(r, torch.bfloat16, (2, 3)) for r in range(N)] if R == N - 1 else None
    w = dist.scatter(base.t(), parts, group_src=N - 1, async_op=True)
    w.wait()
    expect(base, value(inp(R, torch.bfloat16, (2, 3))).T, torch.bfloat16, what="view")


@check("scatter errors: scatter_list on the wrong ranks")
def _():
    src = N - 1
    out = make(np.zeros(3, np.float32))
    if R == src:
        for missing in (None, []):
            raises(ValueError, dist.scatter, out, missing, src=src,
                   exact="Argument ``scatter_list`` must be specified on source rank.")
        raises(ValueError, dist.scatter, out, [out] * (N + 1), src=src)
    else:
        raises(ValueError, dist.scatter, out, [out] * N, src=src,
               exact="Argument ``scatter_list`` must NOT be specified on non-source ranks.")


# ------------------------------------------------------------------------------ all_to_all
def _split(r: int, j: int) -> int:
    """Rows rank r sends to rank j in the uneven all_to_all checks."""
    return (r + 2 * j) % 3 + (1 if (r + j) % 2 else 0)


@check("all_to_all: equal and uneven sizes")
def _():
    out = [make(np.zeros(2, np.float32)) for _ in range(N)]
    ensure(dist.all_to_all(out, [make(data(R, (2,), salt=j)) for j in range(N)]) is None,
           "all_to_all returned something")
    for j in range(N):
        expect(out[j], data(j, (2,), salt=R), what=f"from rank {j}")
    out = [make(np.zeros((_split(j, R), 3), np.float32)) for j in range(N)]
    w = dist.all_to_all(out, [make(data(R, (_split(R, j), 3), salt=j)) for j in range(N)],
                        async_op=True)
    w.wait()
    for j in range(N):
        expect(out[j], data(j, (_split(j, R), 3), salt=R), what=f"uneven, from rank {j}")
    out = [make(np.zeros(2)).to(torch.bfloat16) for _ in range(N)]
    dist.all_to_all(out, [inp(R, torch.bfloat16, (2,), salt=j) for j in range(N)])
    for j in range(N):
        expect(out[j], value(inp(j, torch.bfloat16, (2,), salt=R)), torch.bfloat16)
    raises(ValueError, dist.all_to_all, out[:-1], out)


@check("all_to_all_single: even and with split sizes")
def _():
    inp_ = make(data(R, (2 * N, 3)))
    out = make(np.zeros((2 * N, 3), np.float32))
    ensure(dist.all_to_all_single(out, inp_) is None, "returned something")
    expect(out, np.concatenate([data(j, (2 * N, 3))[2 * R:2 * R + 2] for j in range(N)]))
    sends = [_split(R, j) for j in range(N)]
    recvs = [_split(j, R) for j in range(N)]
    x = make(data(R, (sum(sends), 2), salt=5))
    out = make(np.zeros((sum(recvs), 2), np.float32))
    w = dist.all_to_all_single(out, x, output_split_sizes=recvs, input_split_sizes=sends,
                               async_op=True)
    w.wait()

    def part(j: int, r: int) -> np.ndarray:  # what rank j sends to rank r
        s = [_split(j, k) for k in range(N)]
        return data(j, (sum(s), 2), salt=5)[sum(s[:r]):sum(s[:r + 1])]
    expect(out, np.concatenate([part(j, R) for j in range(N)]), what="split sizes")
    out = make(np.zeros((N, 4), np.int64))
    dist.all_to_all_single(out, make(data(R, (N, 4), "int")).t().contiguous().t())
    expect(out, np.stack([data(j, (N, 4), "int")[R] for j in range(N)]), torch.int64,
           what="int64")
    raises(ValueError, dist.all_to_all_single, make(np.zeros((2 * N + 1,), np.float32)),
           make(np.zeros((2 * N + 1,), np.float32)))
    raises(ValueError, dist.all_to_all_single, out, make(data(R, (N, 4), "int")),
           input_split_sizes=[1] * (N + 1))


# ----------------------------------------------------------------------- point to point
@check("send/recv in a ring")
def _():
    nxt, prv = (R + 1) % N, (R - 1) % N
    got = make(np.zeros((3, 5), np.float32))
    if R % 2 == 0:
        ensure(dist.send(inp(R), dst=nxt) is None, "send returned something")
        sender = dist.recv(got, src=prv)
    else:
        sender = dist.recv(got, src=prv)
        dist.send(inp(R), nxt)
    ensure(sender == prv, f"recv returned {sender}, expected {prv}")
    expect(got, data(prv))


@check("recv with src=None returns the sender")
def _():
    if R == 0:
        seen = set()
        for _ in range(N - 1):
            got = make(np.zeros(4, np.float32))
            sender = dist.recv(got)
            ensure(sender in range(1, N), f"recv(src=None) returned {sender}")
            expect(got, data(sender, (4,)), what=f"payload from {sender}")
            seen.add(sender)
        ensure(seen == set(range(1, N)), f"senders seen: {sorted(seen)}")
        got = make(np.zeros(4, np.float32))
        work = dist.irecv(got, tag=5)
        work.wait()
        ensure(work.source_rank() == N - 1, f"irecv source_rank() {work.source_rank()}")
        expect(got, data(N - 1, (4,), salt=1))
    else:
        dist.send(make(data(R, (4,))), 0)
        if R == N - 1:
            dist.send(make(data(R, (4,), salt=1)), 0, tag=5)


@check("isend/irecv in a ring, both directions, with tags and views")
def _():
    nxt, prv = (R + 1) % N, (R - 1) % N
    a = make(np.zeros((2, 3), np.float32))
    b_base = make(np.zeros((3, 2), np.float32))
    works = [dist.irecv(a, src=prv, tag=3), dist.irecv(b_base.t(), src=nxt, tag=4)]
    src_base = make(data(R, (3, 2), salt=9))
    works += [dist.isend(make(data(R, (2, 3))), dst=nxt, tag=3),
              dist.isend(src_base.t(), dst=prv, tag=4)]  # a non-contiguous send: a copy
    del src_base
    gc.collect()
    for w in works:
        ensure(isinstance(w, dist.Work), f"isend/irecv returned {type(w).__name__}")
        w.wait()
    expect(a, data(prv, (2, 3)), what="from the previous rank")
    expect(b_base, data(nxt, (3, 2), salt=9), what="from the next rank, into a view")
    raises(ValueError, dist.isend, a, dst=R, match="destination rank")


@check("Work.wait(timeout) raises while the message has not come, wait() then completes")
def _():
    if R == 0:
        got = make(np.zeros(3, np.float32))
        work = dist.irecv(got, src=N - 1, tag=11)
        ensure(not work.is_completed(), "is_completed() True before anything was sent")
        raises(RuntimeError, work.wait, timeout=timedelta(milliseconds=50))
        dist.barrier()
        ensure(work.wait() is True, "wait() did not return True")
        ensure(work.source_rank() == N - 1, f"source_rank() {work.source_rank()}")
        expect(got, data(N - 1, (3,)))
    else:
        dist.barrier()  # nothing is sent before rank 0 has timed out
        if R == N - 1:
            dist.send(make(data(R, (3,))), 0, tag=11)


@check("send/recv of int64, bool, bfloat16 and 0-d tensors with group_dst/group_src")
def _():
    for dtype in (torch.int64, torch.bool, torch.bfloat16):
        if R == 0:
            for r in range(1, N):
                dist.send(inp(0, dtype, (2, 2), salt=r), group_dst=r)
        else:
            got = make(np.zeros((2, 2))).to(dtype)
            dist.recv(got, group_src=0)
            expect(got, value(inp(0, dtype, (2, 2), salt=R)), dtype, what=str(dtype))
    if R == 0:
        for r in range(1, N):
            dist.send(make(np.float64(r + 0.5), torch.float64), r)
    else:
        got = make(np.float64(0), torch.float64)
        dist.recv(got, 0)
        expect(got, np.float64(R + 0.5), torch.float64, what="0-d")


@check("batch_isend_irecv with P2POp in a ring")
def _():
    nxt, prv = (R + 1) % N, (R - 1) % N
    got_prev = make(np.zeros(3, np.float32))
    got_next = make(np.zeros(3, np.int64))
    ops = [dist.P2POp(dist.isend, make(data(R, (3,))), nxt),
           dist.P2POp(dist.irecv, got_prev, prv),
           dist.P2POp(dist.isend, make(data(R, (3,), "int")), prv, tag=1),
           dist.P2POp(dist.irecv, got_next, nxt, tag=1)]
    works = dist.batch_isend_irecv(ops)
    ensure(len(works) == 4, f"{len(works)} Work handles for 4 ops")
    for w in works:
        w.wait()
    expect(got_prev, data(prv, (3,)))
    expect(got_next, data(nxt, (3,), "int"), torch.int64)
    raises(ValueError, dist.P2POp, dist.all_reduce, got_prev, nxt)
    raises(ValueError, dist.batch_isend_irecv, [got_prev])


# ------------------------------------------------------------------------ Python objects
def _obj(r: int) -> dict:
    return {"rank": r, "name": f"rank-{r}", "t": make(data(r, (2, 2))),
            "nested": [make(data(r, (3,), "int")), (r, None)]}


def _expect_obj(got, r: int, what: str) -> None:
    ensure(isinstance(got, dict), f"{what}: got {type(got).__name__}, expected dict")
    ensure(got["rank"] == r and got["name"] == f"rank-{r}" and got["nested"][1] == (r, None),
           f"{what}: got {got!r}")
    expect(got["t"], data(r, (2, 2)), what=f"{what} tensor")
    expect(got["nested"][0], data(r, (3,), "int"), torch.int64, what=f"{what} nested tensor")


@check("broadcast_object_list from each src")
def _():
    for src in range(N):
        objs = [_obj(R), "same", 3] if R == src else [None, None, None]
        dist.broadcast_object_list(objs, src=src)
        _expect_obj(objs[0], src, f"src={src}")
        ensure(objs[1:] == ["same", 3], f"src={src}: {objs[1:]}")
    objs = [_obj(R)]
    dist.broadcast_object_list(objs)  # default src 0
    _expect_obj(objs[0], 0, "default src")
    objs = [1, 2] if R == 0 else [None]
    if R == 0:
        dist.broadcast_object_list(objs, src=0)
    else:  # the broadcast completes, then the length is refused
        raises(ValueError, dist.broadcast_object_list, objs, src=0, match="same length")


@check("all_gather_object and gather_object")
def _():
    got = [None] * N
    dist.all_gather_object(got, _obj(R))
    for r in range(N):
        _expect_obj(got[r], r, f"all_gather_object from {r}")
    raises(ValueError, dist.all_gather_object, [None] * (N + 1), 1)
    dst = N - 1
    got = [None] * N if R == dst else None
    dist.gather_object(_obj(R), got, dst=dst)
    if R == dst:
        for r in range(N):
            _expect_obj(got[r], r, f"gather_object from {r}")
        raises(ValueError, dist.gather_object, 1, None, dst=dst, match="object_gather_list")
    got = [None] * N if R == 0 else None
    dist.gather_object(R * 2, got)
    ensure(R != 0 or got == [2 * r for r in range(N)], f"gather_object to 0: {got}")


@check("scatter_object_list from each src")
def _():
    for src in sorted({0, N - 1}):
        out = [None]
        inputs = [_obj(r) for r in range(N)] if R == src else None
        dist.scatter_object_list(out, inputs, src=src)
        _expect_obj(out[0], R, f"src={src}")
    raises(ValueError, dist.scatter_object_list, [], [1] * N)


@check("send_object_list/recv_object_list in a ring; recv from any src")
def _():
    nxt, prv = (R + 1) % N, (R - 1) % N
    got = [None, None]
    if R % 2 == 0:
        dist.send_object_list([_obj(R), "x"], dst=nxt)
        sender = dist.recv_object_list(got, src=prv)
    else:
        sender = dist.recv_object_list(got, src=prv)
        dist.send_object_list([_obj(R), "x"], dst=nxt)
    ensure(sender == prv, f"recv_object_list returned {sender}, expected {prv}")
    _expect_obj(got[0], prv, "ring")
    ensure(got[1] == "x", f"second object {got[1]!r}")
    if R == 0:
        for _ in range(N - 1):
            got = [None]
            sender = dist.recv_object_list(got)
            _expect_obj(got[0], sender, f"from any src ({sender})")
    else:
        dist.send_object_list([_obj(R)], 0)


# ----------------------------------------------------------------------- groups, barrier
@check("barrier, async barrier, monitored_barrier")
def _():
    ensure(dist.barrier() is None, "barrier returned something")
    w = dist.barrier(async_op=True)
    ensure(isinstance(w, dist.Work), "barrier(async_op=True) did not return a Work")
    w.wait()
    dist.barrier(timeout=timedelta(seconds=60))
    dist.monitored_barrier(timeout=timedelta(seconds=60))
    dist.monitored_barrier(wait_all_ranks=True)


@check("monitored_barrier names the ranks that did not arrive")
def _():
    g = dist.new_group(list(range(N)))  # the abandoned barrier's messages stay in g
    if R == 0:
        raises(RuntimeError, dist.monitored_barrier, g, timeout=timedelta(seconds=0.2),
               wait_all_ranks=True,
               match=f"Ranks {', '.join(map(str, range(1, N)))} failed to pass monitoredBarrier")
    dist.barrier()
    dist.destroy_process_group(g)


@check("new_group of a subset: members and non-members")
def _():
    ranks = list(range(1, N))
    g = dist.new_group(ranks)
    if R == 0:
        ensure(g is dist.GroupMember.NON_GROUP_MEMBER and g == -100,
               f"new_group returned {g!r} on a non-member")
        ensure(dist.get_rank(g) == -1 and dist.get_world_size(g) == -1,
               f"non-member get_rank/get_world_size: {dist.get_rank(g)}/{dist.get_world_size(g)}")
        x = inp(R)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ensure(dist.all_reduce(x, group=g) is None, "non-member all_reduce returned a value")
            dist.broadcast(x, src=1, group=g)
            dist.barrier(group=g)
            objs = ["mine"]
            dist.broadcast_object_list(objs, src=1, group=g)
        ensure(len(caught) == 4 and "does not belong to the given group" in str(caught[0].message),
               f"non-member warnings: {[str(w.message) for w in caught]}")
        expect(x, data(R), what="a non-member's tensor is unchanged")
        ensure(objs == ["mine"], f"a non-member's object list changed: {objs}")
        dist.destroy_process_group(g)  # a no-op for a non-member
        return
    gr = R - 1
    ensure(isinstance(g, dist.ProcessGroup), f"new_group returned {g!r} on a member")
    ensure(dist.get_rank(g) == gr and g.rank() == gr, f"get_rank(g) {dist.get_rank(g)}")
    ensure(dist.get_world_size(g) == N - 1 and g.size() == N - 1, "get_world_size(g)")
    ensure(dist.get_process_group_ranks(g) == ranks, f"ranks {dist.get_process_group_ranks(g)}")
    ensure(dist.get_global_rank(g, 0) == 1, f"get_global_rank(g, 0) {dist.get_global_rank(g, 0)}")
    ensure(dist.get_group_rank(g, R) == gr, f"get_group_rank(g, {R})")
    raises(ValueError, dist.get_group_rank, g, 0)
    raises(ValueError, dist.get_global_rank, g, N - 1)
    ensure(dist.get_backend(g) == "gloo", f"get_backend(g) {dist.get_backend(g)!r}")

    x = inp(R)
    dist.all_reduce(x, group=g)
    expect(x, sum(data(r) for r in ranks), what="all_reduce")
    x = inp(R)
    dist.broadcast(x, src=N - 1, group=g)  # src is a global rank
    expect(x, data(N - 1), what="broadcast src=N-1")
    x = inp(R)
    dist.broadcast(x, group_src=0, group=g)  # group rank 0 is global rank 1
    expect(x, data(1), what="broadcast group_src=0")
    raises(ValueError, dist.broadcast, inp(R), src=0, group=g)  # 0 is not a member
    x = inp(R)
    dist.reduce(x, dst=1, op=ReduceOp.MAX, group=g)
    expect(x, np.max([data(r) for r in ranks], 0) if R == 1 else data(R), what="reduce dst=1")
    out = [make(np.zeros((3, 5), np.float32)) for _ in ranks]
    dist.all_gather(out, inp(R), group=g)
    for i, r in enumerate(ranks):
        expect(out[i], data(r), what=f"all_gather part {i}")
    got = [make(np.zeros(2, np.float32)) for _ in ranks] if R == N - 1 else None
    dist.gather(make(data(R, (2,))), got, dst=N - 1, group=g)
    if R == N - 1:
        for i, r in enumerate(ranks):
            expect(got[i], data(r, (2,)), what=f"gather part {i}")
    out = make(np.zeros(2, np.float32))
    dist.scatter(out, [make(data(r, (2,))) for r in ranks] if R == 1 else None, src=1, group=g)
    expect(out, data(R, (2,)), what="scatter src=1")
    out = make(np.zeros((N - 1, 2), np.float32))
    dist.all_gather_into_tensor(out, make(data(R, (2,))), group=g)
    expect(out, np.stack([data(r, (2,)) for r in ranks]), what="all_gather_into_tensor")
    if N > 2:  # point to point inside the group, global ranks
        nxt = ranks[(gr + 1) % len(ranks)]
        prv = ranks[(gr - 1) % len(ranks)]
        got = make(np.zeros(2, np.float32))
        works = [dist.isend(make(data(R, (2,))), nxt, group=g),
                 dist.irecv(got, prv, group=g)]
        for w in works:
            w.wait()
        ensure(works[1].source_rank() == prv, f"source_rank {works[1].source_rank()}")
        expect(got, data(prv, (2,)), what="p2p in the group")
    objs = [R] if R == N - 1 else [None]
    dist.broadcast_object_list(objs, src=N - 1, group=g)
    ensure(objs == [N - 1], f"broadcast_object_list in the group: {objs}")
    gathered = [None] * (N - 1)
    dist.all_gather_object(gathered, R, group=g)
    ensure(gathered == ranks, f"all_gather_object in the group: {gathered}")
    dist.barrier(group=g)
    dist.monitored_barrier(group=g, timeout=timedelta(seconds=60))
    dist.destroy_process_group(g)


@check("new_group: the world again, reversed with sort_ranks=False, destroy")
def _():
    everyone = dist.new_group()
    x = inp(R)
    dist.all_reduce(x, group=everyone)
    expect(x, sum(data(r) for r in range(N)), what="new_group() is everyone")
    rev = list(range(N))[::-1]
    g = dist.new_group(rev, sort_ranks=False)
    ensure(dist.get_process_group_ranks(g) == rev, f"ranks {dist.get_process_group_ranks(g)}")
    ensure(dist.get_rank(g) == N - 1 - R, f"get_rank(reversed) {dist.get_rank(g)}")
    x = inp(R)
    dist.broadcast(x, group_src=0, group=g)  # group rank 0 is global rank N - 1
    expect(x, data(N - 1), what="group_src=0 of the reversed group")
    got = [make(np.zeros(2, np.float32)) for _ in range(N)] if R == 0 else None
    dist.gather(make(data(R, (2,))), got, dst=0, group=g)
    if R == 0:
        for i, r in enumerate(rev):
            expect(got[i], data(r, (2,)), what=f"gather part {i} (global rank {r})")
    if N > 1:
        pair = dist.new_group([0, 1])
        if R in (0, 1):
            x = inp(R)
            dist.all_reduce(x, group=pair)
            expect(x, data(0) + data(1), what="a pair")
            dist.destroy_process_group(pair)
    dist.destroy_process_group(g)
    dist.destroy_process_group(everyone)
    ensure(dist.is_initialized(), "destroying a subgroup de-initialized the default group")
    raises(ValueError, dist.destroy_process_group, g)  # already destroyed
    raises(ValueError, dist.new_group, [0, N])


# -------------------------------------------------------------------------- checkpoints
@check("checkpoint idiom: rank 0 saves, barrier, every rank loads")
def _():
    path = OUT_DIR / "checkpoint.pt"
    torch.manual_seed(1234)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    expected = {k: value(v) for k, v in ref.state_dict().items()}
    if R == 0:
        torch.save(ref.state_dict(), path)
    dist.barrier()
    for where in ("cpu", lambda storage, loc: storage, {"cpu": "cpu"}):
        torch.manual_seed(100 + R)  # different weights on every rank until loaded
        model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                    torch.nn.Linear(3, 2))
        state = torch.load(path, map_location=where)
        ensure(set(state) == set(expected), f"keys {sorted(state)}")
        model.load_state_dict(state)
        for k, v in model.state_dict().items():
            expect(v, expected[k], what=f"{k} (map_location={where!r})")
    dist.barrier()  # nobody removes the file while another rank reads it


@check("parameters synchronised by broadcast, gradients averaged by all_reduce")
def _():
    torch.manual_seed(7 + R)
    model = torch.nn.Linear(3, 2)
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    weights = [None] * N
    dist.all_gather_object(weights, value(model.weight).tolist())
    ensure(all(w == weights[0] for w in weights), "parameters differ after broadcast")
    model(make(data(R, (4, 3)))).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad, op=ReduceOp.SUM)
        p.grad /= N
    expect(model.bias.grad, np.full(2, 4.0, np.float32), what="bias grad")
    mean_x = sum(data(r, (4, 3)).sum(0) for r in range(N)) / N
    expect(model.weight.grad, np.stack([mean_x, mean_x]).astype(np.float32), tol=1e-5,
           what="weight grad")


# ------------------------------------------------------------------ destroy and re-init
@check("destroy_process_group, then init_process_group again")
def _():
    dist.destroy_process_group()
    ensure(not dist.is_initialized(), "is_initialized() True after destroy_process_group()")
    ensure(dist.group.WORLD is None and dist.GroupMember.WORLD is None,
           "group.WORLD survives destroy_process_group()")
    raises(ValueError, dist.get_rank, match="has not been initialized")
    raises(ValueError, dist.init_process_group, "gloo", world_size=N + 1, match="world size")
    raises(ValueError, dist.init_process_group, "gloo", rank=(R + 1) % N, match="rank")
    ensure(not dist.is_initialized(), "a refused init_process_group initialized")
    dist.init_process_group(backend="gloo")
    ensure(dist.is_initialized() and dist.get_rank() == R and dist.get_world_size() == N,
           "re-initialized group has another layout")
    x = inp(R)
    dist.all_reduce(x)
    expect(x, sum(data(r) for r in range(N)), what="all_reduce after re-init")
    g = dist.new_group(list(range(N)))
    dist.barrier(group=g)
    dist.destroy_process_group(dist.group.WORLD)  # as None: every group, g too
    ensure(not dist.is_initialized(), "still initialized")
    dist.init_process_group("mpi")
    ensure(dist.get_backend() == "mpi", f"backend {dist.get_backend()!r}")
    dist.barrier()
    dist.destroy_process_group()
    dist.init_process_group("cpu:gloo,cuda:nccl")  # torch's per-device form
    ensure(dist.get_backend() == "gloo", f"backend {dist.get_backend()!r}")
    dist.barrier()


# ----------------------------------------------------------------------------------- main
CHECK_TIMEOUT = float(os.environ.get("EMBER_DIST_CHECK_TIMEOUT", "30"))


def _meet(comm) -> bool:
    """Wait for every rank at a barrier on ``comm``; False if that takes over CHECK_TIMEOUT
    (a rank is stuck in a collective the others left: the check desynchronised them)."""
    request = comm.Ibarrier()
    deadline = time.monotonic() + CHECK_TIMEOUT
    while not request.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0002)
    return True


def main() -> None:
    from ember.distributed import _mpi
    # the harness's own communicator, apart from ember's; MPI loaded as ember loads it
    sync = _mpi.mpi().COMM_WORLD.Dup()
    rank = sync.Get_rank()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    with open(OUT_DIR / f"rank{rank}.jsonl", "w", buffering=1) as log:
        def emit(**record) -> None:
            log.write(json.dumps(record) + "\n")
            log.flush()
        for name, fn in CHECKS:
            emit(start=name)
            began = time.perf_counter()
            try:
                fn()
                result = "ok"
            except Skip as e:
                result = f"skip: {e}"
            except Exception:  # noqa: BLE001  (every failure is reported, then the next check)
                result = traceback.format_exc(limit=-3)
            emit(check=name, result=result, seconds=round(time.perf_counter() - began, 4))
            if not _meet(sync):
                emit(timeout=name)
                sys.stderr.write(f"[rank {rank}] the ranks did not all finish check {name!r} "
                                 f"within {CHECK_TIMEOUT} s: aborting the job\n")
                sys.stderr.flush()
                sync.Abort(3)
        emit(done=len(CHECKS))
    if dist.is_initialized():
        dist.destroy_process_group()
    sync.Free()


if __name__ == "__main__":
    main()
