"""torch's script-facing namespaces: backends, accelerator, jit, onnx, compile, compiler,
threads, determinism, hub, multiprocessing, nn.parallel. Each answers as torch 2.13 does on
a CPU-only machine; compared with the real torch wherever it has the behaviour."""

from __future__ import annotations

import copy
import importlib
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _mp_helpers  # after the path insert: spawned children import it by name

# torch 2.13 deprecates TorchScript, and ember.jit warns as it does (checked once, below)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")


def _raises_like(torch_call, ember_call):
    """Both calls raise the same exception (torch's own classes: one of the same name and
    built-in base) with the same message."""
    with pytest.raises(Exception) as expected:
        torch_call()
    kind = type(expected.value)
    builtin = next(c for c in kind.__mro__ if c.__module__ == "builtins")
    with pytest.raises(builtin) as got:
        ember_call()
    assert type(got.value).__name__ == kind.__name__
    assert str(got.value) == str(expected.value)


# ----------------------------------------------------------------------------- backends
FLAG_NAMES = {
    "cudnn": ("enabled", "benchmark", "deterministic", "allow_tf32", "fp32_precision",
              "depthwise_kernel", "benchmark_limit"),
    "mkldnn": ("enabled", "deterministic", "allow_tf32", "fp32_precision"),
    "opt_einsum": ("enabled", "strategy"),
}


@pytest.mark.parametrize(("module", "name"),
                         [(m, n) for m, names in FLAG_NAMES.items() for n in names])
def test_backend_flag_defaults_match_torch(torch, module, name):
    theirs = importlib.import_module(f"torch.backends.{module}")
    ours = importlib.import_module(f"ember.backends.{module}")
    assert getattr(ours, name) == getattr(theirs, name)


@pytest.mark.parametrize("call", [
    "cudnn.is_available()", "cudnn.version()", "cuda.is_built()", "mps.is_available()",
    "mps.is_built()", "cuda.matmul.allow_tf32",
    "cuda.matmul.allow_fp16_reduced_precision_reduction",
    "cuda.matmul.allow_bf16_reduced_precision_reduction", "cuda.flash_sdp_enabled()",
    "cuda.math_sdp_enabled()", "cuda.mem_efficient_sdp_enabled()", "cuda.cudnn_sdp_enabled()",
    "cuda.is_flash_attention_available()", "str(cuda.preferred_linalg_library())",
    "str(cuda.preferred_blas_library())", "mha.get_fastpath_enabled()",
    "opt_einsum.is_available()", "cpu.get_cpu_capability()",
])
def test_backend_queries_match_torch(torch, call):
    assert eval(call, vars(ember.backends)) == eval(call, vars(torch.backends))


def test_generic_fp32_precision_matches_torch(torch):
    assert ember.backends.fp32_precision == torch.backends.fp32_precision
    with ember.backends.flags(fp32_precision="tf32"):
        assert ember.backends.fp32_precision == "tf32"
    assert ember.backends.fp32_precision == "none"


def test_cpu_only_backends_report_unavailable():
    # ember computes with NumPy: no oneDNN, no OpenMP of its own (torch's CPU build has both)
    assert ember.backends.mkldnn.is_available() is False
    assert ember.backends.openmp.is_available() is False


@pytest.mark.parametrize(("module", "name", "value"), [
    ("cudnn", "enabled", 1), ("cudnn", "benchmark", "x"), ("cudnn", "deterministic", None),
    ("cudnn", "allow_tf32", 0), ("cudnn", "fp32_precision", "bogus"),
    ("cudnn", "depthwise_kernel", "x"), ("mkldnn", "enabled", 1),
])
def test_backend_flag_checks_match_torch(torch, module, name, value):
    theirs = importlib.import_module(f"torch.backends.{module}")
    ours = importlib.import_module(f"ember.backends.{module}")
    _raises_like(lambda: setattr(theirs, name, value), lambda: setattr(ours, name, value))


