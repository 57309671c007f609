"""DistributedDataParallel checks, all in one MPI job: ``mpiexec -n N python ddp_worker.py OUT``.

Each check compares DDP, run with each rank on its slice of a batch, against a single-process
reference that every rank trains by itself on the whole batch (float64, so they agree to
rounding). Run without ``mpiexec`` it is a one-process job (an MPI singleton), so every check
runs with world size 1 as well.

Every rank writes ``OUT/rank{R}.json``: ``{"checks": {name: "ok" | what failed}, "messages":
{...}, "finished": bool}``, rewritten before and after each check. ``messages`` holds the error
and warning texts DDP gave, for ``tests/test_ddp.py`` to compare with real torch's. A wrong
value is recorded (``expect``) and the check goes on, so every rank still makes the same
collective calls; at the end of each check the ranks wait for each other, and one that waits
``CHECK_DEADLINE`` seconds aborts the job, leaving the hung check marked ``"running"``.

``python ddp_worker.py OUT crash`` is the failure drill instead: rank 1 raises after two
training steps while the other ranks go on into the next all-reduce; the job must end.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
import time
import traceback
import warnings

import numpy as np

import ember as torch
import ember.distributed as dist
from ember import nn
from ember.nn import functional as F
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, TensorDataset
from ember.utils.data.distributed import DistributedSampler

F64 = torch.float64
TOL64 = 1e-10  # float64: DDP and the reference differ only by summation order
TOL32 = 1e-5
CHECK_DEADLINE = 45  # seconds a rank waits for the others at the end of a check
CHECKS: dict = {}
MESSAGES: dict = {}
FAILURES: list[str] = []  # the running check's failed expectations
W = R = 0
OUT = ""


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def expect(condition, message: str) -> None:
    """Record a failed expectation and go on: a rank that raised where the others go on
    into a collective would hang the job, so checks do not stop at a wrong value."""
    if not condition:
        FAILURES.append(message)


# --------------------------------------------------------------------------- helpers
def mlp(seed: int, dtype=F64, width: int = 8, hidden: int = 1) -> nn.Module:
    torch.manual_seed(seed)
    layers = [nn.Linear(4, width), nn.Tanh()]
    for _ in range(hidden - 1):
        layers += [nn.Linear(width, width), nn.Tanh()]
    return nn.Sequential(*layers, nn.Linear(width, 2)).to(dtype)


def data(seed: int, n: int, dtype=F64) -> tuple:
    """The same global batch (inputs, targets) on every rank."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, 4, generator=g, dtype=dtype),
            torch.randn(n, 2, generator=g, dtype=dtype))


def mine(t, per_rank: int):
    """This rank's rows of a global batch cut into equal slices."""
    return t[R * per_rank:(R + 1) * per_rank]


def arr(t) -> np.ndarray:
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def expect_close(actual, expected, what: str, tol: float = TOL64) -> None:
    a, e = arr(actual), arr(expected)
    if a.shape != e.shape or not np.allclose(a, e, rtol=tol, atol=tol):
        diff = np.abs(a - e).max() if a.shape == e.shape else "shapes differ"
        expect(False, f"{what}: max |difference| {diff} (tolerance {tol}); shapes "
                      f"{a.shape} vs {e.shape}\nactual {a.ravel()[:6]}\n"
                      f"expected {e.ravel()[:6]}")


def same_params(model: nn.Module, ref: nn.Module, what: str, grads: bool = False) -> None:
    # a float32 layer anywhere leaves float32 rounding in every gradient
    tol = TOL32 if any(p.dtype == torch.float32 for p in model.parameters()) else TOL64
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
        if grads:
            if q.grad is None or p.grad is None:
                expect(p.grad is None and q.grad is None,
                       f"{what}: {name}.grad is {p.grad}, expected {q.grad}")
                continue
            expect_close(p.grad, q.grad, f"{what}: {name}.grad", tol)
        else:
            expect_close(p, q, f"{what}: {name}", tol)


