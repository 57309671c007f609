"""``ember.compile`` (``torch.compile``): a compiled call gives eager's numbers, bit for bit.

Each test runs the same program twice from the same seed, once eagerly and once compiled, for
enough calls that the compiled one replays its capture (the first call of a signature runs
eagerly, the second captures, the rest replay), and compares everything the program leaves
behind: outputs, parameters, ``.grad``, buffers, optimizer state, the random stream. Then the
guards (what makes a capture stale), every kind of graph break, ``fullgraph``, ``explain``,
and a training loop against PyTorch itself.
"""

from __future__ import annotations

import inspect
import io
import re
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember._dynamo.exc import Unsupported

STEPS = 5  # calls per run: 1 eager warm-up, 1 capture, 3 replays


@pytest.fixture(autouse=True)
def _fresh_captures():
    """No capture leaks from one test into the next."""
    yield
    ember.compiler.reset()


def _line_of(marker: str) -> str:
    """``file:line`` of the line of this file that contains ``marker`` (a comment), as a
    graph break's ``where`` reports it."""
    src = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    hits = [k for k, ln in enumerate(src, 1) if marker in ln and "_line_of(" not in ln]
    assert len(hits) == 1, marker
    return f"{__file__}:{hits[0]}"


def _arr(t) -> np.ndarray:
    return t.detach().numpy()


def assert_bitwise(a, b, path: str = "") -> None:
    """``a`` and ``b`` equal bit for bit: tensors (value, dtype, shape), and containers of them."""
    if isinstance(a, ember.Tensor):
        assert isinstance(b, ember.Tensor), path
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(_arr(a), _arr(b), equal_nan=True), (
            f"{path}: differ by {np.abs(_arr(a).astype(float) - _arr(b).astype(float)).max()}")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for k in a:
            assert_bitwise(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            assert_bitwise(x, y, f"{path}[{k}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def assert_same_training_state(m1, m2, o1=None, o2=None) -> None:
    """Two copies of a model (and optimizer) ended in exactly the same state: parameters,
    ``.grad``, buffers, ``state_dict``, optimizer ``state_dict``. Every mismatch is listed."""
    problems = []

    def check(a, b, path):
        try:
            assert_bitwise(a, b, path)
        except AssertionError as e:
            problems.append(str(e).splitlines()[0])

    for (n, p), (_, q) in zip(m1.named_parameters(), m2.named_parameters()):
        check(p, q, n)
        if (p.grad is None) != (q.grad is None):
            problems.append(f"{n}.grad: {p.grad} vs {q.grad}")
        elif p.grad is not None:
            check(p.grad, q.grad, f"{n}.grad")
    for (n, b), (_, c) in zip(m1.named_buffers(), m2.named_buffers()):
        check(b, c, n)
    check(m1.state_dict(), m2.state_dict(), "state_dict")
    if o1 is not None:
        check(o1.state_dict(), o2.state_dict(), "optimizer")
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- models and data
class MLP(nn.Module):
    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc2(self.drop(ember.tanh(self.fc1(x))))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x):
        return self.fc(self.pool(ember.relu(self.bn(self.conv(x)))).flatten(1))


class RNN(nn.Module):
    def __init__(self, cell: str = "LSTM") -> None:
        super().__init__()
        self.rnn = getattr(nn, cell)(4, 5, batch_first=True)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


MODELS = {
    "mlp": (MLP, (8, 6)),
    "cnn": (CNN, (4, 2, 6, 6)),
    "lstm": (lambda: RNN("LSTM"), (3, 4, 4)),
    "gru": (lambda: RNN("GRU"), (3, 4, 4)),
    "dropout": (lambda: MLP(0.3), (8, 6)),
}

OPTIMIZERS = {
    "sgd": lambda p: ember.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
    "sgd_weight_decay": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.5, weight_decay=1e-2),
    "adam": lambda p: ember.optim.Adam(p, lr=1e-2),
    "adam_amsgrad": lambda p: ember.optim.Adam(p, lr=1e-2, amsgrad=True, weight_decay=1e-3),
    "adamw": lambda p: ember.optim.AdamW(p, lr=1e-2),
    "rmsprop": lambda p: ember.optim.RMSprop(p, lr=1e-2),
    "rmsprop_centered": lambda p: ember.optim.RMSprop(p, lr=1e-2, momentum=0.5, centered=True),
    "adagrad": lambda p: ember.optim.Adagrad(p, lr=0.1),
    "nadam": lambda p: ember.optim.NAdam(p, lr=1e-2),
    "radam": lambda p: ember.optim.RAdam(p, lr=1e-2),
    "adamax": lambda p: ember.optim.Adamax(p, lr=1e-2),
    "adadelta": lambda p: ember.optim.Adadelta(p, lr=1.0),
}


def make(model: str = "mlp", optimizer: str | None = "sgd", seed: int = 0):
    """A freshly seeded model (and optimizer): two calls give identical copies."""
    ember.manual_seed(seed)
    m = MODELS[model][0]()
    o = OPTIMIZERS[optimizer](m.parameters()) if optimizer else None
    return m, o


def batches(model: str = "mlp", n: int = STEPS, seed: int = 123):
    """``n`` (input, class label) batches for ``model``, the same on every call."""
    g = ember.Generator().manual_seed(seed)
    shape = MODELS[model][1]
    return [(ember.randn(*shape, generator=g), ember.randint(0, 3, (shape[0],), generator=g))
            for _ in range(n)]


def train_step(m, o):
    """The whole step, as a function to compile: forward, backward, update."""

    def step(x, y):
        o.zero_grad()
        loss = nn.functional.cross_entropy(m(x), y)
        loss.backward()
        o.step()
        return loss

    return step


def run_steps(step, data):
    return [step(x, y).detach() for x, y in data]


