"""Random number generation: ``Generator``, ``manual_seed``, ``seed``, RNG state.

ember draws from NumPy's PCG64, so seeded streams are reproducible within ember but are not
the same numbers torch's Mersenne Twister gives for the same seed. Generators live on the host
for every device: draws are copied to a device tensor's backend (the same numbers on any).
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterable, Iterator

from ._backend import host
from ._tensor import _make

DEFAULT_SEED = 67280421310721  # torch's default seed


class Generator:
    """``torch.Generator``: an independent random stream."""

    def __init__(self, device="cpu") -> None:
        self._seed = DEFAULT_SEED
        self._bits = None  # numpy.random is imported on first draw: it costs ~8 ms of import
        self.device = device

    @property
    def _rng(self):
        """The host generator (``numpy.random.Generator``) that draws for this one."""
        if self._bits is None:
            self._bits = host.random.Generator(host.random.PCG64(self._seed & 0xFFFFFFFFFFFFFFFF))
        return self._bits

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        self._seed = seed
        self._bits = None
        return self

    def seed(self) -> int:
        s = int(host.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):

        raw = pickle.dumps((self._seed, self._rng.bit_generator.state))
        return _make(host.frombuffer(raw, dtype=host.uint8).copy())  # a CPU tensor, as torch

    def set_state(self, state) -> Generator:

        self._seed, bg_state = pickle.loads(state.cpu().numpy().tobytes())
        self._bits = host.random.Generator(host.random.PCG64())
        self._bits.bit_generator.state = bg_state
        return self


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (``torch.manual_seed``); returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    default_generator.set_state(new_state)


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


@contextlib.contextmanager
def fork_rng(devices: Iterable | None = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str | None = None) -> Iterator[None]:
    """``torch.random.fork_rng``: on exit, restore the RNG state as it was on entry.

    ember's generators all live on the host (see the module docstring), so forking the CPU
    state forks every device's (``devices`` and ``device_type`` are accepted for torch's API).
    """
    if device_type == "meta" or not enabled:
        yield
        return
    if device_type is not None and device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {device_type}")
    if devices is not None:
        list(devices)  # torch traverses it (a generator is consumed); device RNGs are the host's
    # (torch warns when ``devices`` is None and several GPUs are visible: ember sees none)
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator() -> Generator | None:
    """``torch.random.thread_safe_generator``: the worker's generator in a thread worker of a
    DataLoader; None elsewhere (ember's workers are processes), meaning "the default RNG"."""
    import sys
    data = sys.modules.get("ember.utils.data.dataloader")  # unloaded: no worker can exist
    info = data.get_worker_info() if data is not None else None
    if info is not None and getattr(info, "worker_method", None) == "thread":
        rng_ = getattr(info, "rng", None)
        if rng_ is not None:
            return rng_.torch_generator
    return None


def rng(generator: Generator | None):
    """The host generator to draw from: ``generator``'s, or the default one's."""
    return (generator or default_generator)._rng
