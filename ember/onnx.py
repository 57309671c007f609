"""``ember.onnx``: present so that scripts importing ``torch.onnx`` load; ember cannot export.

``export`` raises ``NotImplementedError`` (ember records no graph to export); the enums and
``is_in_onnx_export`` answer as torch does outside an export.
"""

from __future__ import annotations

import enum

__all__ = ["ExportableModule", "InputObserver", "ONNXProgram", "OnnxExporterError",
           "OperatorExportTypes", "TrainingMode", "export", "is_in_onnx_export"]


class TrainingMode(enum.Enum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.Enum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class OnnxExporterError(RuntimeError):
    """``torch.onnx.OnnxExporterError``: an export failed."""


class ONNXProgram:
    """What ``torch.onnx.export`` returns; ember never makes one."""

    def __init__(self, *args, **kwargs) -> None:
        raise _no_export("ember.onnx.ONNXProgram")


class ExportableModule:
    def __init__(self, *args, **kwargs) -> None:
        raise _no_export("ember.onnx.ExportableModule")


class InputObserver:
    def __init__(self, *args, **kwargs) -> None:
        raise _no_export("ember.onnx.InputObserver")


def _no_export(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what}: ONNX export (torch.onnx.export) is not supported by ember, which runs "
        "eagerly and records no graph to export. Save the weights with "
        "ember.save(model.state_dict(), path), load them into the same model in PyTorch "
        "(torch.load reads ember's files) and export from there.")


def export(model, args=(), f=None, *, kwargs=None, **options) -> None:
    """``torch.onnx.export``: raises ``NotImplementedError`` (see the message for the route
    through PyTorch)."""
    raise _no_export("ember.onnx.export")


def is_in_onnx_export() -> bool:
    """False: there is never an export in progress."""
    return False