def gathered(t) -> list:
    """Every rank's copy of ``t`` (to check that replicas agree)."""
    out = [torch.zeros_like(t) for _ in range(W)]
    dist.all_gather(out, t.detach().clone())
    return out


def replicas_agree(model: nn.Module, what: str) -> None:
    for name, p in model.named_parameters():
        for r, q in enumerate(gathered(p)):
            expect_close(q, p, f"{what}: {name} on rank {r} against rank {R}", 0.0)


def train(ddp, ref, opt, ref_opt, steps: int, seed: int, per_rank: int = 3) -> None:
    """``steps`` steps of DDP on this rank's slice and of the reference on the whole batch;
    gradients are compared when backward returns, before the optimizers run."""
    for step in range(steps):
        x, y = data(seed + step, per_rank * W)
        opt.zero_grad()
        F.mse_loss(ddp(mine(x, per_rank)), mine(y, per_rank)).backward()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        same_params(ddp.module, ref, f"step {step} gradients", grads=True)
        opt.step()
        ref_opt.step()
        same_params(ddp.module, ref, f"step {step} parameters")


# --------------------------------------------------------------------------- training
@check
def sgd_momentum_matches_single_process():
    model, ref = mlp(R), mlp(0)  # different weights per rank: DDP takes rank 0's
    ddp = DDP(model)
    same_params(model, ref, "after construction")
    train(ddp, ref, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
          torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9), 4, seed=10)
    replicas_agree(model, "after SGD")


@check
def adam_matches_single_process():
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    train(ddp, ref, torch.optim.Adam(model.parameters(), lr=0.01),
          torch.optim.Adam(ref.parameters(), lr=0.01), 4, seed=20)
    replicas_agree(model, "after Adam")


@check
def grads_ready_when_backward_returns_and_retain_graph_twice():
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    x, y = data(30, 2 * W)
    loss = F.mse_loss(ddp(mine(x, 2)), mine(y, 2))
    loss.backward(retain_graph=True)
    F.mse_loss(ref(x), y).backward()
    same_params(model, ref, "first backward", grads=True)  # no optimizer call in between
    # as torch: only the first backward after a forward is averaged; a second one over the
    # retained graph adds this rank's own gradient, unreduced
    loss.backward()
    local = mlp(0)
    F.mse_loss(local(mine(x, 2)), mine(y, 2)).backward()
    for p, q, g in zip(model.parameters(), ref.parameters(), local.parameters(), strict=True):
        expect_close(p.grad, q.grad + g.grad, "second backward with the retained graph")
    for p, q in zip(model.parameters(), ref.parameters(), strict=True):
        p.grad = None
        q.grad = None
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    train(ddp, ref, opt, ref_opt, 2, seed=31)  # training goes on normally


@check
def one_process_step_equals_plain_training():
    model, ref = mlp(0), mlp(0)
    ddp = DDP(model)
    x, y = data(35, 3 * W)
    if W == 1:  # DDP over one process is plain training, exactly
        F.mse_loss(ddp(x), y).backward()
        F.mse_loss(ref(x), y).backward()
        for p, q in zip(model.parameters(), ref.parameters(), strict=True):
            expect(np.array_equal(arr(p.grad), arr(q.grad)), "1-process DDP changed a gradient")
    else:
        train(ddp, ref, torch.optim.SGD(model.parameters(), lr=0.1),
              torch.optim.SGD(ref.parameters(), lr=0.1), 1, seed=35)