# ---------------------------------------------------------------------- 1. whole-step capture
@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_whole_step_matches_eager_bitwise_for_each_optimizer(optimizer):
    data = batches("mlp")
    m1, o1 = make("mlp", optimizer)
    eager = run_steps(train_step(m1, o1), data)
    m2, o2 = make("mlp", optimizer)
    step = ember.compile(train_step(m2, o2))
    compiled = run_steps(step, data)
    if optimizer == "radam":
        # RAdam's update branches in Python on its step count (rho_t > 5): a graph break,
        # and the modules of the step are compiled on their own
        assert [b.reason for b in step.breaks] == [
            "Python control flow on a value computed from tensors (>)"], step.breaks
        assert step.children and all(c.stats.replays for c in step.children.values())
    else:
        assert step.stats.replays >= STEPS - 2 and step.stats.captures == 1, step.stats
    assert_bitwise(compiled, eager, "losses")
    assert_same_training_state(m2, m1, o2, o1)


@pytest.mark.parametrize("model", ["cnn", "lstm", "gru", "dropout"])
@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_whole_step_matches_eager_bitwise_for_each_model(model, optimizer):
    data = batches(model)
    m1, o1 = make(model, optimizer)
    eager = run_steps(train_step(m1, o1), data)
    after_eager = ember.rand(4)  # the random stream after the run (dropout draws from it)
    m2, o2 = make(model, optimizer)
    step = ember.compile(train_step(m2, o2))
    compiled = run_steps(step, data)
    after_compiled = ember.rand(4)
    assert step.stats.replays >= STEPS - 2, step.stats
    assert_bitwise(compiled, eager, "losses")
    assert_same_training_state(m2, m1, o2, o1)
    assert_bitwise(after_compiled, after_eager, "next random draw")


def test_dropout_draws_eagers_masks_on_every_replay():
    x = batches("dropout", 1)[0][0]
    outs = {}
    for compile_it in (False, True):
        m, _ = make("dropout", None)
        f = ember.compile(lambda x, m=m: m(x)) if compile_it else m
        with ember.no_grad():
            outs[compile_it] = [f(x) for _ in range(5)]
    assert f.stats.replays >= 3
    assert_bitwise(outs[True], outs[False])
    assert not np.array_equal(_arr(outs[True][3]), _arr(outs[True][4]))  # a new mask each


def test_whole_step_batchnorm_buffers_and_rng_state_follow_eager():
    data = batches("cnn")
    m1, o1 = make("cnn", "sgd")
    run_steps(train_step(m1, o1), data)
    state1 = ember.get_rng_state()
    m2, o2 = make("cnn", "sgd")
    step = ember.compile(train_step(m2, o2))
    run_steps(step, data)
    assert step.stats.replays > 0
    assert m2.bn.num_batches_tracked.item() == STEPS
    assert_bitwise(m2.bn.running_mean, m1.bn.running_mean)
    assert_bitwise(m2.bn.running_var, m1.bn.running_var)
    assert_bitwise(ember.get_rng_state(), state1)


def test_whole_step_with_a_lazy_module_matches_eager():
    """The first call of a compiled module runs eagerly: it materializes lazy parameters, and
    the optimizer is then made over the real ones."""
    data = batches("mlp")
    runs = []
    for compile_it in (False, True):
        ember.manual_seed(0)
        m = nn.Sequential(nn.LazyLinear(5), nn.ReLU(), nn.Linear(5, 3))
        with ember.no_grad():  # materialize (through the compiled module), then the optimizer
            (ember.compile(m) if compile_it else m)(data[0][0])
        assert m[0].weight.shape == (5, 6)
        o = ember.optim.Adam(m.parameters(), lr=1e-2)
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        runs.append((run_steps(f, data), m, o, f))
    (l1, m1, o1, _), (l2, m2, o2, f) = runs
    assert f.stats.replays >= STEPS - 2
    assert_bitwise(l2, l1)
    assert_same_training_state(m2, m1, o2, o1)


def test_compile_as_a_decorator_with_options():
    m, o = make("mlp", "sgd_nesterov")

    @ember.compile(fullgraph=False, mode="reduce-overhead")
    def step(x, y):
        return train_step(m, o)(x, y)

    m1, o1 = make("mlp", "sgd_nesterov")
    eager = run_steps(train_step(m1, o1), batches("mlp"))
    assert_bitwise(run_steps(step, batches("mlp")), eager)
    assert step.stats.replays >= STEPS - 2
    assert step.__name__ == "step"  # functools.wraps, as torch's


def test_whole_step_with_set_to_none_false_and_grad_clipping():
    data = batches("mlp")

    def step_of(m, o):
        def step(x, y):
            o.zero_grad(set_to_none=False)
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 0.05)
            o.step()
            return loss
        return step

    m1, o1 = make("mlp", "adam")
    eager = run_steps(step_of(m1, o1), data)
    m2, o2 = make("mlp", "adam")
    step = ember.compile(step_of(m2, o2))
    compiled = run_steps(step, data)
    assert step.stats.replays > 0
    assert_bitwise(compiled, eager)
    assert_same_training_state(m2, m1, o2, o1)


def test_whole_step_with_lr_scheduler_stepped_inside():
    data = batches("mlp", 7)

    def step_of(m, o, s):
        def step(x, y):
            o.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            s.step()
            return loss
        return step

    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "sgd_momentum")
        s = ember.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
        f = step_of(m, o, s)
        f = ember.compile(f) if compile_it else f
        runs.append((run_steps(f, data), m, o, s))
    (l1, m1, o1, s1), (l2, m2, o2, s2) = runs
    assert_bitwise(l2, l1)
    assert_same_training_state(m2, m1, o2, o1)
    assert s2.state_dict() == s1.state_dict()
    assert o2.param_groups[0]["lr"] == o1.param_groups[0]["lr"]


# ----------------------------------------------------- 2. compiled forward, eager backward/step
def eager_loop(m, o, data, *, compiled_model=None):
    """The usual loop: forward (through ``compiled_model`` if given), loss, eager backward and
    step."""
    fwd = compiled_model if compiled_model is not None else m
    losses = []
    for x, y in data:
        o.zero_grad()
        loss = nn.functional.cross_entropy(fwd(x), y)
        loss.backward()
        o.step()
        losses.append(loss.detach())
    return losses


