"""``ember.alias_torch()``: make ``import torch`` (and every ``torch.*``) resolve to ember.

After the call, ``import torch`` gives the ``ember`` module, ``import torch.nn.functional as F``
gives ``ember.nn.functional``, ``from torch.utils.data import DataLoader`` gives ember's
DataLoader, and so on: ``sys.modules['torch.X']`` *is* ``ember.X``, not a copy, so
``torch.Tensor is ember.Tensor`` and isinstance checks agree across both names. Third-party
libraries that ``import torch`` (einops, torchinfo, ...) get ember too.

The mapping is generic: ``torch.<anything>`` is ``importlib.import_module('ember.<anything>')``,
so namespaces ember loads lazily, or gains later, need no list here. ``python -m ember
script.py`` installs the alias before it runs the script (see ``ember/__main__.py``).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

_TORCH = "torch"
_EMBER = "ember"
_DOCS = "docs/differences.md"


def _ember_name(torch_name: str) -> str:
    return _EMBER + torch_name[len(_TORCH):]


def _is_ember_module(module: object) -> bool:
    name = getattr(module, "__name__", None)
    return isinstance(name, str) and (name == _EMBER or name.startswith(_EMBER + "."))


def _missing(torch_name: str, ember_name: str) -> ModuleNotFoundError:
    """The error for a torch submodule ember does not have, naming both modules."""
    leaf = torch_name.rpartition(".")[2]
    why = (" (a private part of PyTorch's implementation, which ember does not mirror)"
           if leaf.startswith("_") else "")
    msg = (f"No module named '{torch_name}': ember.alias_torch() maps torch.* to ember.*, "
           f"and ember has no '{ember_name}'{why}. See {_DOCS} for what ember does not "
           f"provide.")
    return ModuleNotFoundError(msg, name=torch_name)


class _TorchAliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta-path finder and loader that answers ``torch`` and ``torch.*`` with ember's modules.

    NOTE: ``create_module`` cannot hand back ember's module: the import system then overwrites
    its ``__spec__`` with the torch-named spec (``__spec__.parent`` would then disagree with
    ``__package__`` inside ember). Instead the import system makes a throwaway placeholder and
    ``exec_module`` swaps ember's module into ``sys.modules``; importlib returns whatever
    ``sys.modules`` holds after ``exec_module``, so ember's modules keep their own spec.
    """

    _ember_alias_finder = True  # marks the finder even across reloads of this module

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != _TORCH and not fullname.startswith(_TORCH + "."):
            return None
        ember_name = _ember_name(fullname)
        module = _import_ember(fullname, ember_name)
        is_package = hasattr(module, "__path__")
        spec = importlib.machinery.ModuleSpec(fullname, self, is_package=is_package)
        spec.loader_state = module
        # Never return None for torch.*: the path finder would then load ember's files a
        # second time under torch's names (our parent's __path__ is ember's directory).
        return spec

    def create_module(self, spec):
        return None  # a placeholder; see the class NOTE

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        sys.modules[spec.name] = spec.loader_state


def _import_ember(torch_name: str, ember_name: str) -> types.ModuleType:
    try:
        return importlib.import_module(ember_name)
    except ModuleNotFoundError as exc:
        if exc.name != ember_name:
            raise  # something ember.X itself imports is missing: that error is the true one
        # a submodule ember exposes as a module-valued attribute, not a file of its own
        parent_name, _, leaf = ember_name.rpartition(".")
        try:  # the parent's lazy __getattr__ may itself try the missing import
            value = getattr(sys.modules.get(parent_name), leaf, None)
        except ImportError:
            value = None
        if isinstance(value, types.ModuleType):
            return value
        raise _missing(torch_name, ember_name) from None


def _real_torch_modules() -> list[str]:
    return [name for name, module in list(sys.modules.items())
            if (name == _TORCH or name.startswith(_TORCH + "."))
            and module is not None and not _is_ember_module(module)]


def alias_torch() -> None:
    """Make ``import torch`` and ``import torch.X`` give ``ember`` and ``ember.X`` from now on.

    Call it before anything imports torch (the first cell of a notebook), or run a script
    with ``python -m ember script.py``, which calls it for you. Calling it again does nothing.

    Raises:
        RuntimeError: if the real PyTorch is already imported in this process: one process
            cannot have both under the name ``torch``.
    """
    real = _real_torch_modules()
    if real:
        origin = getattr(sys.modules.get(real[0]), "__file__", None) or "?"
        raise RuntimeError(
            f"ember.alias_torch(): the real PyTorch is already imported ('{real[0]}' from "
            f"{origin}), and one process cannot have both under the name 'torch'. Call "
            f"ember.alias_torch() before anything imports torch (in a notebook: restart the "
            f"kernel and call it in the first cell), run the script with "
            f"`python -m ember script.py`, or write `import ember as torch` instead.")
    if not any(getattr(finder, "_ember_alias_finder", False) for finder in sys.meta_path):
        # first: an installed PyTorch must never answer torch.* while the alias is on
        sys.meta_path.insert(0, _TorchAliasFinder())
    # Eagerly, so that libraries that only *look* for torch in sys.modules (einops picks its
    # backend that way) find ember even before the script's own `import torch`.
    sys.modules[_TORCH] = sys.modules[_EMBER]