@check
def no_sync_accumulation_equals_single_process():
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.5)
    k, per_rank = 3, 2
    for it in range(2):
        opt.zero_grad()
        ref_opt.zero_grad()
        local = copy.deepcopy(ref)  # this rank's micro-batches alone: what no_sync leaves
        for j in range(k):
            x, y = data(40 + 10 * it + j, per_rank * W)
            ctx = ddp.no_sync() if j < k - 1 else contextlib.nullcontext()
            with ctx:
                (F.mse_loss(ddp(mine(x, per_rank)), mine(y, per_rank)) / k).backward()
            (F.mse_loss(ref(x), y) / k).backward()
            if j < k - 1:
                (F.mse_loss(local(mine(x, per_rank)), mine(y, per_rank)) / k).backward()
                same_params(model, local, f"iteration {it}: local grads under no_sync, "
                                          f"micro-batch {j}", grads=True)
        same_params(model, ref, f"iteration {it}: accumulated gradients", grads=True)
        opt.step()
        ref_opt.step()
        same_params(model, ref, f"iteration {it}: parameters")


@check
def uneven_last_batch_with_sum_loss_scaled():
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    sizes = [[3] * W, [3] * W, [[5, 3, 4, 2][r % 4] for r in range(W)]]  # the last is uneven
    for step, rows in enumerate(sizes):
        n = sum(rows)
        x, y = data(50 + step, n)
        start = sum(rows[:R])
        xs, ys = x[start:start + rows[R]], y[start:start + rows[R]]
        opt.zero_grad()
        ((ddp(xs) - ys) ** 2).sum().mul(W / n).backward()  # DDP divides by W again
        ref_opt.zero_grad()
        ((ref(x) - y) ** 2).sum().div(n).backward()
        same_params(model, ref, f"step {step} (rows {rows}) gradients", grads=True)
        opt.step()
        ref_opt.step()
        same_params(model, ref, f"step {step} parameters")


@check
def distributed_sampler_epoch_equals_single_process():
    per_batch = 2
    n = W * per_batch * 3 - 1  # not a multiple of the world size: the sampler pads
    x, y = data(60, n)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=False)
    expect((sampler.num_replicas, sampler.rank) == (W, R), "sampler defaults from the group")
    loader = DataLoader(dataset, batch_size=per_batch, sampler=sampler)
    shares = [list(DistributedSampler(dataset, num_replicas=W, rank=r, shuffle=False))
              for r in range(W)]
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    steps = 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for i, (xb, yb) in enumerate(loader):
            rows = [j for share in shares for j in share[i * per_batch:(i + 1) * per_batch]]
            opt.zero_grad()
            F.mse_loss(ddp(xb), yb).backward()
            ref_opt.zero_grad()
            F.mse_loss(ref(x[rows]), y[rows]).backward()
            opt.step()
            ref_opt.step()
            same_params(model, ref, f"epoch {epoch} batch {i}")
            steps += 1
    expect(steps == 6, f"expected 3 batches per epoch, got {steps} in 2 epochs")