@pytest.mark.parametrize("value", [1, (True, False), (), (True, True, True), (1,)])
def test_cuda_matmul_reduction_setting_checks_match_torch(torch, value):
    name = "allow_fp16_reduced_precision_reduction"
    _raises_like(lambda: setattr(torch.backends.cuda.matmul, name, value),
                 lambda: setattr(ember.backends.cuda.matmul, name, value))


def test_cuda_matmul_flags_set_and_unknown_names_fail():
    matmul = ember.backends.cuda.matmul
    try:
        matmul.allow_fp16_reduced_precision_reduction = False
        assert matmul.allow_fp16_reduced_precision_reduction is False
        matmul.allow_bf16_reduced_precision_reduction = (False, False)
        assert matmul.allow_bf16_reduced_precision_reduction_split_k is False
    finally:
        matmul.allow_fp16_reduced_precision_reduction = True
        matmul.allow_bf16_reduced_precision_reduction = True
    with pytest.raises(AttributeError, match="Unknown attribute bogus"):
        matmul.bogus = True
    with pytest.raises(AttributeError, match="Unknown attribute bogus"):
        _ = matmul.bogus


def test_cudnn_flags_are_settable_module_attributes():
    cudnn = ember.backends.cudnn
    cudnn.benchmark = True
    cudnn.deterministic = True
    try:
        assert (cudnn.benchmark, cudnn.deterministic) == (True, True)
        assert ember.backends.cudnn is importlib.import_module("ember.backends.cudnn")
    finally:
        cudnn.benchmark = False
        cudnn.deterministic = False


def test_cudnn_flags_context_uses_torch_defaults_then_restores(torch):
    for backends in (torch.backends, ember.backends):
        backends.cudnn.benchmark = True
        with backends.cudnn.flags(deterministic=True):
            inside = (backends.cudnn.enabled, backends.cudnn.benchmark,
                      backends.cudnn.deterministic)
        after = (backends.cudnn.enabled, backends.cudnn.benchmark, backends.cudnn.deterministic)
        backends.cudnn.benchmark = False
        assert inside == (False, False, True)  # torch's quirk: omitted flags take defaults
        assert after == (True, True, False)


def test_disable_global_flags_refuses_bare_assignment():
    from ember.backends import _flags
    try:
        ember.backends.disable_global_flags()
        assert ember.backends.flags_frozen()
        with pytest.raises(RuntimeError, match="not allowed to set ember.backends.cudnn flags"):
            ember.backends.cudnn.enabled = False
        with ember.backends.cudnn.flags(enabled=True):
            assert ember.backends.cudnn.enabled is True
        assert ember.backends.cudnn.enabled is True
    finally:
        _flags._state["frozen"] = False


def test_opt_einsum_enable_without_package_matches_torch(torch):
    if torch.backends.opt_einsum.is_available():
        pytest.skip("opt_einsum is installed")
    _raises_like(lambda: torch.backends.opt_einsum.set_flags(True),
                 lambda: ember.backends.opt_einsum.set_flags(True))


@pytest.mark.parametrize("call", [
    lambda b: b.cuda.preferred_linalg_library("x"), lambda b: b.cuda.preferred_blas_library(3),
    lambda b: b.cuda.enable_math_sdp(1), lambda b: b.mps.is_macos13_or_newer(),
    lambda b: b.cuda.cufft_plan_cache.max_size,
])
def test_backend_errors_match_torch(torch, call):
    _raises_like(lambda: call(torch.backends), lambda: call(ember.backends))


def test_sdp_kernel_warns_and_restores(torch):
    with pytest.warns(FutureWarning, match="sdp_kernel"), \
            ember.backends.cuda.sdp_kernel(enable_flash=False):
        assert ember.backends.cuda.flash_sdp_enabled() is False
    assert ember.backends.cuda.flash_sdp_enabled() is True


# ----------------------------------------------------------------------------- accelerator
@pytest.mark.parametrize("call", ["is_available()", "current_accelerator()", "device_count()",
                                  "current_accelerator(check_available=True)"])
