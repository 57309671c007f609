"""Every op of the op table under ``ember.compile``: a compiled call gives the eager op's values
and gradients bit for bit, whether it replays its capture or breaks the graph.

Each row's op is compiled as ``lambda *args, **kwargs: case.fn(ember, *args, **kwargs)`` and
called ``CALLS`` times with fresh inputs whose values differ from call to call (same shapes,
dtypes and strides): call 1 runs eagerly, call 2 captures and checks the capture against
eager, the later calls replay. Every call is compared with the eager op on the same inputs,
under the same seed (so random ops draw the same numbers): outputs (type, dtype, shape,
``requires_grad``, values with NaNs equal), the inputs afterwards (in-place ops), the error
where eager raises one, and, for differentiable rows (as ``test_ops`` decides), the input
gradients for the same random upstream gradient. A replayed output that requires grad must
hang off ``CompiledFunctionBackward``.

A row may break the graph (data-dependent shapes, values read into Python) and so run
eagerly; it must still be right. Breaks and other eager fallbacks are recorded in
``GRAPH_BREAKS`` and ``EAGER_FALLBACKS`` (printed at the end with ``-v`` or
``EMBER_COMPILE_OPS_REPORT=1``), not expected by name. A capture that its own check rejects
("replaying the captured graph differs from eager") fails the test: the capture is wrong.

Every row, sample and dtype of the table runs, as in ``test_ops``. ``RANDOM_OPS`` adds draws
that are random indeed (the table's random rows use parameters that make the draw certain),
``INPLACE_OPS`` ops that change an argument (the table's rows change copies only).
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from op_table import F32, OPS, Input, OpCase, S, materialize, tensors_of
from test_ops import _diff_positions

import ember

CALLS = 4  # 1 eager warm-up, 1 capture (checked against eager), 2 replays
SEED = 1234  # ember.manual_seed(SEED + call) before the compiled and the eager call alike
REJECTED = "replaying the captured graph differs from eager"

# draws that are random indeed: the table's random rows make the draw certain (p in {0, 1},
# std 0), which would not show a replay that draws from the wrong stream
_P = np.array([[0.2, 0.5, 0.9], [0.7, 0.1, 0.4]])
_W = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 0.5, 0.5, 1.0]])
RANDOM_OPS = [
    OpCase("random_rand", lambda m, x: x + m.rand(3, 4), [S((3, 4))]),
    OpCase("random_randn_like", lambda m, x: x * m.randn_like(x), [S((3, 4))]),
    OpCase("random_randint", lambda m: m.randint(0, 10, (3, 4)), [S()], grad=False),
    OpCase("random_randperm", lambda m: m.randperm(7), [S()], grad=False),
    OpCase("random_normal", lambda m, mu, sd: m.normal(mu, sd), [S((3, 4), (3, 4))],
           domain=lambda rng, shape, dtype: rng.uniform(0.5, 2, shape).astype(dtype)),
    OpCase("random_bernoulli", lambda m, p: m.bernoulli(p), [S(_P)]),
    OpCase("random_bernoulli_", lambda m, x: (x * 1).bernoulli_(0.3), [S((3, 4))]),
    OpCase("random_multinomial", lambda m, w, n, **kw: m.multinomial(w, n, **kw),
           [S(_W, 2), S(_W, 6, replacement=True)], grad=False),
    OpCase("random_dropout", lambda m, x: m.nn.functional.dropout(x, 0.5), [S((4, 5))]),
    OpCase("random_dropout2d", lambda m, x: m.nn.functional.dropout2d(x, 0.5),
           [S((2, 3, 4, 4))]),
    OpCase("random_alpha_dropout", lambda m, x: m.nn.functional.alpha_dropout(x, 0.3, True),
           [S((4, 5))]),
    OpCase("random_rrelu", lambda m, x: m.nn.functional.rrelu(x, training=True), [S((4, 5))]),
    OpCase("random_uniform_", lambda m, x: (x * 1).uniform_(-1.0, 1.0), [S((3, 4))]),
    OpCase("random_normal_", lambda m, x: (x * 1).normal_(0.0, 2.0), [S((3, 4))]),
    OpCase("random_exponential_", lambda m, x: (x * 1).exponential_(), [S((3, 4))], F32,
           grad=False),
]


def _setitem(m, x, y):
    x[1:] = y
    return x


# in place on an argument (the table's rows require grad, so they change copies only): the
# compiled call must leave the argument as eager does, and replay the change on new arguments
_MASK = np.array([True, False, False, True])
INPLACE_OPS = [
    OpCase("inplace_mul_", lambda m, x: x.mul_(2), [S((3, 4))], grad=False),
    OpCase("inplace_add_", lambda m, x, y: x.add_(y), [S((3, 4), (4,))], grad=False),
    OpCase("inplace_clamp_", lambda m, x: x.clamp_(-0.5, 0.5), [S((3, 4))], grad=False),
    OpCase("inplace_masked_fill_", lambda m, x, mask: x.masked_fill_(mask, 0.0),
           [S((3, 4), _MASK)], grad=False),
    OpCase("inplace_index_add_", lambda m, x, i, y: x.index_add_(0, i, y),
           [S((3, 4), np.array([0, 2]), (2, 4))], grad=False),
    OpCase("inplace_setitem", _setitem, [S((3, 4), (4,))], grad=False),
    OpCase("inplace_through_view", lambda m, x: x[:, 0].mul_(3), [S((3, 4))], grad=False),
]
ROWS = OPS + RANDOM_OPS + INPLACE_OPS


CASES = [pytest.param(c, i, s, d, id=f"{c.name}-{i}-{d}")
         for c in ROWS for d in c.dtypes for i, s in enumerate(c.samples)]


# what the test run saw, by row: the graph breaks' reasons, and the other reasons a signature
# ran eagerly (a capture that could not be used, a replay whose value checks diverged)
GRAPH_BREAKS: dict[str, set] = {}
EAGER_FALLBACKS: dict[str, set] = {}


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    """With ``-v`` or ``EMBER_COMPILE_OPS_REPORT=1``: the rows that broke or ran eagerly."""
    yield
    if not (request.config.option.verbose > 0 or os.environ.get("EMBER_COMPILE_OPS_REPORT")):
        return
    lines = []
    for title, found in (("graph breaks", GRAPH_BREAKS), ("eager fallbacks", EAGER_FALLBACKS)):
        lines.append(f"\nember.compile over the op table: {len(found)} rows with {title}")
        lines += [f"  {name}: {'; '.join(sorted(found[name]))}" for name in sorted(found)]
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\n".join(lines))


class _Reseeded:
    """``case`` with its inputs drawn from another seed (``materialize`` reads only these)."""

    def __init__(self, case: OpCase, salt: int) -> None:
        self.domain = case.domain
        self._case, self._salt = case, salt

    def seed(self, i: int) -> int:
        return self._case.seed(i) + 7919 * self._salt


def _inputs(case: OpCase, i: int, sample: S, dtype: str, call: int) -> list:
    """Sample ``i``'s inputs for call ``call``: random ones redrawn from another seed, fixed
    float arrays scaled by ``0.5 ** call`` (exact: zeros, signs, ties, NaNs and order stay),
    integer and bool arrays (indices, masks) and plain values as they are."""
    inputs = materialize(_Reseeded(case, call) if call else case, i, sample, dtype)
    for k, a in enumerate(sample.args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and inputs[k].base.dtype.kind == "f":
            base = inputs[k].base
            inputs[k] = Input(np.asarray(base * base.dtype.type(0.5 ** call)), inputs[k].spec)
    return inputs


def _call(fn, inputs: list, diff: list, kwargs: dict, call: int):
    """(arguments, result, error) of ``fn`` on fresh tensors of ``inputs``, seeded for
    ``call``."""
    args = [a.tensor(ember, k in diff) if isinstance(a, Input) else a
            for k, a in enumerate(inputs)]
    ember.manual_seed(SEED + call)
    try:
        return args, fn(*args, **kwargs), None
    except Exception as err:  # noqa: BLE001 - compared with eager's
        return args, None, err


def _arr(t: ember.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def assert_same(c, e, what: str) -> None:
    """The compiled result ``c`` is the eager ``e``: same structure; tensors of the same dtype,
    shape, ``requires_grad`` and values, bit for bit (NaNs equal)."""
    assert type(c) is type(e), f"{what}: compiled gives {type(c).__name__}, eager " \
                               f"{type(e).__name__}"
    if isinstance(e, ember.Tensor):
        assert (c.dtype, tuple(c.shape)) == (e.dtype, tuple(e.shape)), \
            f"{what}: compiled {c.dtype}{tuple(c.shape)}, eager {e.dtype}{tuple(e.shape)}"
        assert c.requires_grad == e.requires_grad, f"{what} requires_grad: compiled " \
                                                   f"{c.requires_grad}, eager {e.requires_grad}"
        ca, ea = _arr(c), _arr(e)
        assert np.array_equal(ca, ea, equal_nan=ea.dtype.kind in "fc"), \
            f"{what} differs:\ncompiled {ca!r}\neager    {ea!r}"
    elif isinstance(e, (tuple, list)):
        assert len(c) == len(e), f"{what}: compiled gives {len(c)} items, eager {len(e)}"
        for k, (x, y) in enumerate(zip(c, e)):
            assert_same(x, y, f"{what}[{k}]")
    elif isinstance(e, dict):
        assert list(c) == list(e), f"{what}: keys {list(c)} vs {list(e)}"
        for k in e:
            assert_same(c[k], e[k], f"{what}[{k!r}]")
    elif isinstance(e, float) and math.isnan(e):
        assert isinstance(c, float) and math.isnan(c), f"{what}: compiled {c!r}, eager nan"
    else:
        assert c == e, f"{what}: compiled {c!r}, eager {e!r}"


def _grads(outs: list, leaves: list, seeds: list) -> list:
    return list(ember.autograd.grad(outs, leaves, [ember.tensor(g.copy()) for g in seeds],
                                    allow_unused=True))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case, i, sample, dtype", CASES)
def test_compiled_op_matches_eager(case, i, sample, dtype):
    def op(*args, **kwargs):
        return case.fn(ember, *args, **kwargs)

    compiled = ember.compile(op)
    stats = compiled.stats
    raised = False
    fallbacks: set = set()
    for call in range(CALLS):
        inputs = _inputs(case, i, sample, dtype, call)
        diff = _diff_positions(case, inputs)
        replays, eager_calls = stats.replays, stats.eager_calls
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            c_args, c_out, c_err = _call(compiled, inputs, diff, sample.kwargs, call)
        replayed = stats.replays > replays and stats.eager_calls == eager_calls
        if stats.replays > replays and not replayed:
            fallbacks.add("a replay diverged from its capture's value checks")
        for w in warned:
            msg = str(w.message)
            assert REJECTED not in msg, f"call {call + 1}: {msg}"
            if msg.startswith("ember.compile: running"):
                fallbacks.add(msg.split("eagerly: ", 1)[-1])
        with warnings.catch_warnings(record=True):  # eager's own (deprecations): not compared
            warnings.simplefilter("always")
            e_args, e_out, e_err = _call(op, inputs, diff, sample.kwargs, call)

        if e_err is not None:  # where eager refuses, compiled refuses alike
            raised = True
            assert c_err is not None, f"call {call + 1}: eager raised {e_err!r}, compiled " \
                                      "did not"
            assert (type(c_err), str(c_err)) == (type(e_err), str(e_err)), \
                f"call {call + 1}: compiled raised {c_err!r}, eager {e_err!r}"
            continue
        if c_err is not None:
            raise AssertionError(f"call {call + 1}: compiled raised, eager did not") from c_err
        assert_same(c_out, e_out, f"call {call + 1}: output")
        for k, (x, y) in enumerate(zip(c_args, e_args)):
            if isinstance(y, ember.Tensor):
                assert_same(x, y, f"call {call + 1}: input {k} afterwards")

        pairs = [(c, e) for c, e in zip(tensors_of(c_out), tensors_of(e_out))
                 if isinstance(e, ember.Tensor) and e.requires_grad]
        if replayed:
            for k, (c, e) in enumerate(pairs):
                if e.grad_fn is not None:
                    name = type(c.grad_fn).__name__
                    assert name == "CompiledFunctionBackward", \
                        f"call {call + 1}: replayed output {k} has grad_fn {name}"
        if not pairs or not diff:
            continue
        rng = np.random.default_rng(case.seed(i) + 7919 * call + 1)
        seeds = [rng.standard_normal(tuple(e.shape)).astype(_arr(e).dtype) for _, e in pairs]
        e_grads = _grads([e for _, e in pairs], [e_args[k] for k in diff], seeds)
        c_grads = _grads([c for c, _ in pairs], [c_args[k] for k in diff], seeds)
        for k, c_g, e_g in zip(diff, c_grads, e_grads):
            if e_g is None:
                assert c_g is None or not _arr(c_g).any(), \
                    f"call {call + 1}: input {k}: eager gives no gradient, compiled {c_g}"
                continue
            assert c_g is not None, f"call {call + 1}: input {k}: compiled gives no gradient"
            assert_same(c_g, e_g, f"call {call + 1}: gradient of input {k}")

    if compiled.breaks:
        GRAPH_BREAKS.setdefault(case.name, set()).update(b.reason for b in compiled.breaks)
    if fallbacks:
        EAGER_FALLBACKS.setdefault(case.name, set()).update(fallbacks)
    if not (compiled.breaks or raised or fallbacks):
        assert stats.replays > 0, f"never replayed: {stats}"