# --------------------------------------------------------------------------- buffers
def bn_first(seed: int) -> nn.Module:
    """BatchNorm before any weight, so its running stats depend on the inputs alone."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.BatchNorm1d(4), nn.Linear(4, 2)).to(F64)
    bn = model[0]
    bn.running_mean.fill_(float(seed))  # rank-local buffer values, to see what gets synced
    bn.running_var.fill_(1.0 + seed)
    bn.num_batches_tracked.fill_(10 + seed)
    return model


def bn_after(state: dict, x) -> dict:
    """BatchNorm buffers ``state`` after one training forward on ``x``."""
    bn = nn.BatchNorm1d(4).to(F64)
    bn.load_state_dict(state)
    bn(x)
    return {k: v.clone() for k, v in bn.state_dict().items()}


def bn_state(model: nn.Module) -> dict:
    return {k: v.clone() for k, v in model[0].state_dict().items()}


def same_buffers(model: nn.Module, expected: dict, what: str) -> None:
    for name, value in bn_state(model).items():
        if name == "num_batches_tracked":
            expect(value.item() == expected[name].item(),
                   f"{what}: num_batches_tracked {value.item()}, expected {expected[name].item()}")
        else:
            expect_close(value, expected[name], f"{what}: {name}")


def bn_ddp(**kwargs) -> tuple:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model = bn_first(R)
        ddp = DDP(model, **kwargs)
    return model, ddp, [w for w in seen if issubclass(w.category, FutureWarning)]


@check
def construction_syncs_rank0_params_and_buffers():
    model, _, seen = bn_ddp()
    expect(not seen, f"default construction warned: {[str(w.message) for w in seen]}")
    same_params(model, bn_first(0), "parameters")
    same_buffers(model, bn_state(bn_first(0)), "buffers")


@check
def forward_sync_buffers_broadcasts_rank0_buffers_each_forward():
    model, ddp, _ = bn_ddp()
    rank0 = bn_state(bn_first(0))
    for step in range(3):
        x, _ = data(70 + step, 2 * W)
        ddp(mine(x, 2)).sum().backward()
        same_buffers(model, bn_after(rank0, mine(x, 2)), f"step {step}")
        rank0 = bn_after(rank0, x[:2])


@check
def forward_sync_buffers_false_still_syncs_at_init():
    model, ddp, seen = bn_ddp(forward_sync_buffers=False)
    expect(not seen, f"forward_sync_buffers warned: {[str(w.message) for w in seen]}")
    expect(ddp.forward_sync_buffers is False and ddp.broadcast_buffers is False,
           "forward_sync_buffers=False: the attributes")
    mine_now = bn_state(bn_first(0))  # synced at init, as torch
    same_buffers(model, mine_now, "after construction")
    for step in range(2):
        x, _ = data(75 + step, 2 * W)
        ddp(mine(x, 2)).sum().backward()
        mine_now = bn_after(mine_now, mine(x, 2))  # then each rank's own
        same_buffers(model, mine_now, f"step {step}")


@check
def broadcast_buffers_false_warns_and_keeps_rank_local_buffers():
    model, ddp, seen = bn_ddp(broadcast_buffers=False)
    expect(len(seen) == 1, f"expected one FutureWarning, got {[str(w.message) for w in seen]}")
    MESSAGES["broadcast_buffers_warning"] = str(seen[0].message) if seen else ""
    expect(ddp.broadcast_buffers is False and ddp.forward_sync_buffers is False,
           "broadcast_buffers=False: the attributes")
    same_params(model, bn_first(0), "parameters are still synced")
    mine_now = bn_state(bn_first(R))  # buffers are not: torch's deprecated behaviour
    same_buffers(model, mine_now, "after construction")
    x, _ = data(78, 2 * W)
    ddp(mine(x, 2)).sum().backward()
    same_buffers(model, bn_after(mine_now, mine(x, 2)), "after a forward")
    _, ddp, seen = bn_ddp(broadcast_buffers=True, forward_sync_buffers=False)
    expect(len(seen) == 1, f"expected one FutureWarning, got {[str(w.message) for w in seen]}")
    MESSAGES["both_buffers_warning"] = str(seen[0].message) if seen else ""
    expect(ddp.forward_sync_buffers is False, "forward_sync_buffers wins over broadcast_buffers")


@check
def buffers_follow_torch_under_no_sync():
    """As torch: a forward under no_sync (or no_grad) skips the buffer sync of the forward
    after it, so of k micro-batches only the first starts from rank 0's buffers."""
    model, ddp, _ = bn_ddp()
    rank0 = here = bn_state(bn_first(0))  # rank 0's buffers are its own whatever is synced
    sync = True
    for it in range(2):
        for j in range(3):
            x, _ = data(80 + 3 * it + j, 2 * W)
            ctx = ddp.no_sync() if j < 2 else contextlib.nullcontext()
            with ctx:
                ddp(mine(x, 2)).sum().backward()
            here = bn_after(rank0 if sync else here, mine(x, 2))
            rank0 = bn_after(rank0, x[:2])
            same_buffers(model, here, f"iteration {it} micro-batch {j}")
            sync = j == 2


