"""``ember.hub``: torch.hub for models already on this machine. ember never downloads.

* ``load(dir, model, *args, source='local')`` imports ``dir/hubconf.py`` and calls its entry
  point ``model`` (torch's local source, complete: ``dependencies`` checked, kwargs passed).
* ``load/list/help`` of a GitHub repo use the copy in the hub cache (``get_dir()``, torch's
  own cache directory, so a repo torch downloaded is found); without one they raise.
* ``load_state_dict_from_url`` reads the checkpoint cached under ``get_dir()/checkpoints``
  (again torch's cache), with ``ember.load``; a file not there raises.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load",
           "load_state_dict_from_url", "set_dir"]

MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
_hub_dir: str | None = None


def _no_download(what: str, target: str, fix: str) -> RuntimeError:
    return RuntimeError(f"{what}: ember.hub does not download ({target} is not in the hub "
                        f"cache {get_dir()!r}). {fix}")


def get_dir() -> str:
    """The hub cache directory: ``set_dir``'s, else ``$TORCH_HOME/hub``, else
    ``$XDG_CACHE_HOME/torch/hub`` (``~/.cache/torch/hub``), the same one torch uses."""
    if _hub_dir is not None:
        return _hub_dir
    torch_home = os.path.expanduser(os.getenv(
        "TORCH_HOME", os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")))
    return os.path.join(torch_home, "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Set the hub cache directory (``torch.hub.set_dir``)."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


@contextlib.contextmanager
def _on_sys_path(path: str) -> Iterator[None]:
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir: str):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: a hub directory holds a hubconf.py")
    with _on_sys_path(repo_dir):
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def _entry(module, model: str) -> Callable:
    """The entry point ``model`` of a hubconf module, checked as torch does."""
    if not isinstance(model, str):
        raise ValueError(  # noqa: TRY004 - torch raises ValueError
            "Invalid input: model should be a string of function name")
    dependencies = getattr(module, VAR_DEPENDENCY, None)
    if dependencies is not None:
        missing = [pkg for pkg in dependencies if importlib.util.find_spec(pkg) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _cached_repo(github: str, what: str) -> str:
    """The cached directory of ``owner/name[:ref]`` (torch's cache layout ``owner_name_ref``;
    without a ref, ``main`` then ``master``)."""
    repo, _, ref = github.partition(":")
    if "/" not in repo:
        raise ValueError(f'Invalid input: repo_or_dir should be "owner/name[:ref]" or a '
                         f"directory, got {github!r}")
    owner, name = repo.split("/", 1)
    hub = get_dir()
    for candidate in ([ref] if ref else ["main", "master"]):
        path = os.path.join(hub, "_".join((owner, name, candidate.replace("/", "_"))))
        if os.path.isdir(path):
            return path
    raise _no_download(what, repr(github), "Clone the repository and call "
                       "ember.hub.load(path, model, source='local'), or load a checkpoint "
                       "file with ember.load(path).")


def list(github: str, force_reload: bool = False, skip_validation: bool = False,
         trust_repo=None, verbose: bool = True) -> list[str]:
    """The entry points of a cached repo's hubconf (its public callables)."""
    module = _import_hubconf(_cached_repo(github, "ember.hub.list"))
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github: str, model: str, force_reload: bool = False,
         skip_validation: bool = False, trust_repo=None) -> str | None:
    """The docstring of entry point ``model`` of a cached repo."""
    return _entry(_import_hubconf(_cached_repo(github, "ember.hub.help")), model).__doc__


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo=None,
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs) -> Any:
    """``torch.hub.load``: call entry point ``model`` of ``repo_or_dir``'s hubconf.py with
    ``*args, **kwargs``. ``source='local'``: a directory; ``'github'``: a cached repo."""
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _cached_repo(repo_or_dir, "ember.hub.load")
    module = _import_hubconf(repo_or_dir)
    with _on_sys_path(repo_or_dir):  # an entry point may import the repo's own modules
        return _entry(module, model)(*args, **kwargs)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    raise RuntimeError(f"ember.hub.download_url_to_file: ember.hub does not download ({url}). "
                       f"Download the file yourself and save it as {dst!r}.")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """``torch.hub.load_state_dict_from_url`` for a checkpoint already in the cache directory
    (``model_dir``, default ``get_dir()/checkpoints``, where torch puts it), read with
    ``ember.load``; a checkpoint not there raises (ember does not download)."""
    from .serialization import load as _load  # lazy: serialization loads on first use
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        raise _no_download("ember.hub.load_state_dict_from_url", repr(url),
                           f"Download it yourself to {cached!r}, or load a local checkpoint "
                           "with ember.load(path).")
    if zipfile.is_zipfile(cached):
        with zipfile.ZipFile(cached) as zf:
            members = zf.infolist()
            # torch's legacy zip: one zipped checkpoint file (not torch.save's zip format)
            if len(members) == 1 and not members[0].is_dir():
                zf.extractall(model_dir)
                cached = os.path.join(model_dir, members[0].filename)
    return _load(cached, map_location=map_location, weights_only=weights_only)
