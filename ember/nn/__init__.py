"""``ember.nn``: neural-network building blocks. ``functional`` holds the differentiable ops."""

from __future__ import annotations

from . import functional
