"""The documentation's code: every ``python`` block of the guide pages runs with ember.

Blocks of a page run in order in one namespace (as a reader pastes them into one session).
The site build itself (``mkdocs build --strict``) is run by CI, not here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
# pages whose python blocks are complete programs (others may show fragments)
RUNNABLE = ("index.md", "getting-started.md", "tensors-and-dtypes.md", "autograd.md",
            "nn.md", "optim.md", "data.md", "serialization.md", "visualization.md",
            "profiler.md", "compile.md", "namespaces.md")


def _blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text())


@pytest.mark.parametrize("page", RUNNABLE)
def test_code_blocks_run(page, tmp_path, monkeypatch, capsys):
    if not (DOCS / page).exists():
        pytest.skip(f"docs/{page} not written")
    if page == "visualization.md":
        pytest.importorskip("ember.viz")
    blocks = _blocks(page)
    assert blocks or page != "getting-started.md", "getting-started.md lost its code blocks"
    monkeypatch.chdir(tmp_path)  # anything a block writes lands in a temporary directory
    namespace: dict = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"docs/{page}[block {i}]", "exec"), namespace)  # noqa: S102
        except Exception as e:  # name the block so a doc fix is easy to find
            raise AssertionError(f"docs/{page}, python block {i} failed: {e!r}\n{code}") from e


def test_every_nav_page_exists():
    yml = (DOCS.parent / "mkdocs.yml").read_text()
    for page in re.findall(r":\s*([\w/.-]+\.md)\s*$", yml, re.MULTILINE):
        assert (DOCS / page).exists(), f"mkdocs.yml lists docs/{page}, which does not exist"
