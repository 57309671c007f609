"""ember.optim.lr_scheduler against torch's: the same learning-rate sequences over 50 steps."""

from __future__ import annotations

import copy
import math
import warnings

import pytest

import ember
import ember.optim as eoptim
from ember.optim import lr_scheduler as elrs


def _optimizer(optim, lib, name="SGD", **kwargs):
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    kwargs.setdefault("lr", 0.1)
    if name == "SGD":
        kwargs.setdefault("momentum", 0.9)
    return getattr(optim, name)([{"params": [a]}, {"params": [b], "lr": kwargs["lr"] * 2}],
                                **kwargs)


def _lr_lambda(epoch):
    return 0.95 ** epoch


def _mult_lambda(epoch):
    return 0.9 if epoch % 3 else 1.0


CASES = [
    ("StepLR", {"step_size": 7}),
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("MultiStepLR", {"milestones": [5, 12, 12, 30]}),
    ("MultiStepLR", {"milestones": [10, 20], "gamma": 0.3}),
    ("ExponentialLR", {"gamma": 0.93}),
    ("CosineAnnealingLR", {"T_max": 20}),
    ("CosineAnnealingLR", {"T_max": 15, "eta_min": 0.01}),
    ("LambdaLR", {"lr_lambda": _lr_lambda}),
    ("LambdaLR", {"lr_lambda": [_lr_lambda, lambda e: 1 / (e + 1)]}),
    ("MultiplicativeLR", {"lr_lambda": _mult_lambda}),
    ("LinearLR", {}),
    ("LinearLR", {"start_factor": 0.1, "end_factor": 0.8, "total_iters": 30}),
    ("ConstantLR", {}),
    ("ConstantLR", {"factor": 0.5, "total_iters": 20}),
    ("PolynomialLR", {"total_iters": 30, "power": 2.0}),
    ("OneCycleLR", {"max_lr": 1.0, "total_steps": 51}),
    ("OneCycleLR", {"max_lr": [1.0, 0.5], "epochs": 5, "steps_per_epoch": 11,
                    "anneal_strategy": "linear"}),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 60, "three_phase": True, "pct_start": 0.2,
                    "div_factor": 10.0, "final_div_factor": 100.0}),
    ("OneCycleLR", {"max_lr": 0.3, "total_steps": 60, "cycle_momentum": False}),
    ("CosineAnnealingWarmRestarts", {"T_0": 7}),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.001}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 6}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": [0.1, 0.2], "step_size_up": 4,
                  "step_size_down": 7, "mode": "triangular2"}),
    ("CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 5, "mode": "exp_range",
                  "gamma": 0.97}),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _group_values(opt):
    keys = ("lr", "momentum", "betas")
    return [{k: g[k] for k in keys if k in g} for g in opt.param_groups]


def _assert_same(ember_values, torch_values):
    assert len(ember_values) == len(torch_values)
    for e, t in zip(ember_values, torch_values):
        if isinstance(t, dict):
            assert e.keys() == t.keys()
            for k in t:
                _assert_same([e[k]], [t[k]])
        elif isinstance(t, tuple):
            _assert_same(list(e), list(t))
        else:
            assert e == pytest.approx(t, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("optim_name", ["SGD", "Adam"])
@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_lr_sequence_matches_torch(torch, name, kwargs, optim_name):
    eo = _optimizer(eoptim, ember, optim_name)
    to = _optimizer(torch.optim, torch, optim_name)
    es = getattr(elrs, name)(eo, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kwargs)
    _assert_same(es.get_last_lr(), ts.get_last_lr())
    for _ in range(50):
        eo.step()
        to.step()
        es.step()
        ts.step()
        _assert_same(es.get_last_lr(), ts.get_last_lr())
        _assert_same(_group_values(eo), _group_values(to))
    assert es.last_epoch == ts.last_epoch


def _plain_state(sd):
    return {k: v for k, v in sd.items() if k not in ("lr_lambdas", "_scale_fn_custom",
                                                      "_scale_fn_ref")}


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_state_dict_matches_torch_and_round_trips(torch, name, kwargs):
    eo, to = _optimizer(eoptim, ember), _optimizer(torch.optim, torch)
    es = getattr(elrs, name)(eo, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kwargs)
    for _ in range(13):
        eo.step()
        to.step()
        es.step()
        ts.step()
    esd, tsd = es.state_dict(), ts.state_dict()
    assert esd.keys() == tsd.keys()
    for k, v in _plain_state(tsd).items():
        assert esd[k] == v or esd[k] == pytest.approx(v), k

    # a fresh scheduler loaded from the state continues identically
    saved_opt, saved = copy.deepcopy(eo.state_dict()), copy.deepcopy(esd)
    eo2 = _optimizer(eoptim, ember)
    es2 = getattr(elrs, name)(eo2, **kwargs)
    eo2.load_state_dict(saved_opt)
    es2.load_state_dict(saved)
    for _ in range(20):
        eo.step()
        eo2.step()
        es.step()
        es2.step()
        assert es.get_last_lr() == es2.get_last_lr()


@pytest.mark.parametrize("kwargs", [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2},
    {"threshold": 0.1, "threshold_mode": "abs", "cooldown": 3, "patience": 1},
    {"mode": "max", "threshold_mode": "abs", "min_lr": [0.05, 0.01], "patience": 0},
    {"factor": 0.3, "patience": 1, "min_lr": 0.02, "eps": 1e-3},
])
def test_reduce_lr_on_plateau_matches_torch(torch, kwargs):
    eo, to = _optimizer(eoptim, ember), _optimizer(torch.optim, torch)
    es = elrs.ReduceLROnPlateau(eo, **kwargs)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kwargs)
    metrics = [math.sin(i / 3) + (i % 7) * 0.05 + 1 / (i + 1) for i in range(50)]
    for m in metrics:
        eo.step()
        to.step()
        es.step(m)
        ts.step(m)
        _assert_same(es.get_last_lr(), ts.get_last_lr())
        assert (es.num_bad_epochs, es.cooldown_counter, es.best) == (
            ts.num_bad_epochs, ts.cooldown_counter, ts.best)
    assert es.state_dict() == {k: v for k, v in ts.state_dict().items()}


