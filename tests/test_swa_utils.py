"""ember.optim.swa_utils against torch.optim.swa_utils: same weights, same data, same epochs."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.optim import swa_utils

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((32, 4)).astype(np.float32)
Y = RNG.standard_normal((32, 2)).astype(np.float32)


def _model(lib):
    """Linear -> BatchNorm1d -> ReLU -> Linear with fixed weights."""
    rng = np.random.default_rng(1)
    m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.BatchNorm1d(8), lib.nn.ReLU(),
                          lib.nn.Linear(8, 2))
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return m


def _batches(lib):
    return [(lib.tensor(X[i:i + 8]), lib.tensor(Y[i:i + 8])) for i in range(0, 32, 8)]


def _epoch(lib, model, opt):
    for x, y in _batches(lib):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def _assert_modules_close(em, tm, atol=1e-5):
    es, ts = em.state_dict(), tm.state_dict()
    assert list(es) == list(ts)
    for k in ts:
        np.testing.assert_allclose(es[k].numpy(), ts[k].numpy(), rtol=1e-4, atol=atol,
                                   err_msg=k)
        assert str(es[k].dtype) == str(ts[k].dtype), k


def _averaging(lib, kind):
    s = lib.optim.swa_utils
    return {"swa": {}, "ema_avg": {"avg_fn": s.get_ema_avg_fn(0.9)},
            "ema_multi": {"multi_avg_fn": s.get_ema_multi_avg_fn(0.8)},
            "swa_avg": {"avg_fn": s.get_swa_avg_fn()},
            "swa_multi": {"multi_avg_fn": s.get_swa_multi_avg_fn()},
            "ema_buffers": {"multi_avg_fn": s.get_ema_multi_avg_fn(0.7), "use_buffers": True},
            "swa_buffers_avg": {"avg_fn": s.get_swa_avg_fn(), "use_buffers": True}}[kind]


@pytest.mark.parametrize("kind", ["swa", "ema_avg", "ema_multi", "swa_avg", "swa_multi",
                                  "ema_buffers", "swa_buffers_avg"])
def test_averaged_model_matches_torch_over_epochs(kind):
    models, averaged, opts = {}, {}, {}
    for lib in (ember, torch):
        models[lib] = _model(lib)
        averaged[lib] = lib.optim.swa_utils.AveragedModel(models[lib], **_averaging(lib, kind))
        opts[lib] = lib.optim.SGD(models[lib].parameters(), lr=0.05, momentum=0.9)
    for _ in range(5):
        for lib in (ember, torch):
            _epoch(lib, models[lib], opts[lib])
            averaged[lib].update_parameters(models[lib])
        _assert_modules_close(models[ember], models[torch])
        _assert_modules_close(averaged[ember], averaged[torch])
    assert int(averaged[ember].n_averaged) == 5 == int(averaged[torch].n_averaged)
    assert averaged[ember].n_averaged.dtype == ember.int64
    # the averaged model runs (eval mode: its running statistics)
    averaged[ember].eval()
    averaged[torch].eval()
    np.testing.assert_allclose(averaged[ember](ember.tensor(X)).detach().numpy(),
                               averaged[torch](torch.tensor(X)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)


def test_first_update_copies_and_swa_is_the_mean():
    m = ember.nn.Linear(3, 2)
    avg = swa_utils.AveragedModel(m)
    snapshots = []
    for i in range(4):
        with ember.no_grad():
            m.weight.add_(float(i + 1))
        snapshots.append(m.weight.detach().clone().numpy())
        avg.update_parameters(m)
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), np.mean(snapshots, 0),
                               rtol=1e-6)
    assert avg.module.weight is not m.weight  # a deep copy
    assert "n_averaged" in avg.state_dict()


def test_swa_multi_avg_fn_on_integer_buffers_raises_like_torch():
    """torch's foreach path divides integer buffers with addcdiv_, which it refuses."""
    for lib in (ember, torch):
        m = lib.nn.BatchNorm1d(3)
        avg = lib.optim.swa_utils.AveragedModel(
            m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn(), use_buffers=True)
        avg.update_parameters(m)
        with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
            avg.update_parameters(m)


