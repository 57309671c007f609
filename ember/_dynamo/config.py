"""``torch._dynamo.config``: the settings scripts change. ``recompile_limit`` (and its old name
``cache_size_limit``) is how many captures one signature may have before it runs eagerly."""

from __future__ import annotations

recompile_limit = 8
cache_size_limit = 8
accumulated_recompile_limit = 256
suppress_errors = False
verbose = False
