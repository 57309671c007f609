"""Shared test fixtures. PyTorch is the oracle: tests needing it skip cleanly without it."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # test the working tree

import ember  # after the path insert: the working tree's ember

# EMBER_TEST_DEVICE=strict runs the whole session with the default device set to the strict
# backend (the CuPy-like CPU stand-in), so tests that create tensors without ``device=`` (the
# op table, the nn tests) exercise it.
TEST_DEVICE = ember.device(os.environ.get("EMBER_TEST_DEVICE", "cpu"))
ember.set_default_device(TEST_DEVICE)


@pytest.fixture(autouse=True)
def _restore_default_device():
    """Each test starts on the session's device, whatever the previous one set."""
    yield
    ember.set_default_device(TEST_DEVICE)

HAS_TORCH = importlib.util.find_spec("torch") is not None

requires_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch (the test oracle) is not "
                                    "installed: pip install torch==2.13.0")


@pytest.fixture
def torch():
    """The real PyTorch module (skips the test where it is absent)."""
    return pytest.importorskip("torch")