def test_accelerator_queries_match_torch(torch, call):
    assert eval(call, vars(ember.accelerator)) == eval(call, vars(torch.accelerator))


@pytest.mark.parametrize("name", [
    "current_device_index", "current_stream", "synchronize", "empty_cache", "memory_allocated",
    "get_memory_info", "memory_stats", "max_memory_allocated", "reset_peak_memory_stats",
    "get_device_capability", "empty_host_cache", "Graph"])
def test_accelerator_device_calls_raise_like_torch(torch, name):
    _raises_like(getattr(torch.accelerator, name), getattr(ember.accelerator, name))


def test_accelerator_device_index_context(torch):
    with ember.accelerator.device_index(None):
        pass

    def enter(module):
        with module.device_index(0):
            pass
    _raises_like(lambda: enter(torch.accelerator), lambda: enter(ember.accelerator))
    assert set(torch.accelerator.__all__) <= set(ember.accelerator.__all__)


# ----------------------------------------------------------------------------- jit, onnx
def test_jit_script_and_trace_return_eager_equivalents():
    model = ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.Tanh())
    x = ember.randn(4, 3)
    scripted = ember.jit.script(model)
    traced = ember.jit.trace(model, (x,))
    for compiled in (scripted, traced):
        assert ember.equal(compiled(x), model(x))
        assert list(compiled.state_dict()) == list(model.state_dict())

    def f(a):
        return a * 2 if a.sum() > 0 else a  # data-dependent: eager keeps both branches
    traced_f = ember.jit.trace(f, (ember.ones(2),))
    assert ember.equal(traced_f(-ember.ones(2)), -ember.ones(2))


def _double(x: int) -> int:
    return 2 * x


@pytest.mark.parametrize("call", [lambda j: j.fork(_double, 1),
                                  lambda j: j.script_method(_double)])
def test_jit_deprecation_warnings_match_torch(torch, call):
    with pytest.warns(DeprecationWarning) as theirs:
        call(torch.jit)
    with pytest.warns(DeprecationWarning) as ours:
        call(ember.jit)
    assert str(ours[0].message) == str(theirs[0].message)


def test_jit_decorators_and_flags():
    @ember.jit.ignore
    def a(x):
        return x + 1

    @ember.jit.ignore(drop=True)
    def b(x):
        return x + 2

    assert (a(1), b(1), ember.jit.unused(a)(1), ember.jit.export(a)(1)) == (2, 3, 2, 2)
    assert not ember.jit.is_scripting() and not ember.jit.is_tracing()
    assert ember.jit.wait(ember.jit.fork(lambda x: x * 3, 2)) == 6
    assert ember.jit.annotate(int, 5) == 5 and ember.jit.Attribute(5, int) == 5

    class Legacy(ember.jit.ScriptModule):
        @ember.jit.script_method
        def forward(self, x):
            return x * 2
    assert ember.equal(Legacy()(ember.ones(2)), 2 * ember.ones(2))


def test_jit_isinstance_matches_torch(torch):
    import typing
    cases = [([1, 2], list[int]), ([1, "a"], list[int]),
             ({"a": 1}, typing.Dict[str, int]),  # noqa: UP006
             (None, typing.Optional[int]), (None, int | None),  # noqa: UP045
             ((1, 2.0), tuple[int, float]), (3, int)]
    for obj, kind in cases:
        assert ember.jit.isinstance(obj, kind) == torch.jit.isinstance(obj, kind)
    _raises_like(lambda: torch.jit.isinstance({}, dict), lambda: ember.jit.isinstance({}, dict))


@pytest.mark.parametrize("call", [lambda: ember.jit.save(ember.nn.Linear(1, 1), "x.pt"),
                                  lambda: ember.jit.load("x.pt"),
                                  lambda: ember.jit.ScriptModule().save("x.pt")])
def test_jit_serialisation_is_not_implemented(call):
    with pytest.raises(NotImplementedError, match="TorchScript"):
        call()