def test_sequential_lr_matches_torch(torch):
    results = []
    for lib, optim, lrs in ((ember, eoptim, elrs), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(optim, lib)
        s1 = lrs.LinearLR(opt, start_factor=0.1, total_iters=5)
        s2 = lrs.ExponentialLR(opt, gamma=0.9)
        s3 = lrs.CosineAnnealingLR(opt, T_max=10)
        sched = lrs.SequentialLR(opt, [s1, s2, s3], milestones=[5, 20])
        seq = [sched.get_last_lr()]
        for _ in range(50):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        results.append((seq, sched.last_epoch))
    assert results[0][1] == results[1][1]
    for e, t in zip(results[0][0], results[1][0]):
        _assert_same(e, t)


def test_chained_scheduler_matches_torch(torch):
    results = []
    for lib, optim, lrs in ((ember, eoptim, elrs), (torch, torch.optim, torch.optim.lr_scheduler)):
        opt = _optimizer(optim, lib)
        sched = lrs.ChainedScheduler([lrs.ConstantLR(opt, factor=0.1, total_iters=4),
                                      lrs.ExponentialLR(opt, gamma=0.9),
                                      lrs.StepLR(opt, step_size=10, gamma=0.5)])
        seq = [sched.get_last_lr()]
        for _ in range(50):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        results.append(seq)
    for e, t in zip(*results):
        _assert_same(e, t)


@pytest.mark.parametrize(("name", "kwargs"), [
    ("StepLR", {"step_size": 4}), ("MultiStepLR", {"milestones": [3, 8]}),
    ("ExponentialLR", {"gamma": 0.9}), ("CosineAnnealingLR", {"T_max": 6}),
    ("LinearLR", {}), ("ConstantLR", {}), ("PolynomialLR", {"total_iters": 8}),
    ("CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2}),
])
def test_step_with_epoch_uses_the_closed_form(torch, name, kwargs):
    eo, to = _optimizer(eoptim, ember), _optimizer(torch.optim, torch)
    es = getattr(elrs, name)(eo, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(to, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in [3, 7, 1, 12, 5]:
            eo.step()
            to.step()
            es.step(epoch)
            ts.step(epoch)
            _assert_same(es.get_last_lr(), ts.get_last_lr())


def test_warns_when_scheduler_steps_before_optimizer():
    opt = _optimizer(eoptim, ember)
    sched = elrs.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before "
                                         r"`optimizer.step\(\)`"):
        sched.step()


def test_no_warning_in_the_right_order():
    opt = _optimizer(eoptim, ember)
    sched = elrs.StepLR(opt, step_size=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        sched.step()


def test_warns_when_optimizer_step_is_overridden():
    opt = _optimizer(eoptim, ember)
    sched = elrs.StepLR(opt, step_size=2)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match="has been overridden after learning rate scheduler"):
        sched.step()


def test_get_lr_outside_step_warns():
    sched = elrs.StepLR(_optimizer(eoptim, ember), step_size=2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()


def test_initial_lr_and_last_epoch():
    opt = _optimizer(eoptim, ember)
    sched = elrs.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.2]
    assert sched.last_epoch == 0 and sched.base_lrs == [0.1, 0.2]
    opt2 = _optimizer(eoptim, ember)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        elrs.StepLR(opt2, step_size=2, last_epoch=3)


def test_errors_match_torch(torch):
    cases = [
        ("ConstantLR", {"factor": 1.5}),
        ("LinearLR", {"start_factor": 0}),
        ("LinearLR", {"end_factor": 2}),
        ("OneCycleLR", {"max_lr": 1.0}),
        ("OneCycleLR", {"max_lr": 1.0, "total_steps": 10, "anneal_strategy": "exp"}),
        ("OneCycleLR", {"max_lr": 1.0, "total_steps": 10, "pct_start": 2.0}),
        ("CosineAnnealingWarmRestarts", {"T_0": 0}),
        ("ReduceLROnPlateau", {"factor": 1.0}),
        ("ReduceLROnPlateau", {"mode": "mid"}),
        ("CyclicLR", {"base_lr": 0.1, "max_lr": [0.1, 0.2, 0.3]}),
    ]
    for name, kwargs in cases:
        with pytest.raises(ValueError) as t_err:
            getattr(torch.optim.lr_scheduler, name)(_optimizer(torch.optim, torch), **kwargs)
        with pytest.raises(ValueError) as e_err:
            getattr(elrs, name)(_optimizer(eoptim, ember), **kwargs)
        assert str(e_err.value) == str(t_err.value)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        elrs.StepLR([], step_size=1)


def test_onecycle_steps_past_total_raise():
    opt = _optimizer(eoptim, ember)
    sched = elrs.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        opt.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total "
                                         "steps is 3"):
        opt.step()
        sched.step()


def test_tensor_lr_is_updated_in_place():
    a = ember.zeros(2, requires_grad=True)
    lr = ember.tensor(0.1)
    opt = eoptim.Adam([a], lr=lr)
    sched = elrs.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert lr.item() == pytest.approx(0.05)
