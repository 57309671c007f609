"""Shared test fixtures. PyTorch is the oracle: tests needing it skip cleanly without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # test the working tree

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch (the test oracle) is not "
                                    "installed: pip install torch==2.13.0")


@pytest.fixture
def torch():
    """The real PyTorch module (skips the test where it is absent)."""
    return pytest.importorskip("torch")