def test_jit_freeze_needs_eval_mode(torch):
    _raises_like(lambda: torch.jit.freeze(torch.jit.script(torch.nn.Linear(1, 1))),
                 lambda: ember.jit.freeze(ember.jit.script(ember.nn.Linear(1, 1))))
    model = ember.nn.Linear(1, 1).eval()
    assert ember.jit.freeze(model) is model


def test_onnx(torch):
    assert ember.onnx.is_in_onnx_export() is torch.onnx.is_in_onnx_export() is False
    assert ember.onnx.TrainingMode.EVAL.value == torch.onnx.TrainingMode.EVAL.value
    with pytest.raises(NotImplementedError, match=r"torch\.onnx\.export"):
        ember.onnx.export(ember.nn.Linear(2, 2), (ember.ones(1, 2),), "m.onnx")


# ----------------------------------------------------------------------------- compile
def test_compile_module_wraps_like_torchs_optimized_module(torch):
    model = ember.nn.Sequential(ember.nn.Linear(2, 3), ember.nn.ReLU())
    compiled = ember.compile(model)
    assert compiled._orig_mod is model and type(compiled).__name__ == "OptimizedModule"
    # torch's key format, which torch.compile's OptimizedModule gives (without compiling)
    from torch._dynamo.eval_frame import OptimizedModule
    reference = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    theirs = OptimizedModule(reference, torch._dynamo.eval_frame.DisableContext())
    assert list(compiled.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in compiled.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert repr(compiled) == repr(theirs)
    x = ember.randn(5, 2)
    assert ember.equal(compiled(x), model(x))
    assert len(compiled) == 2 and compiled.training is True
    compiled.eval()
    assert model.training is False
    compiled.note = "kept"  # attribute writes go to the wrapped module, as in torch
    assert model.note == "kept"
    assert compiled.load_state_dict(compiled.state_dict()).missing_keys == []
    with pytest.raises(RuntimeError, match="Missing key"):
        compiled.load_state_dict(model.state_dict())


def test_compile_module_pickles_and_runs_hooks():
    model = ember.nn.Linear(2, 2)
    seen = []
    model.register_forward_hook(lambda m, i, o: seen.append(o.shape))
    compiled = ember.compile(model)
    compiled(ember.ones(1, 2))
    assert seen == [ember.Size([1, 2])]
    copied = copy.deepcopy(compiled)
    assert type(copied).__name__ == "OptimizedModule" and copied._orig_mod is not model
    assert ember.equal(copied(ember.ones(1, 2)), compiled(ember.ones(1, 2)))
    plain = pickle.loads(pickle.dumps(ember.compile(ember.nn.Linear(2, 2))))
    assert list(plain.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]


def test_compile_functions_and_decorators():
    def f(x, *, scale=2):
        return x * scale

    compiled = ember.compile(f)
    assert compiled.__name__ == "f" and compiled.__wrapped__ is f
    assert ember.equal(compiled(ember.ones(2), scale=3), 3 * ember.ones(2))

    @ember.compile
    def g(x):
        return x + 1

    @ember.compile(mode="max-autotune", fullgraph=True, dynamic=True)
    def h(x):
        return x - 1

    x = ember.arange(3.0)
    assert ember.equal(g(x), x + 1) and ember.equal(h(x), x - 1)
    assert ember.compile(f, disable=True) is f


@pytest.mark.parametrize("kwargs", [{"backend": "nope"}, {"mode": "nope"},
                                    {"mode": "default", "options": {}}])
def test_compile_argument_errors_match_torch(torch, kwargs):
    def f(x):
        return x
    _raises_like(lambda: torch.compile(f, **kwargs), lambda: ember.compile(f, **kwargs))


@pytest.mark.parametrize("call", [lambda c: c(None)(None), lambda c: c(3)])
def test_compile_bad_model_errors_match_torch(torch, call):
    _raises_like(lambda: call(torch.compile), lambda: call(ember.compile))


def test_compiler_namespace(torch):
    for name in ("is_compiling", "is_dynamo_compiling", "is_exporting"):
        assert getattr(ember.compiler, name)() is getattr(torch.compiler, name)() is False
    assert ember.compiler.list_backends() == torch.compiler.list_backends()
    assert ember.compiler.list_backends(exclude_tags=()) == torch._dynamo.list_backends(
        exclude_tags=())
    assert ember.compiler.get_default_backend() == "inductor"

    def f(x):
        return x + 1
    for decorator in (ember.compiler.disable, ember.compiler.disable(recursive=False),
                      ember.compiler.allow_in_graph, ember.compiler.assume_constant_result):
        assert decorator(f)(1) == 2
    ember.compiler.reset()
    # eagerly torch converts with Tensor.numpy(), so, as there, CPU tensors only
    doubled = ember.compiler.wrap_numpy(lambda a: a * 2)(ember.arange(3.0, device="cpu"))
    assert isinstance(doubled, ember.Tensor) and doubled.tolist() == [0.0, 2.0, 4.0]


# ----------------------------------------------------------------------------- threads
def test_set_num_threads_sizes_numpys_blas_pool():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        if not blas:
            pytest.skip("NumPy's BLAS is not one threadpoolctl can control")
        assert all(i["num_threads"] == 1 for i in blas)
        assert ember.get_num_threads() == 1
    finally:
        ember.set_num_threads(before)


@pytest.mark.parametrize("value", [0, -1, 1.5, "2", True])
def test_set_num_threads_errors_match_torch(torch, value):
    _raises_like(lambda: torch.set_num_threads(value), lambda: ember.set_num_threads(value))


@pytest.mark.parametrize("value", [0, -1])
def test_set_num_interop_threads_errors_match_torch(torch, value):
    _raises_like(lambda: torch.set_num_interop_threads(value),
                 lambda: ember.set_num_interop_threads(value))


def test_threads_without_threadpoolctl_and_interop_once():
    # a fresh interpreter: threadpoolctl hidden, interop threads not set yet
    code = textwrap.dedent("""
        import sys, warnings
        sys.modules["threadpoolctl"] = None
        import ember
        before = ember.get_num_threads()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ember.set_num_threads(3)
            ember.set_num_threads(2)
        # BLAS is unchanged without threadpoolctl, and get_num_threads reports the real pool
        assert ember.get_num_threads() == before, ember.get_num_threads()
        assert len(caught) == 1 and "pip install ember[threads]" in str(caught[0].message)
        ember.set_num_interop_threads(3)
        assert ember.get_num_interop_threads() == 3
        try:
            ember.set_num_interop_threads(4)
        except RuntimeError as e:
            assert "cannot set number of interop threads" in str(e)
        else:
            raise AssertionError("a second set_num_interop_threads must fail")
    """)
    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


# ----------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2, True])
def test_deterministic_debug_mode_matches_torch(torch, mode):
    def state(t):
        return (t.get_deterministic_debug_mode(), t.are_deterministic_algorithms_enabled(),
                t.is_deterministic_algorithms_warn_only_enabled())
    try:
        torch.set_deterministic_debug_mode(mode)
        ember.set_deterministic_debug_mode(mode)
        assert state(ember) == state(torch)
    finally:
        torch.use_deterministic_algorithms(False)
        ember.use_deterministic_algorithms(False)


@pytest.mark.parametrize(("args", "kwargs"), [((True,), {"warn_only": True}), ((False,), {}),
                                              ((False,), {"warn_only": True})])
def test_use_deterministic_algorithms_matches_torch(torch, args, kwargs):
    try:
        torch.use_deterministic_algorithms(*args, **kwargs)
        ember.use_deterministic_algorithms(*args, **kwargs)
        for name in ("are_deterministic_algorithms_enabled",
                     "is_deterministic_algorithms_warn_only_enabled",
                     "get_deterministic_debug_mode"):
            assert getattr(ember, name)() == getattr(torch, name)()
    finally:
        torch.use_deterministic_algorithms(False)
        ember.use_deterministic_algorithms(False)


@pytest.mark.parametrize("call", [lambda t: t.set_deterministic_debug_mode(3),
                                  lambda t: t.set_deterministic_debug_mode("foo"),
                                  lambda t: t.set_deterministic_debug_mode(1.0),
                                  lambda t: t.use_deterministic_algorithms(1),
                                  lambda t: t.use_deterministic_algorithms(True, warn_only=1)])
def test_determinism_errors_match_torch(torch, call):
    try:
        _raises_like(lambda: call(torch), lambda: call(ember))
    finally:
        torch.use_deterministic_algorithms(False)
        ember.use_deterministic_algorithms(False)


# ----------------------------------------------------------------------------- hub
HUBCONF = '''
dependencies = ["os"]
import ember
from helper import WIDTH


def tiny(out_features=WIDTH, bias=True):
    """A tiny linear model."""
    return ember.nn.Linear(3, out_features, bias=bias)


def _private():
    return None
'''


@pytest.fixture
def hub_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    (repo / "helper.py").write_text("WIDTH = 4\n")
    return repo


def test_hub_load_local(hub_repo):
    model = ember.hub.load(str(hub_repo), "tiny", source="local", out_features=2, bias=False)
    assert isinstance(model, ember.nn.Linear) and model.out_features == 2
    assert model.bias is None
    assert ember.hub.load(str(hub_repo), "tiny", source="local").out_features == 4
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        ember.hub.load(str(hub_repo), "nope", source="local")
    with pytest.raises(ValueError, match='Unknown source: "ftp"'):
        ember.hub.load(str(hub_repo), "tiny", source="ftp")


def test_hub_missing_dependencies(hub_repo):
    (hub_repo / "hubconf.py").write_text(HUBCONF.replace('["os"]', '["os", "no_such_pkg_x"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_pkg_x"):
        ember.hub.load(str(hub_repo), "tiny", source="local")


def test_hub_github_uses_the_cache_or_says_it_cannot_download(hub_repo, tmp_path):
    previous = ember.hub._hub_dir
    try:
        ember.hub.set_dir(str(tmp_path / "hub"))
        with pytest.raises(RuntimeError, match="does not download"):
            ember.hub.load("owner/name", "tiny")
        (tmp_path / "hub").mkdir()
        hub_repo.rename(tmp_path / "hub" / "owner_name_main")  # torch's cache layout
        assert ember.hub.list("owner/name") == ["tiny"]
        assert ember.hub.help("owner/name", "tiny") == "A tiny linear model."
        assert ember.hub.load("owner/name", "tiny").out_features == 4
    finally:
        ember.hub._hub_dir = previous


def test_hub_dir_follows_torch(torch, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    ours, theirs = ember.hub._hub_dir, torch.hub._hub_dir
    ember.hub._hub_dir = torch.hub._hub_dir = None
    try:
        assert ember.hub.get_dir() == torch.hub.get_dir() == str(tmp_path / "hub")
    finally:
        ember.hub._hub_dir, torch.hub._hub_dir = ours, theirs


def test_hub_load_state_dict_from_cache(tmp_path):
    state = ember.nn.Linear(2, 2).state_dict()
    ember.save(state, tmp_path / "weights-abc.pt")
    loaded = ember.hub.load_state_dict_from_url("https://example.com/x/weights-abc.pt",
                                                model_dir=str(tmp_path))
    assert all(loaded[k].tolist() == state[k].tolist() for k in state)
    with pytest.raises(RuntimeError, match="does not download"):
        ember.hub.load_state_dict_from_url("https://example.com/missing.pt",
                                           model_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="does not download"):
        ember.hub.download_url_to_file("https://example.com/a.pt", str(tmp_path / "a.pt"))


# ----------------------------------------------------------------------------- multiprocessing
def test_multiprocessing_reexports_and_sharing_strategy(torch):
    mp = ember.multiprocessing
    for name in torch.multiprocessing.__all__:
        assert hasattr(mp, name), name
    assert mp.get_sharing_strategy() == torch.multiprocessing.get_sharing_strategy()
    assert mp.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    _raises_like(lambda: torch.multiprocessing.set_sharing_strategy("bogus"),
                 lambda: mp.set_sharing_strategy("bogus"))


def test_spawn_runs_each_index(tmp_path):
    ember.multiprocessing.spawn(_mp_helpers.write_square, args=(str(tmp_path), ember.ones(2) * 3),
                                nprocs=2)
    results = sorted((ember.load(p)["i"], ember.load(p)["square"].tolist())
                     for p in tmp_path.glob("*.pt"))
    assert results == [(0, [9.0, 9.0]), (1, [9.0, 9.0])]


def test_spawn_forwards_a_child_exception():
    with pytest.raises(ember.multiprocessing.ProcessRaisedException) as info:
        ember.multiprocessing.spawn(_mp_helpers.raise_on_one, nprocs=2)
    assert info.value.error_index == 1
    assert "ValueError: child 1 failed on purpose" in str(info.value)
    assert "-- Process 1 terminated with the following error:" in str(info.value)


def test_spawn_reports_an_exit_code():
    with pytest.raises(ember.multiprocessing.ProcessExitedException,
                       match="process 0 terminated with exit code 3") as info:
        ember.multiprocessing.spawn(_mp_helpers.exit_with_code, args=(3,))
    assert info.value.exit_code == 3


def test_start_processes_without_join_and_queue():
    mp = ember.multiprocessing
    queue = mp.get_context("spawn").SimpleQueue()
    context = mp.start_processes(_mp_helpers.put_sum, args=(queue, ember.arange(4.0)),
                                 nprocs=2, join=False)
    got = sorted((i, s.item()) for i, s in (queue.get(), queue.get()))
    while not context.join():
        pass
    assert got == [(0, 6.0), (1, 6.0)] and len(context.pids()) == 2


def test_spawn_start_method_warns():
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        ember.multiprocessing.spawn(_mp_helpers.raise_on_one, nprocs=1, start_method="fork")


# ----------------------------------------------------------------------------- nn.parallel
def test_data_parallel_matches_torch_on_cpu(torch):
    from ember.nn.parallel import DataParallel
    ours = ember.nn.Linear(3, 2)
    theirs = torch.nn.Linear(3, 2)
    theirs.load_state_dict({k: torch.tensor(v.tolist()) for k, v in ours.state_dict().items()})
    dp, tdp = DataParallel(ours), torch.nn.DataParallel(theirs)
    assert list(dp.state_dict()) == list(tdp.state_dict()) == ["module.weight", "module.bias"]
    assert dp.module is ours and dp.device_ids == tdp.device_ids == []
    assert repr(dp) == repr(tdp)
    x = ember.randn(4, 3)
    expected = tdp(torch.tensor(x.tolist())).detach().numpy()
    assert dp(x).detach().cpu().numpy() == pytest.approx(expected, rel=1e-6)
    assert not hasattr(tdp, "output_device") and not hasattr(dp, "output_device")


def test_data_parallel_function_raises_like_torch(torch):
    from ember.nn.parallel import data_parallel
    _raises_like(lambda: torch.nn.parallel.data_parallel(torch.nn.Linear(1, 1),
                                                         torch.ones(1, 1)),
                 lambda: data_parallel(ember.nn.Linear(1, 1), ember.ones(1, 1)))
    assert ember.nn.parallel.DistributedDataParallel.__module__ == \
        "ember.nn.parallel.distributed"
    with pytest.raises(AttributeError, match="DistributedDataParallel across processes"):
        _ = ember.nn.parallel.replicate


# ----------------------------------------------------------------------------- import cost
def test_namespaces_load_lazily():
    code = ("import sys, ember; names = ['backends', 'jit', 'hub', 'multiprocessing', "
            "'_compile', 'nn.parallel', 'threadpoolctl']; "
            "print([n for n in names if 'ember.' + n in sys.modules or n in sys.modules])")
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(root)}, check=False)
    assert out.stdout.strip() == "[]", out.stderr
