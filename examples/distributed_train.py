"""Data-parallel training with DistributedDataParallel, written for PyTorch.

A plain PyTorch DDP script (``import torch``; the CPU backend ``gloo``): every process holds a
replica of a small MLP, reads its own share of a synthetic data set through a
``DistributedSampler`` (``set_epoch`` each epoch, so the shuffle changes), and backward averages
the gradients across the processes, so the replicas stay identical. Rank 0 logs the loss
averaged over the ranks and saves a checkpoint after every epoch; then every rank waits at a
barrier and reloads the checkpoint with ``map_location``, as one resumes a job. ``--resume``
starts from that checkpoint. Run it on ember with MPI (``pip install "ember[mpi]"``):

    mpiexec -n 2 python -m ember examples/distributed_train.py
    python -m ember.distributed.run --nproc-per-node 2 examples/distributed_train.py
    python -m ember examples/distributed_train.py          # one process: a world of one

and unchanged on PyTorch:

    torchrun --nproc-per-node 2 examples/distributed_train.py
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

FEATURES, CLASSES = 20, 4


def synthetic_data(n_train: int, n_test: int) -> tuple[TensorDataset, TensorDataset]:
    """The same data on every rank: points labelled by a random linear teacher, plus noise."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n_train + n_test, FEATURES, generator=g)
    teacher = torch.randn(FEATURES, CLASSES, generator=g)
    y = (x @ teacher + 0.5 * torch.randn(n_train + n_test, CLASSES, generator=g)).argmax(1)
    return TensorDataset(x[:n_train], y[:n_train]), TensorDataset(x[n_train:], y[n_train:])


def init_distributed() -> None:
    """Join the job's processes. torchrun (and ``python -m ember.distributed.run``) set RANK and
    WORLD_SIZE; under mpiexec ember takes them from MPI, and a lone process started by hand is
    a world of one (an MPI singleton). A lone process on PyTorch needs the env:// variables."""
    if "WORLD_SIZE" not in os.environ and not dist.is_mpi_available():
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", RANK="0",
                          WORLD_SIZE="1")
    dist.init_process_group("gloo")


def mean_over_ranks(*values: float) -> list[float]:
    """Each value averaged over the ranks (gloo has no ReduceOp.AVG: sum, then divide)."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return (t / dist.get_world_size()).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--samples", type=int, default=8192, help="training samples")
    parser.add_argument("--checkpoint", default=os.path.join(tempfile.gettempdir(),
                                                             "distributed_train.pt"))
    parser.add_argument("--resume", action="store_true", help="start from --checkpoint")
    parser.add_argument("--fast", action="store_true", help="3 epochs of 2,048 samples")
    args = parser.parse_args()
    if args.fast:
        args.epochs, args.samples = 3, 2048

    init_distributed()
    rank, world = dist.get_rank(), dist.get_world_size()
    train_set, test_set = synthetic_data(args.samples, 1024)
    sampler = DistributedSampler(train_set, shuffle=True, seed=0)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, CLASSES))
    state = None
    if args.resume and os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint, map_location="cpu")
        model.load_state_dict(state["model"])
    ddp = DDP(model)  # the replicas start from rank 0's weights
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    start_epoch = 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        start_epoch = state["epoch"] + 1
    if rank == 0:
        print(f"{world} rank(s), {len(train_set)} samples, batch {args.batch_size} per rank "
              f"({args.batch_size * world} in all), {len(loader)} steps per epoch")

    first = last = None
    started = time.perf_counter()
    for epoch in range(start_epoch, start_epoch + args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        ddp.train()
        total, count = 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()  # gradients are averaged over the ranks before this returns
            optimizer.step()
            total, count = total + loss.item() * len(y), count + len(y)
        epoch_loss, = mean_over_ranks(total / count)
        first = epoch_loss if first is None else first
        last = epoch_loss
        if rank == 0:
            print(f"epoch {epoch}: loss {epoch_loss:.4f}")
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "epoch": epoch}, args.checkpoint)
        dist.barrier()  # the checkpoint is written before any rank reads it

    # every rank reloads rank 0's checkpoint, as a resumed job would
    state = torch.load(args.checkpoint, map_location="cpu")
    same = all(torch.equal(state["model"][k], v) for k, v in model.state_dict().items())
    all_same, = mean_over_ranks(float(same))

    # accuracy on the test set, each rank scoring its share
    ddp.eval()
    test_loader = DataLoader(test_set, batch_size=256,
                             sampler=DistributedSampler(test_set, shuffle=False))
    correct = seen = 0
    with torch.no_grad():
        for x, y in test_loader:
            correct += (ddp(x).argmax(1) == y).sum().item()
            seen += len(y)
    accuracy, = mean_over_ranks(correct / seen)
    if rank == 0:
        print(f"loss fell from {first:.4f} to {last:.4f} in {time.perf_counter() - started:.1f} s")
        print(f"every rank reloaded the checkpoint: {all_same == 1.0}")
        print(f"test accuracy {100 * accuracy:.1f}%")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