@pytest.mark.parametrize("model", ["mlp", "cnn", "lstm", "dropout"])
def test_compiled_module_in_eager_training_loop_matches_eager(model):
    data = batches(model)
    m1, o1 = make(model, "adam")
    eager = eager_loop(m1, o1, data)
    after_eager = ember.rand(3)
    m2, o2 = make(model, "adam")
    cm = ember.compile(m2)
    compiled = eager_loop(m2, o2, data, compiled_model=cm)
    after_compiled = ember.rand(3)
    assert cm._compiled.stats.replays >= STEPS - 2, cm._compiled.stats
    assert_bitwise(compiled, eager, "losses")
    assert_same_training_state(m2, m1, o2, o1)
    assert_bitwise(after_compiled, after_eager, "next random draw")


def test_compiled_module_is_an_optimized_module_around_the_original():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    assert type(cm).__name__ == "OptimizedModule" and cm._orig_mod is m
    assert list(cm.state_dict()) == [f"_orig_mod.{k}" for k in m.state_dict()]
    assert cm.fc1 is m.fc1
    assert [p is q for p, q in zip(cm.parameters(), m.parameters())] == [True] * 4


def test_replayed_forward_output_comes_from_compiled_function_backward():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    x = batches("mlp", 1)[0][0]
    outs = [cm(x) for _ in range(3)]
    assert cm._compiled.stats.replays >= 1
    assert type(outs[-1].grad_fn).__name__ == "CompiledFunctionBackward"
    assert outs[-1].requires_grad
    assert_bitwise(outs[-1], m(x))


def test_compiled_forward_gives_inputs_that_require_grad_their_grad():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    x0 = batches("mlp", 1)[0][0]
    for _ in range(3):
        xc = x0.clone().requires_grad_()
        (cm(xc) ** 2).sum().backward()
    xe = x0.clone().requires_grad_()
    m.zero_grad()
    (m(xe) ** 2).sum().backward()
    ge = [p.grad.clone() for p in m.parameters()]
    assert cm._compiled.stats.replays >= 1
    assert xc.grad is not None
    assert_bitwise(xc.grad, xe.grad, "input grad")
    m.zero_grad()
    xc = x0.clone().requires_grad_()
    (cm(xc) ** 2).sum().backward()
    assert_bitwise([p.grad for p in m.parameters()], ge, "param grads")


def test_compiled_forward_backward_with_retain_graph_twice():
    m1, _ = make("mlp", None)
    m2, _ = make("mlp", None)
    cm = ember.compile(m2)
    x = batches("mlp", 1)[0][0]
    for _ in range(2):
        cm(x)  # warm-up and capture: the next call replays
    for mod in (m1, cm):
        out = mod(x).sum()
        out.backward(retain_graph=True)
        out.backward()
    assert cm._compiled.stats.replays >= 1
    assert_same_training_state(m2, m1)


def test_compiled_forward_gradient_accumulation_over_two_forwards():
    data = batches("mlp", 6)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "sgd_momentum")
        fwd = ember.compile(m) if compile_it else m
        for k in range(0, 6, 2):
            o.zero_grad()
            loss = sum(nn.functional.cross_entropy(fwd(x), y) for x, y in data[k:k + 2])
            loss.backward()
            o.step()
        runs.append((m, o, fwd))
    (m1, o1, _), (m2, o2, cm) = runs
    assert cm._compiled.stats.replays >= 3
    assert_same_training_state(m2, m1, o2, o1)


@pytest.mark.parametrize("mode", ["no_grad_eval", "no_grad_train", "inference_mode"])
def test_compiled_forward_without_grad_returns_plain_tensors(mode):
    m, _ = make("dropout" if mode != "no_grad_train" else "mlp", None)
    cm = ember.compile(m)
    x = batches("mlp", 1)[0][0]
    cm(x)
    cm(x)  # a training-mode capture first: the modes below are other signatures
    if mode != "no_grad_train":
        m.eval()
    ctx = ember.inference_mode() if mode == "inference_mode" else ember.no_grad()
    with ctx:
        outs = [cm(x) for _ in range(3)]
        expected = m(x)
    assert cm._compiled.stats.replays >= 1
    for out in outs:
        assert out.grad_fn is None and not out.requires_grad
        assert_bitwise(out, expected)


def test_eval_mode_forward_with_grad_enabled_is_deterministic_and_differentiable():
    m, _ = make("dropout", None)
    m.eval()
    cm = ember.compile(m)
    x = batches("dropout", 1)[0][0]
    outs = [cm(x) for _ in range(4)]
    for out in outs:
        assert_bitwise(out, m(x))
    outs[-1].sum().backward()
    assert m.fc1.weight.grad is not None


def test_compiled_forward_double_backward_raises():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    x = batches("mlp", 1)[0][0].requires_grad_()
    for _ in range(2):
        cm(x)
    out = cm(x).pow(2).sum()
    assert type(cm(x).grad_fn).__name__ == "CompiledFunctionBackward"
    # as torch's (aot_autograd's DelayedError): the first backward works, even with
    # create_graph=True, and only differentiating its result raises
    (gx,) = ember.autograd.grad(out, x, create_graph=True)
    (ge,) = ember.autograd.grad(m(x).pow(2).sum(), x)
    assert_bitwise(gx, ge)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        gx.sum().backward()


# ------------------------------------------------------------------- 3. guards and recapture
def _counting(fn):
    """``fn`` compiled, with its ``Compiled`` (for stats)."""
    c = ember.compile(fn)
    return c, c.stats


def test_new_input_shape_is_a_new_capture_with_right_numbers():
    m, _ = make("mlp", None)
    f, stats = _counting(lambda x: m(x).tanh().sum(1))
    g = ember.Generator().manual_seed(0)
    with ember.no_grad():
        for n in (4, 4, 4, 7, 7, 7, 4):
            x = ember.randn(n, 6, generator=g)
            assert_bitwise(f(x), m(x).tanh().sum(1))
    assert stats.captures == 2 and stats.replays == 3, stats


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_new_input_dtype_is_a_new_capture_with_right_numbers(dtype):
    def fn(x, w):
        return (x * w).sin().sum(0) + x.mean()

    f, stats = _counting(fn)
    w = ember.randn(5)
    x32 = ember.randn(3, 5)
    other = x32.to(getattr(ember, dtype))
    for x in (x32, x32, x32, other, other, other):
        out = f(x, w)
        assert out.dtype == fn(x, w).dtype
        assert_bitwise(out, fn(x, w))
    assert stats.captures == 2 and stats.replays == 2, stats