def test_avg_fn_and_multi_avg_fn_together_and_bad_decay_raise_like_torch():
    for lib in (ember, torch):
        s = lib.optim.swa_utils
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            s.AveragedModel(lib.nn.Linear(1, 1), avg_fn=s.get_swa_avg_fn(),
                            multi_avg_fn=s.get_swa_multi_avg_fn())
        for fn in (s.get_ema_avg_fn, s.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
                fn(1.5)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
def test_swalr_schedule_matches_torch(strategy, anneal_epochs):
    lrs = {}
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        q = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q], "lr": 0.3}], lr=1.0)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.1], anneal_epochs=anneal_epochs,
                                          anneal_strategy=strategy)
        seq = [sched.get_last_lr()]
        for _ in range(7):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr())
        lrs[lib] = seq
        assert [g["swa_lr"] for g in opt.param_groups] == [0.05, 0.1]
    np.testing.assert_allclose(lrs[ember], lrs[torch], rtol=1e-12)


def test_swalr_after_another_scheduler_and_state_dict_round_trip():
    lrs = {}
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(2))
        opt = lib.optim.SGD([p], lr=0.5)
        cosine = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        swa = lib.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=3,
                                        anneal_strategy="linear")
        seq = []
        for epoch in range(10):
            opt.step()
            if epoch >= 4:
                swa.step()
            else:
                cosine.step()
            seq.append(opt.param_groups[0]["lr"])
        lrs[lib] = seq
        state = swa.state_dict()
        assert "anneal_func" not in state and "optimizer" not in state
        swa2 = lib.optim.swa_utils.SWALR(opt, swa_lr=0.3, anneal_strategy="cos")
        swa2.load_state_dict(state)
        assert swa2.anneal_func(0.5) == 0.5  # linear again
    np.testing.assert_allclose(lrs[ember], lrs[torch], rtol=1e-12)


def test_swalr_bad_arguments_raise_like_torch():
    for lib in (ember, torch):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"
                                             ", instead got exp"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length"):
            lib.optim.swa_utils.SWALR(opt, [0.1, 0.2])


def test_update_bn_recomputes_statistics_like_torch():
    models = {}
    for lib in (ember, torch):
        m = _model(lib)
        m.eval()
        m[1].momentum = 0.3
        with lib.no_grad():
            m[1].running_mean.fill_(5.0)  # stale statistics that update_bn must replace
        loader = [x for x, _ in _batches(lib)]
        lib.optim.swa_utils.update_bn(loader, m)
        assert not m.training and m[1].momentum == 0.3  # mode and momentum restored
        models[lib] = m
    _assert_modules_close(models[ember], models[torch])
    # a cumulative average over the batches: running_mean is the mean of the batch means
    h = models[ember][0](ember.tensor(X)).detach().numpy()
    np.testing.assert_allclose(models[ember][1].running_mean.numpy(),
                               h.reshape(4, 8, 8).mean(1).mean(0), rtol=1e-5, atol=1e-6)
    assert int(models[ember][1].num_batches_tracked) == 4


def test_update_bn_takes_the_first_element_of_tuple_batches_and_skips_models_without_bn():
    em, tm = _model(ember), _model(torch)
    swa_utils.update_bn(_batches(ember), em)
    torch.optim.swa_utils.update_bn(_batches(torch), tm)
    _assert_modules_close(em, tm)
    lin = ember.nn.Linear(2, 2)
    swa_utils.update_bn([object()], lin)  # no BatchNorm: the loader is never read


def test_optim_exposes_swa_utils_as_torch_does():
    import ember.optim

    assert ember.optim.swa_utils is swa_utils
    assert set(swa_utils.__all__) == set(torch.optim.swa_utils.__all__)
