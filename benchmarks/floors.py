"""Floors: the parts of the op-chain and LSTM workloads that no change to ember's own Python
can remove, timed against torch's whole figure.

The suite's LSTM targets are not met (``run_all.py``); op-overhead forward, met since
2026-11-26 (0.93-0.95), was the last of the others. This script measures what both workloads
are made of, in the same way for both libraries (fresh processes, alternating, threads pinned,
medians over processes of the best of several loops):

* **op chain** (``overhead.py``'s 333 x ``tanh(y * c1 + c2)`` + 1 multiply, 16 float32
  elements), µs per op: recorded (the suite's row), the same chain under ``no_grad`` (the op
  without its graph node), and recorded with Python's cyclic collector off (``gc.disable()``:
  its share of the recording). The recording's own cost is recorded minus ``no_grad``.
* **LSTM** (``lstm.py``'s ``nn.LSTM(64, 128)``, 50 steps of batch 32), ms: the whole forward
  under ``no_grad`` (the suite's row) and its matrix products alone, as each library runs
  them. ember: one product a step, ``[W_hh | W_ih | b] (512 x 193) @ [h; x_t; 1] (193 x 32)``
  with NumPy's ``matmul`` into a preallocated array, as ``ops/rnn.py`` does. torch: the input
  projection of all steps in one ``mm`` (1,600 x 64 by 64 x 512) and one ``mm`` a step
  (32 x 128 by 128 x 512), with ``out=``. Both are the same multiply-adds (plus ember's bias
  row); what a forward adds to its products is its gate arithmetic and bookkeeping.

Run:  python benchmarks/floors.py [--repeats 5] [--threads 1] [--quick] [--json out.json]
"""

from __future__ import annotations

from _harness import alternate, medians, row, run_child, standalone

CHILD = r"""
budget = float(args[0])
nn = importlib.import_module(torch.__name__ + ".nn")
rng = np.random.default_rng(0)
out = {}

# op chain (overhead.py's), µs per op
x0 = rng.standard_normal(16).astype(np.float32)
c1 = torch.tensor(rng.standard_normal(16).astype(np.float32))
c2 = torch.tensor(rng.standard_normal(16).astype(np.float32))


def chain():
    y = torch.tensor(x0, requires_grad=True)
    for _ in range(333):
        y = torch.tanh(y * c1 + c2)
    return y * c1


def chain_no_grad():
    with torch.no_grad():
        chain()


out["chain_recorded"] = best_of(chain, budget) / 1000
out["chain_no_grad"] = best_of(chain_no_grad, budget) / 1000
gc.disable()
out["chain_recorded_no_gc"] = best_of(chain, budget) / 1000
gc.enable()

# LSTM(64, 128), 50 steps x batch 32 (lstm.py's), ms
T, B, I, H = 50, 32, 64, 128
x = torch.tensor(rng.standard_normal((T, B, I)).astype(np.float32))
lstm = nn.LSTM(I, H)


def forward():
    with torch.no_grad():
        lstm(x)


out["lstm_forward"] = best_of(forward, budget) / 1000
if lib == "torch":
    xs = x.reshape(T * B, I)
    w_ih_t = torch.tensor(rng.standard_normal((I, 4 * H)).astype(np.float32))
    w_hh_t = torch.tensor(rng.standard_normal((H, 4 * H)).astype(np.float32))
    h = torch.tensor(rng.standard_normal((B, H)).astype(np.float32))
    proj, gates = torch.empty(T * B, 4 * H), torch.empty(B, 4 * H)

    def products():
        torch.mm(xs, w_ih_t, out=proj)
        for _ in range(T):
            torch.mm(h, w_hh_t, out=gates)
else:
    w = rng.standard_normal((4 * H, H + I + 1)).astype(np.float32)
    z = rng.standard_normal((H + I + 1, B)).astype(np.float32)
    gates = np.empty((4 * H, B), np.float32)

    def products():
        for _ in range(T):
            np.matmul(w, z, out=gates)

out["lstm_products"] = best_of(products, budget) / 1000
print(json.dumps(out))
"""


def collect(repeats: int = 5, threads: int = 1, quick: bool = False) -> dict:
    budget = 0.01 if quick else 0.1  # seconds per timed loop
    runs = alternate(lambda lib: run_child(CHILD, lib, threads, budget), repeats)
    med = medians(runs)
    rows = [
        row("chain_recorded", "op chain, forward, recorded (the suite's row)", "µs/op", med,
            "chain_recorded"),
        row("chain_no_grad", "op chain, forward, no_grad", "µs/op", med, "chain_no_grad"),
        row("chain_recorded_no_gc", "op chain, forward, recorded, gc disabled", "µs/op", med,
            "chain_recorded_no_gc"),
        row("lstm_forward", "LSTM forward, no_grad (the suite's row)", "ms", med,
            "lstm_forward"),
        row("lstm_products", "LSTM forward's matrix products alone", "ms", med,
            "lstm_products"),
    ]
    notes = []
    e, t = med.get("ember"), med.get("torch")
    if e and t:
        rec_e = e["chain_recorded"] - e["chain_no_grad"]
        rec_t = t["chain_recorded"] - t["chain_no_grad"]
        gc_e = e["chain_recorded"] - e["chain_recorded_no_gc"]
        notes.append(f"op chain: recording costs ember {rec_e:.2f} µs/op ({gc_e:.2f} of it the "
                     f"cyclic collector), torch {rec_t:.2f}; without it, ember's op is "
                     f"{e['chain_no_grad']:.2f} against torch's {t['chain_no_grad']:.2f}")
        notes.append(f"LSTM forward: ember's products alone take {e['lstm_products']:.2f} ms, "
                     f"{e['lstm_products'] / t['lstm_forward']:.2f} of torch's whole forward "
                     f"({t['lstm_forward']:.2f} ms; torch's own products as separate mm calls "
                     f"{t['lstm_products']:.2f}); ember's gate arithmetic and bookkeeping add "
                     f"{e['lstm_forward'] - e['lstm_products']:.2f} ms")
    return {
        "title": f"floors of the unmet targets, {threads} thread(s), median of {repeats} "
                 f"processes x best of 3 loops",
        "rows": rows,
        "notes": notes,
        "runs": runs,
    }


def main() -> None:
    standalone(__doc__, collect)


if __name__ == "__main__":
    main()