def test_requires_grad_change_of_input_is_a_new_signature():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    x0 = batches("mlp", 1)[0][0]
    for _ in range(3):
        cm(x0)
    x = x0.clone().requires_grad_()
    for _ in range(3):
        x.grad = None
        cm(x).sum().backward()
    assert cm._compiled.stats.captures == 2, cm._compiled.stats
    xe = x0.clone().requires_grad_()
    m(xe).sum().backward()
    assert_bitwise(x.grad, xe.grad)


def test_requires_grad_change_of_a_parameter_recaptures():
    data = batches("mlp", 8)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "sgd")
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        for k, (x, y) in enumerate(data):
            if k == 4:
                m.fc1.weight.requires_grad_(False)  # freeze: no .grad, no update
                m.fc1.weight.grad = None
            f(x, y)
        runs.append((m, o, f))
    (m1, o1, _), (m2, o2, f) = runs
    assert f.stats.recaptures >= 1 and f.stats.replays >= 2, f.stats
    assert_same_training_state(m2, m1, o2, o1)


def test_train_eval_switch_recaptures_and_matches_eager():
    x = batches("dropout", 1)[0][0]
    outs = {}
    for compile_it in (False, True):
        m, _ = make("dropout", None)
        cm = ember.compile(m) if compile_it else m
        seq = []
        with ember.no_grad():
            for mode in ("train",) * 3 + ("eval",) * 3 + ("train",) * 2 + ("eval",) * 2:
                getattr(m, mode)()
                seq.append(cm(x))
        outs[compile_it] = seq
    assert_bitwise(outs[True], outs[False])
    assert_bitwise(outs[True][3], outs[True][9])  # eval is deterministic
    stats = cm._compiled.stats
    assert stats.replays >= 5 and stats.captures >= 2, stats


def test_train_eval_switch_of_submodule_only_is_guarded():
    x = batches("dropout", 1)[0][0]
    outs = {}
    for compile_it in (False, True):
        m, _ = make("dropout", None)
        cm = ember.compile(m) if compile_it else m
        seq = []
        with ember.no_grad():
            for k in range(8):
                m.drop.train(k < 4)  # only the Dropout child flips
                seq.append(cm(x))
        outs[compile_it] = seq
    assert_bitwise(outs[True], outs[False])


@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_lr_change_between_steps_recaptures_and_matches_eager(optimizer):
    data = batches("mlp", 9)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", optimizer)
        sched = ember.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.3)
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        losses = []
        for x, y in data:
            losses.append(f(x, y).detach())
            sched.step()  # outside the compiled step: a guard on lr
        runs.append((losses, m, o, f))
    (l1, m1, o1, _), (l2, m2, o2, f) = runs
    assert f.stats.recaptures >= 1 and f.stats.replays >= 3, f.stats
    assert_bitwise(l2, l1, "losses")
    assert_same_training_state(m2, m1, o2, o1)


def test_hyperparameter_set_by_hand_recaptures():
    data = batches("mlp", 8)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "adam")
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        for k, (x, y) in enumerate(data):
            if k == 4:
                o.param_groups[0]["betas"] = (0.5, 0.9)
                o.param_groups[0]["weight_decay"] = 0.1
            f(x, y)
        runs.append((m, o, f))
    (m1, o1, _), (m2, o2, f) = runs
    assert f.stats.recaptures >= 1, f.stats
    assert_same_training_state(m2, m1, o2, o1)


def test_parameter_data_replaced_recaptures_and_uses_the_new_data():
    data = batches("mlp", 8)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "sgd")
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        for k, (x, y) in enumerate(data):
            if k == 4:
                m.fc2.weight.data = ember.full_like(m.fc2.weight, 0.01)
            f(x, y)
        runs.append((m, o, f))
    (m1, o1, _), (m2, o2, f) = runs
    assert f.stats.recaptures >= 1, f.stats
    assert_same_training_state(m2, m1, o2, o1)


def test_load_state_dict_between_calls_is_seen():
    m, _ = make("mlp", None)
    other, _ = make("mlp", None, seed=5)
    cm = ember.compile(m)
    x = batches("mlp", 1)[0][0]
    with ember.no_grad():
        for _ in range(3):
            cm(x)
        m.load_state_dict(other.state_dict())
        for _ in range(3):
            assert_bitwise(cm(x), other(x))


def test_in_place_parameter_change_between_calls_is_seen():
    m, _ = make("mlp", None)
    cm = ember.compile(m)
    x = batches("mlp", 1)[0][0]
    with ember.no_grad():
        for k in range(6):
            m.fc1.bias.add_(0.5)  # same array, new values: read at replay
            assert_bitwise(cm(x), m(x))
    assert cm._compiled.stats.replays >= 3


def test_python_scalar_argument_is_part_of_the_signature():
    def fn(x, scale, flip):
        y = x * scale
        return -y if flip else y.exp()

    f, stats = _counting(fn)
    x = ember.randn(4)
    for scale, flip in [(2.0, False)] * 3 + [(3.0, False)] * 3 + [(2.0, True)] * 3 \
            + [(2.0, False)]:
        assert_bitwise(f(x, scale, flip), fn(x, scale, flip))
    assert stats.captures == 3 and stats.replays == 4, stats


def test_recompile_limit_warns_and_stays_correct():
    data = batches("mlp", 9)
    runs = []
    for compile_it in (False, True):
        m, o = make("mlp", "sgd")
        step = train_step(m, o)
        f = ember.compile(step, recompile_limit=2) if compile_it else step
        losses = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for k, (x, y) in enumerate(data):
                o.param_groups[0]["lr"] = 0.1 / (k + 1)  # a guard fails every call
                losses.append(f(x, y).detach())
        runs.append((losses, m, o, f, caught))
    (l1, m1, o1, _, _), (l2, m2, o2, f, caught) = runs
    limit = [w for w in caught if "recompile limit" in str(w.message)]
    assert len(limit) == 1, [str(w.message) for w in caught]
    assert f.stats.captures == 2 and f.stats.eager_calls >= 5, f.stats
    assert_bitwise(l2, l1)
    assert_same_training_state(m2, m1, o2, o1)