# --------------------------------------------------------------------------- unused params
class Branches(nn.Module):
    """``a`` always runs; ``b`` only where ``use_b``; ``c`` never."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.a = nn.Linear(4, 2).to(F64)
        self.b = nn.Linear(4, 2).to(F64)
        self.c = nn.Linear(4, 2).to(F64)

    def forward(self, x, use_b: bool = True):
        y = self.a(x)
        return y + self.b(x) if use_b else y


@check
def find_unused_parameters_branch_unused_everywhere():
    model, ref = Branches(R), Branches(0)
    ddp = DDP(model, find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    c_before = model.c.weight.detach().clone()
    for step in range(3):
        x, y = data(90 + step, 2 * W)
        opt.zero_grad()
        F.mse_loss(ddp(mine(x, 2)), mine(y, 2)).backward()
        ref_opt.zero_grad()
        F.mse_loss(ref(x), y).backward()
        expect(model.c.weight.grad is None and model.c.bias.grad is None,
               "a parameter unused on every rank must keep .grad None")
        same_params(model, ref, f"step {step} gradients", grads=True)
        opt.step()
        ref_opt.step()
    same_params(model, ref, "parameters")
    expect_close(model.c.weight, c_before, "the unused branch", 0.0)


@check
def find_unused_parameters_used_on_one_rank_gets_average():
    model, ref = Branches(R), Branches(0)
    ddp = DDP(model, find_unused_parameters=True)
    x, y = data(95, 2 * W)
    F.mse_loss(ddp(mine(x, 2), use_b=R == 0), mine(y, 2)).backward()
    # the average over ranks, the ranks that did not use ``b`` counting zeros (as torch)
    total = sum(F.mse_loss(ref(x[2 * r:2 * r + 2], use_b=r == 0), y[2 * r:2 * r + 2])
                for r in range(W))
    (total / W).backward()
    same_params(model, ref, "gradients", grads=True)
    expect(model.c.weight.grad is None, "c is unused everywhere")


@check
def unused_parameter_without_find_unused_raises_at_next_forward():
    model = Branches(R)
    ddp = DDP(model)
    x, y = data(97, 2 * W)
    F.mse_loss(ddp(mine(x, 2)), mine(y, 2)).backward()  # c unused: backward itself returns
    try:
        ddp(mine(x, 2))
    except RuntimeError as e:
        MESSAGES["unused_parameters_error"] = str(e)
        expect(str(e).startswith("Expected to have finished reduction in the prior "
                                 "iteration"), str(e))
        expect("find_unused_parameters=True" in str(e), str(e))
    else:
        expect(False, "the forward after an unused parameter did not raise")


@check
def autograd_grad_does_not_reduce():
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    x, y = data(100, 2 * W)
    loss = F.mse_loss(ddp(mine(x, 2)), mine(y, 2))
    grads = torch.autograd.grad(loss, list(model.parameters()))
    local = copy.deepcopy(ref)
    F.mse_loss(local(mine(x, 2)), mine(y, 2)).backward()
    for g, q in zip(grads, local.parameters(), strict=True):
        expect_close(g, q.grad, "autograd.grad gives this rank's own gradient")
    expect(all(p.grad is None for p in model.parameters()), "autograd.grad set .grad")
    opt, ref_opt = (torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, ref))
    train(ddp, ref, opt, ref_opt, 2, seed=101)  # the next training steps are reduced


# --------------------------------------------------------------------------- buckets, dtypes
@check
def bucket_sizes_give_identical_results():
    results = {}
    # the 400 x 400 float64 weight (1.28 MB) closes the first bucket (capped at 1 MiB)
    for label, kwargs, shape in [("one bucket", {"bucket_cap_mb": 100}, (8, 1)),
                                 ("a bucket per parameter", {"bucket_cap_mb": 1e-6}, (8, 1)),
                                 ("default caps, 1 MiB first bucket", {}, (400, 2))]:
        model, ref = (mlp(seed, F64, *shape) for seed in (R, 0))
        ddp = DDP(model, **kwargs)
        buckets = len(ddp._get_ddp_logging_data()["bucket_sizes"])
        expected = {"one bucket": 1, "a bucket per parameter": 4}.get(label, 2)
        expect(buckets == expected, f"{label}: {buckets} buckets, expected {expected}")
        train(ddp, ref, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
              torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9), 2, seed=110)
        results[label] = [arr(p) for p in model.parameters()]
    small, large = results["one bucket"], results["a bucket per parameter"]
    for a, b in zip(small, large, strict=True):
        expect(np.allclose(a, b, rtol=1e-13, atol=1e-13), "bucket sizes changed the result")


class Mixed(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.low = nn.Linear(4, 3).to(torch.float32)
        self.high = nn.Linear(3, 2).to(F64)

    def forward(self, x):
        return self.high(torch.tanh(self.low(x.float())).double())


@check
def mixed_float32_and_float64_parameters():
    for kwargs in ({}, {"bucket_cap_mb": 1e-6}):
        model, ref = Mixed(R), Mixed(0)
        ddp = DDP(model, **kwargs)
        expect(len(ddp._get_ddp_logging_data()["bucket_sizes"]) >= 2, "one dtype per bucket")
        train(ddp, ref, torch.optim.SGD(model.parameters(), lr=0.1),
              torch.optim.SGD(ref.parameters(), lr=0.1), 3, seed=120)
        expect((model.low.weight.grad.dtype, model.high.weight.grad.dtype) ==
               (torch.float32, F64), "each gradient keeps its parameter's dtype")


# --------------------------------------------------------------------------- state dicts
@check
def state_dict_prefix_and_rank0_checkpoint():
    model = mlp(R)
    ddp = DDP(model)
    expect(ddp.module is model, "ddp.module must be the wrapped module")
    keys = list(ddp.state_dict())
    expect(keys == [f"module.{k}" for k in model.state_dict()], f"state_dict keys {keys}")
    with_buffers = bn_first(R)
    keys = list(DDP(with_buffers).state_dict())
    expect(keys == [f"module.{k}" for k in with_buffers.state_dict()] and
           "module.0.running_mean" in keys, f"state_dict keys with buffers {keys}")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data(130, 2 * W)
    F.mse_loss(ddp(mine(x, 2)), mine(y, 2)).backward()
    opt.step()
    trained = [p.detach().clone() for p in model.parameters()]
    path = os.path.join(OUT, "checkpoint.pt")
    if R == 0:
        torch.save(ddp.module.state_dict(), path)
    dist.barrier()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(float(R + 1))  # each rank drifts differently before loading
    ddp.module.load_state_dict(torch.load(path, map_location="cpu"))
    for p, q in zip(model.parameters(), trained, strict=True):
        expect_close(p, q, "loaded checkpoint", 0.0)
    replicas_agree(model, "after loading")
    ddp.load_state_dict(ddp.state_dict())  # the prefixed form loads back into the wrapper
    fresh = mlp(50 + R)
    fresh.load_state_dict(torch.load(path, map_location="cpu"))
    same_params(fresh, model, "a fresh model from the checkpoint")
    dist.barrier()  # nobody removes the file while another rank reads it


# --------------------------------------------------------------------------- errors
def error_of(fn) -> list:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error is recorded for the test to judge
        return [type(e).__name__, str(e)]
    return ["no error", ""]


@check
def construction_errors():
    frozen = mlp(R)
    for p in frozen.parameters():
        p.requires_grad_(False)
    MESSAGES["no_trainable_parameters"] = error_of(lambda: DDP(frozen))
    MESSAGES["no_parameters"] = error_of(lambda: DDP(nn.ReLU()))
    MESSAGES["device_ids"] = error_of(lambda: DDP(mlp(R), device_ids=[0]))
    MESSAGES["output_device"] = error_of(lambda: DDP(mlp(R), output_device=1))
    MESSAGES["two_device_ids"] = error_of(lambda: DDP(mlp(R), device_ids=[0, 1]))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        DDP(mlp(R), check_reduction=True)
    MESSAGES["check_reduction_warning"] = [w.category.__name__ + ": " + str(w.message)
                                           for w in seen]
    for key in ("no_trainable_parameters", "no_parameters", "device_ids", "output_device",
                "two_device_ids"):
        expect(MESSAGES[key][0] != "no error", f"{key}: DDP did not raise")
    ddp = DDP(mlp(R))
    for name, call in [("join", ddp.join), ("register_comm_hook",
                                            lambda: ddp.register_comm_hook(None, None))]:
        kind = error_of(call)[0]
        expect(kind == "NotImplementedError", f"{name}: {kind}")


# --------------------------------------------------------------------------- process group
@check
def destroy_then_init_again():
    dist.destroy_process_group()
    expect(not dist.is_initialized(), "still initialized after destroy_process_group")
    expect(dist.group.WORLD is None and dist.GroupMember.WORLD is None,
           "group.WORLD and GroupMember.WORLD must be None after destroy_process_group")
    MESSAGES["ddp_without_process_group"] = error_of(lambda: DDP(mlp(R)))
    dist.init_process_group("gloo")
    expect((dist.get_world_size(), dist.get_rank()) == (W, R), "the layout after init again")
    model, ref = mlp(R), mlp(0)
    ddp = DDP(model)
    train(ddp, ref, torch.optim.SGD(model.parameters(), lr=0.1),
          torch.optim.SGD(ref.parameters(), lr=0.1), 1, seed=140)


# --------------------------------------------------------------------------- the job
def write(status: dict, finished: bool = False) -> None:
    path = os.path.join(OUT, f"rank{R}.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"world": W, "rank": R, "checks": status, "messages": MESSAGES,
                   "finished": finished}, f, indent=1)
    os.replace(path + ".tmp", path)


def crash_drill() -> None:
    """Rank 1 raises after two steps; the others go on into the next all-reduce."""
    model = mlp(R)
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1000):
        if R == 1 and step == 2:
            raise RuntimeError("rank 1 fails on purpose at step 2")
        x, y = data(step, 2 * W)
        opt.zero_grad()
        F.mse_loss(ddp(mine(x, 2)), mine(y, 2)).backward()
        opt.step()
    print("rank", R, "finished all steps: the job was not brought down", flush=True)


def main() -> None:
    global W, R, OUT
    OUT = sys.argv[1]
    dist.init_process_group("gloo")
    W, R = dist.get_world_size(), dist.get_rank()
    if sys.argv[2:] == ["crash"]:
        crash_drill()
        return
    status = {name: "pending" for name in CHECKS}
    write(status)
    for name, fn in CHECKS.items():
        status[name] = "running"
        write(status)
        FAILURES.clear()
        try:
            fn()
            status[name] = "ok" if not FAILURES else "\n".join(
                FAILURES[:5] + [f"... and {len(FAILURES) - 5} more"] * (len(FAILURES) > 5))
        except Exception:  # noqa: BLE001 - reported per check and rank
            status[name] = traceback.format_exc()[-3000:]
        if not all_arrive(CHECK_DEADLINE):
            status[name] += (f"\n(rank {R} waited {CHECK_DEADLINE} s after this check for ranks "
                             "that did not finish it, and aborted the job)")
            write(status)
            abort()
        write(status)
    dist.destroy_process_group()
    write(status, finished=True)


def all_arrive(seconds: float) -> bool:
    """Whether every rank reaches this point within ``seconds`` (a non-blocking barrier on
    MPI's world, which DDP's own communicator never uses)."""
    from mpi4py import MPI
    request = MPI.COMM_WORLD.Ibarrier()
    deadline = time.monotonic() + seconds
    while not request.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)
    return True


def abort() -> None:
    from mpi4py import MPI
    sys.stdout.flush()
    MPI.COMM_WORLD.Abort(3)


if __name__ == "__main__":
    main()
