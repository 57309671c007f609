"""``DataParallel`` and ``data_parallel``, as torch behaves with no GPU available."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """``torch.nn.DataParallel`` without GPUs: ``forward`` calls ``self.module`` directly and
    ``device_ids`` is ``[]`` (``output_device`` and ``dim`` are not kept, as in torch).
    The wrapped module is the child ``module``, so ``state_dict`` keys start with
    ``module.``; ``dp.module.state_dict()`` gives the unprefixed ones."""

    def __init__(self, module: Module, device_ids: Sequence[int] | None = None,
                 output_device: int | None = None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)


def data_parallel(module: Module, inputs: Any, device_ids: Sequence[int] | None = None,
                  output_device: int | None = None, dim: int = 0,
                  module_kwargs: Any | None = None) -> Any:
    """``torch.nn.parallel.data_parallel``: needs an accelerator, so it raises torch's
    ``RuntimeError`` (call ``module(*inputs)`` instead)."""
    raise RuntimeError("device type could not be determined")