def test_recompile_limit_comes_from_dynamo_config(monkeypatch):
    monkeypatch.setattr(ember._dynamo.config, "recompile_limit", 1)
    x = ember.ones(2)
    w = ember.ones(2)
    f = ember.compile(lambda x: x * w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(5):
            w.data = ember.full((2,), float(k))  # a new array: a guard fails
            assert_bitwise(f(x), x * w)
    assert any("recompile limit (1)" in str(c.message) for c in caught)


# ------------------------------------------------------------------------- 4. graph breaks
# Each case is a whole training step with a Python side effect (``log``) at a graph break; the
# line of the break carries a ``BREAK:<kind>`` marker that the reported ``where`` must name.
# The loss takes one-hot targets: ``cross_entropy``'s own argument checks are tested apart.
def _soft_ce(out, target):
    return -(out.log_softmax(1) * target).sum(1).mean()


@ember.compiler.disable
def _log_eagerly(log, loss):
    log.append(loss.detach().clone())


def _step_item(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    log.append(loss.item())  # BREAK:item
    loss.backward()
    o.step()
    return loss


def _step_float(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    loss.backward()
    o.step()
    log.append(float(loss))  # BREAK:float
    return loss


def _step_tolist(m, o, x, y, log):
    o.zero_grad()
    out = m(x)
    log.append(out.argmax(1).tolist())  # BREAK:tolist
    loss = _soft_ce(out, y)
    loss.backward()
    o.step()
    return loss


def _step_numpy(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    loss.backward()
    log.append(m.fc1.weight.grad.numpy().copy())  # BREAK:numpy
    o.step()
    return loss


def _step_print(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    print("loss", loss, file=log.stream)  # BREAK:print
    log.append(1)
    loss.backward()
    o.step()
    return loss


def _step_bool_after_update(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    loss.backward()
    o.step()
    if (m.fc2.bias.abs().sum() > 0):  # BREAK:bool
        log.append("nonzero")
    else:
        log.append("zero")
    return loss


def _step_forward_hook(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)  # BREAK:forward_hook
    loss.backward()
    o.step()
    return loss


def _step_backward_hook(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)  # BREAK:backward_hook
    loss.backward()
    o.step()
    return loss


def _step_tensor_hook(m, o, x, y, log):
    o.zero_grad()
    h = m.fc1(x)
    h.register_hook(lambda g: log.append(g.clone()))
    loss = _soft_ce(m.fc2(m.drop(h.tanh())), y)
    loss.backward()  # BREAK:tensor_hook
    o.step()
    return loss


def _step_post_accumulate_hook(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    loss.backward()  # BREAK:post_accumulate_hook
    o.step()
    return loss


def _step_disable(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    _log_eagerly(log, loss)  # BREAK:disable
    loss.backward()
    o.step()
    return loss


def _step_graph_break(m, o, x, y, log):
    o.zero_grad()
    loss = _soft_ce(m(x), y)
    log.append(1)
    ember._dynamo.graph_break()  # BREAK:graph_break
    loss.backward()
    o.step()
    return loss


def _no_setup(m, log):
    pass


def _forward_hook(m, log):
    m.register_forward_hook(lambda mod, inp, out: log.append(out.detach().clone()))


def _backward_hook(m, log):
    m.register_full_backward_hook(lambda mod, gin, gout: log.append(gout[0].clone()))


def _post_accumulate_hook(m, log):
    m.fc1.weight.register_post_accumulate_grad_hook(lambda p: log.append(p.grad.clone()))


BREAKS = {  # kind: (step, setup, the reason's words: a regular expression)
    "item": (_step_item, _no_setup, r"item\(\)"),
    "float": (_step_float, _no_setup, r"Python value"),
    "tolist": (_step_tolist, _no_setup, r"tolist\(\)"),
    "numpy": (_step_numpy, _no_setup, r"numpy"),
    "print": (_step_print, _no_setup, r"Python value|bool\(\)"),
    "bool": (_step_bool_after_update, _no_setup, r"control flow on a value computed from tensors"),
    "forward_hook": (_step_forward_hook, _forward_hook, r"hook on MLP"),
    "backward_hook": (_step_backward_hook, _backward_hook, r"hook on MLP"),
    "tensor_hook": (_step_tensor_hook, _no_setup, r"Tensor.register_hook"),
    "post_accumulate_hook": (_step_post_accumulate_hook, _post_accumulate_hook,
                             r"post-accumulate-grad hook"),
    "disable": (_step_disable, _no_setup, r"torch.compiler.disable \(_log_eagerly\)"),
    "graph_break": (_step_graph_break, _no_setup, r"graph_break\(\)"),
}


class _Log(list):
    """A list for a step's side effects, with a text stream for what it prints."""

    def __init__(self) -> None:
        super().__init__()
        self.stream = io.StringIO()


def soft_batches(n: int = STEPS):
    """``batches("mlp")`` with one-hot float targets."""
    return [(x, nn.functional.one_hot(y, 3).float()) for x, y in batches("mlp", n)]


def _run_break_case(kind: str, compile_it: bool, n: int = STEPS, **compile_kwargs):
    body, setup, _ = BREAKS[kind]
    m, o = make("mlp", "adam")
    log = _Log()
    setup(m, log)

    def step(x, y):
        return body(m, o, x, y, log)

    f = ember.compile(step, **compile_kwargs) if compile_it else step
    losses = run_steps(f, soft_batches(n))
    return losses, m, o, log, f


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_graph_break_keeps_eager_results_and_side_effects(kind):
    l1, m1, o1, log1, _ = _run_break_case(kind, False)
    l2, m2, o2, log2, f = _run_break_case(kind, True)
    assert_bitwise(l2, l1, "losses")
    assert_same_training_state(m2, m1, o2, o1)
    assert len(log2) == len(log1) >= STEPS  # the side effect happened on every call
    for a, b in zip(log1, log2):
        if isinstance(a, ember.Tensor):
            assert_bitwise(b, a, "logged")
        elif isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
        else:
            assert a == b
    assert log2.stream.getvalue() == log1.stream.getvalue()
    assert f.breaks, f"no graph break recorded for {kind}"
    brk = f.breaks[0]
    assert re.search(BREAKS[kind][2], brk.reason), brk.reason
    assert brk.where == _line_of(f"BREAK:{kind}"), brk
    assert brk.user_stack[-1] == brk.where


@pytest.mark.parametrize("kind", sorted(BREAKS))
def test_fullgraph_raises_at_each_break_and_leaves_state_untouched(kind):
    body, setup, words = BREAKS[kind]
    m, o = make("mlp", "adam")
    log = _Log()
    setup(m, log)
    before = {k: v.clone() for k, v in m.state_dict().items()}
    rng = ember.get_rng_state()
    f = ember.compile(lambda x, y: body(m, o, x, y, log), fullgraph=True)
    x, y = soft_batches(1)[0]
    with pytest.raises(Unsupported) as info:
        f(x, y)
    assert_bitwise(m.state_dict(), before, "parameters after the failed call")
    assert [p.grad is None for p in m.parameters()] == [True] * 4, "gradients after the call"
    assert o.state_dict()["state"] == {}, "optimizer state after the failed call"
    assert_bitwise(ember.get_rng_state(), rng, "random state")
    message = str(info.value)
    assert re.search(words, message), message
    assert _line_of(f"BREAK:{kind}") in message, message  # names the source line


def test_fullgraph_whole_step_with_cross_entropy_captures_and_replays():
    data = batches("mlp")
    m1, o1 = make("mlp", "adam")
    eager = run_steps(train_step(m1, o1), data)
    m2, o2 = make("mlp", "adam")
    f = ember.compile(train_step(m2, o2), fullgraph=True)
    assert_bitwise(run_steps(f, data), eager)
    assert f.stats.replays >= STEPS - 2 and not f.breaks
    assert_same_training_state(m2, m1, o2, o1)


def test_bool_check_before_any_update_is_repeated_at_replay():
    """``if x.sum() > 0`` before anything changed in place is no break: the replay checks it
    again, and a call whose check comes out differently runs eagerly."""
    m, _ = make("mlp", None)

    def fn(x):
        if x.sum() > 0:
            return m(x).relu()
        return m(-x) * 2

    f = ember.compile(fn)
    g = ember.Generator().manual_seed(3)
    xs = [ember.randn(8, 6, generator=g) for _ in range(12)]
    xs = [x if k % 3 else x.abs() for k, x in enumerate(xs)]
    signs = {bool(x.sum() > 0) for x in xs}
    assert signs == {True, False}
    with ember.no_grad():
        for x in xs:
            assert_bitwise(f(x), fn(x))
    assert f.stats.replays >= 3 and not f.breaks, (f.stats, f.breaks)


def test_python_side_effect_without_tensor_data_happens_on_every_call():
    """A Python effect that reads no tensor data (a list the function appends to) happens on
    every call, as under torch's dynamo: a replay runs no Python, so the capture sees the
    list change and makes it a graph break; the module inside is still compiled."""
    calls = []
    m, _ = make("mlp", None)

    def fn(x):
        calls.append(len(calls))
        return m(x)

    f = ember.compile(fn)
    x = batches("mlp", 1)[0][0]
    for _ in range(4):
        f(x)
    assert [b.reason for b in f.breaks] == [
        "the call changes Python state (calls): a replay runs no Python, so it would not"]
    assert calls == [0, 1, 2, 3]
    assert [c.stats.replays for c in f.children.values()] == [1]


# ------------------------------------------------------------- 5. capture resumes after a break
@pytest.mark.parametrize("model", ["mlp", "lstm"])
def test_step_with_item_logging_compiles_its_modules_and_matches_eager(model):
    data = batches(model, 6)
    runs = []
    for compile_it in (False, True):
        m, o = make(model, "adam")
        logged = []

        def step(x, y, m=m, o=o, logged=logged):
            o.zero_grad()
            loss = nn.functional.cross_entropy(m(x), y)
            logged.append(loss.item())
            loss.backward()
            o.step()
            return loss

        f = ember.compile(step) if compile_it else step
        runs.append((run_steps(f, data), m, o, logged, f))
    (l1, m1, o1, log1, _), (l2, m2, o2, log2, f) = runs
    assert f.breaks and "item()" in f.breaks[0].reason
    assert m2 in f.children, list(f.children)
    child = f.children[m2]
    assert child.stats.replays >= 2, child.stats
    assert log2 == log1 and len(log2) == 6
    assert_bitwise(l2, l1)
    assert_same_training_state(m2, m1, o2, o1)


def test_explain_lists_the_break_and_the_compiled_graphs():
    m, o = make("mlp", "adam")
    log = _Log()
    x, y = soft_batches(1)[0]
    before = {k: v.clone() for k, v in m.state_dict().items()}
    out = ember._dynamo.explain(lambda x, y: _step_item(m, o, x, y, log))(x, y)
    assert out.graph_break_count == 1 and len(out.break_reasons) == 1
    assert "item()" in out.break_reasons[0].reason
    assert out.break_reasons[0].user_stack[-1] == _line_of("BREAK:item")
    text = str(out)
    assert "Graph Break Count: 1" in text and "Graph Count" in text
    assert "item()" in text and _line_of("BREAK:item") in text
    assert len(log) == 1  # explain ran the call once, as torch's does
    assert not all(np.array_equal(_arr(v), _arr(before[k])) for k, v in m.state_dict().items())


def test_explain_of_a_clean_step_has_one_graph_and_its_ops():
    m, o = make("mlp", "adam")
    x, y = soft_batches(1)[0]

    def step(x, y):
        o.zero_grad()
        loss = _soft_ce(m(x), y)
        loss.backward()
        o.step()
        return loss

    out = ember._dynamo.explain(step)(x, y)
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.break_reasons == []
    assert out.op_count > 10
    assert "Graph Break Count: 0" in str(out) and f"Op Count: {out.op_count}" in str(out)
    method = ember.compile(m).explain(x)  # OptimizedModule.explain: the same report
    assert method.graph_count == 1 and method.graph_break_count == 0


# ----------------------------------------------------------- 6. compiled inside eager, and back
def test_compiled_submodule_inside_an_eager_model_trains_like_eager():
    class Wrapper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Linear(6, 8)
            self.body = MLP()
            self.body.fc1 = nn.Linear(8, 12)

        def forward(self, x):
            return self.body(ember.relu(self.embed(x)))

    data = batches("mlp", 6)
    runs = []
    for compile_it in (False, True):
        ember.manual_seed(0)
        m = Wrapper()
        o = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        if compile_it:
            m.body = ember.compile(m.body)  # the part after eager code is compiled
        runs.append((eager_loop(m, o, data), m, o))
    (l1, m1, o1), (l2, m2, o2) = runs
    assert m2.body._compiled.stats.replays >= 3
    assert_bitwise(l2, l1)
    assert m2.embed.weight.grad is not None  # gradients flow back through the compiled part
    assert_same_training_state(m2.embed, m1.embed)
    assert_same_training_state(m2.body._orig_mod, m1.body, o2, o1)


def test_compiled_function_called_from_eager_code_chains_gradients():
    w = ember.randn(6, 6, requires_grad=True)
    fn = ember.compile(lambda h: (h @ w).tanh())
    xs = [x for x, _ in batches("mlp", 4)]
    grads = {}
    for compile_it in (False, True):
        w.grad = None
        f = fn if compile_it else fn.__wrapped__
        seen = []
        for x0 in xs:
            x = x0.clone().requires_grad_()
            h = x.sin()  # eager before
            (f(h) * h).sum().backward()  # compiled in the middle, eager after
            seen.append(x.grad)
        grads[compile_it] = (seen, w.grad.clone())  # w.grad accumulates over the calls
    assert fn.stats.replays >= 2
    assert_bitwise(grads[True], grads[False])


def test_disabled_function_inside_compiled_step_runs_every_call():
    calls = []

    @ember.compiler.disable
    def log_norm(t):
        calls.append(t.norm().item())
        return t

    data = batches("mlp", 6)
    runs = []
    for compile_it in (False, True):
        calls.clear()
        m, o = make("mlp", "sgd")

        def step(x, y, m=m, o=o):
            o.zero_grad()
            loss = nn.functional.cross_entropy(log_norm(m(x)), y)
            loss.backward()
            o.step()
            return loss

        f = ember.compile(step) if compile_it else step
        runs.append((run_steps(f, data), m, o, list(calls), f))
    (l1, m1, o1, c1, _), (l2, m2, o2, c2, f) = runs
    assert c2 == c1 and len(c2) == 6
    assert f.breaks and "log_norm" in f.breaks[0].reason
    assert f.children[m2].stats.replays >= 2
    assert_bitwise(l2, l1)
    assert_same_training_state(m2, m1, o2, o1)


def test_disable_called_outside_compile_is_a_plain_call():
    @ember.compiler.disable
    def double(t):
        return t * 2

    assert_bitwise(double(ember.ones(3)), ember.full((3,), 2.0))
    assert double._torchdynamo_disable is True


def test_is_compiling_is_true_only_while_capturing():
    seen = []

    def fn(x):
        seen.append(ember.compiler.is_compiling())
        return x + 1

    f = ember.compile(fn)
    for _ in range(4):
        f(ember.ones(2))
    assert not ember.compiler.is_compiling()
    assert seen[0] is True  # the first call is traced (then ``seen.append`` breaks the graph)
    assert seen[1:] == [False] * 3
    assert ember._dynamo.is_compiling() is False


def test_reset_forgets_captures():
    f = ember.compile(lambda x: x * 3)
    x = ember.ones(2)
    for _ in range(3):
        f(x)
    assert f.stats.replays == 1
    ember.compiler.reset()
    for _ in range(3):
        assert_bitwise(f(x), x * 3)
    assert f.stats.captures == 2 and f.stats.replays == 2
    ember._dynamo.reset()
    f(x)
    assert f.stats.replays == 2


# --------------------------------------------------------------- 7. what a compiled step leaves
def test_grad_is_visible_after_each_compiled_backward():
    data = batches("mlp", 6)
    seen = {False: [], True: []}
    for compile_it in (False, True):
        m, o = make("mlp", "sgd")
        fwd = ember.compile(m) if compile_it else m
        for x, y in data:
            o.zero_grad()
            nn.functional.cross_entropy(fwd(x), y).backward()
            seen[compile_it].append([p.grad.clone() for p in m.parameters()])
            o.step()
    assert_bitwise(seen[True], seen[False])


def test_grad_is_visible_after_each_whole_step_replay():
    data = batches("mlp", 6)
    seen = {False: [], True: []}
    for compile_it in (False, True):
        m, o = make("mlp", "sgd")
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        for x, y in data:
            f(x, y)
            seen[compile_it].append([p.grad.clone() for p in m.parameters()])
    assert_bitwise(seen[True], seen[False])


def test_state_dicts_and_save_load_after_compiled_training(tmp_path):
    saved = {}
    for compile_it in (False, True):
        m, o = make("lstm", "adam")
        step = train_step(m, o)
        f = ember.compile(step) if compile_it else step
        run_steps(f, batches("lstm", 6))
        path = tmp_path / f"model{int(compile_it)}.pt"
        ember.save({"model": m.state_dict(), "opt": o.state_dict()}, path)
        saved[compile_it] = ember.load(path)
        if compile_it:
            assert f.stats.replays >= 3
    assert_bitwise(saved[True]["model"], saved[False]["model"])
    assert_bitwise(saved[True]["opt"]["state"], saved[False]["opt"]["state"])
    fresh, _ = make("lstm", None, seed=9)
    fresh.load_state_dict(saved[True]["model"])
    x = batches("lstm", 1)[0][0]
    with ember.no_grad():
        m.eval()
        fresh.eval()
        assert_bitwise(fresh(x), m(x))


def test_optimized_module_state_dict_round_trips(tmp_path):
    m, o = make("mlp", "adam")
    cm = ember.compile(m)
    eager_loop(m, o, batches("mlp"), compiled_model=cm)
    sd = cm.state_dict()
    assert all(k.startswith("_orig_mod.") for k in sd)
    ember.save(cm.state_dict(), tmp_path / "cm.pt")
    other = ember.compile(make("mlp", None, seed=4)[0])
    other.load_state_dict(ember.load(tmp_path / "cm.pt"))
    assert_bitwise(other._orig_mod.state_dict(), m.state_dict())
    x = batches("mlp", 1)[0][0]
    with ember.no_grad():
        for _ in range(3):
            assert_bitwise(other(x), m(x))


# ------------------------------------------------------------------- 9. errors users meet
def test_fullgraph_message_names_the_reason_and_the_source_line():
    def fn(x):
        y = x.exp()
        if y.sum().item() > 1:  # BREAK:message
            return y
        return -y

    f = ember.compile(fn, fullgraph=True)
    with pytest.raises(Unsupported, match=r"item\(\)") as info:
        f(ember.ones(3))
    message = str(info.value)
    assert _line_of("BREAK:message") in message
    assert isinstance(info.value, ember._dynamo.exc.Unsupported)
    assert f.breaks and f.breaks[0].where == _line_of("BREAK:message")
    with pytest.raises(Unsupported):  # and again: a fullgraph signature never runs eagerly
        f(ember.ones(3))


def test_bad_labels_after_replays_raise_eagers_error_and_change_nothing():
    m, o = make("mlp", "sgd")
    f = ember.compile(train_step(m, o))
    data = batches("mlp", 4)
    run_steps(f, data)
    assert f.stats.replays >= 1
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x, y = data[0]
    bad = y.clone()
    bad[0] = 7  # out of range for 3 classes
    m_e, o_e = make("mlp", "sgd")
    with pytest.raises(Exception) as eager_error:
        train_step(m_e, o_e)(x, bad)
    with pytest.raises(type(eager_error.value)) as compiled_error:
        f(x, bad)
    assert str(compiled_error.value) == str(eager_error.value)
    assert_bitwise(m.state_dict(), before)
    run_steps(f, data[:1])  # and the capture is still good afterwards


def test_compile_argument_errors_match_torch_wording():
    with pytest.raises(AssertionError, match="A callable function is expected"):
        ember.compile(3)
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        ember.compile(lambda x: x, mode="default", options={})
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        ember.compile(lambda x: x, backend="nope")
    assert ember.compile(MLP, disable=True) is MLP


# -------------------------------------------------------- 10. the same training run under torch
def _sines(lib, *shape, phase=0.0, scale=1.0):
    n = int(np.prod(shape))
    values = (np.sin(np.arange(n) * 0.37 + phase) * scale).astype(np.float32).reshape(shape)
    return lib.tensor(values)


def _train_script(lib, compile_step, steps: int = 12):
    """One training script, written once, run with ``lib`` as torch: an MLP with LayerNorm and
    a GRU head, AdamW, a StepLR schedule outside the step, the loss read with ``.item()``."""
    lib.manual_seed(0)

    class Net(lib.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = lib.nn.GRU(4, 6, batch_first=True)
            self.norm = lib.nn.LayerNorm(6)
            self.head = lib.nn.Linear(6, 3)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(lib.tanh(self.norm(out[:, -1])))

    net = Net()
    with lib.no_grad():
        for k, p in enumerate(net.parameters()):
            p.copy_(_sines(lib, *p.shape, phase=k, scale=0.3))
    opt = lib.optim.AdamW(net.parameters(), lr=0.02, weight_decay=0.05)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)
    xs = [_sines(lib, 5, 3, 4, phase=0.1 * s) for s in range(3)]
    ys = [lib.tensor([(s + k) % 3 for k in range(5)]) for s in range(3)]

    def step(x, y):
        opt.zero_grad()
        loss = lib.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    f = compile_step(step)
    losses = []
    for s in range(steps):
        losses.append(f(xs[s % 3], ys[s % 3]).item())
        sched.step()
    params = [p.detach().numpy().copy() for p in net.parameters()]
    return losses, params, f


def test_training_script_agrees_with_torch(torch):
    expected, expected_params, _ = _train_script(torch, lambda f: f)
    losses, params, f = _train_script(ember, ember.compile)
    assert f.stats.replays >= 4, f.stats
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, expected_params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_compiled_module_forward_agrees_with_torch(torch):
    x = np.sin(np.arange(24, dtype=np.float32)).reshape(4, 6)
    results = {}
    for lib in (torch, ember):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(6, 5), lib.nn.GELU(), lib.nn.Linear(5, 2))
        with lib.no_grad():
            for k, p in enumerate(m.parameters()):
                p.copy_(_sines(lib, *p.shape, phase=k, scale=0.4))
        cm = ember.compile(m) if lib is ember else m
        xt = lib.tensor(x, requires_grad=True)
        for _ in range(3):
            xt.grad = None
            out = cm(xt)
            out.pow(2).sum().backward()
        results[lib] = (out.detach().numpy(), xt.grad.numpy(), m[0].weight.grad.numpy())
    for a, b in zip(results[ember], results[torch]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_autocast_and_default_dtype_are_part_of_the_signature():
    """A replay captured in float32 is not used inside ``autocast`` (nor the other way round),
    nor under another default dtype: each global mode an op reads gets its own capture."""
    m = ember.nn.Linear(4, 3)
    f = ember.compile(m)
    x = ember.randn(2, 4)
    for _ in range(3):
        plain = f(x)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        for _ in range(3):
            cast = f(x)
        assert cast.dtype == m(x).dtype == ember.bfloat16
        assert ember.equal(cast, m(x))
    assert plain.dtype == ember.float32 and ember.equal(f(x), m(x))
    ember.set_default_dtype(ember.float64)
    try:
        g = ember.compile(lambda n: ember.ones(n) * 2)
        for _ in range(3):
            assert g(3).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    assert g(3).dtype == ember.float32
    assert f._compiled.stats.captures == 2
