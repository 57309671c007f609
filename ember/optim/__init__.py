"""``ember.optim``: torch's optimizers and learning-rate schedulers."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .sgd import SGD


def __getattr__(name: str):
    # torch.optim imports swa_utils eagerly; ember loads it (and ember.nn) on first use
    if name == "swa_utils":
        import importlib

        return importlib.import_module(".swa_utils", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
           "LBFGS",
           "SGD",
           "Adadelta",
           "Adagrad",
           "Adam",
           "AdamW",
           "Adamax",
           "NAdam",
           "Optimizer",
           "RAdam",
           "RMSprop",
           "lr_scheduler",
           "swa_utils",
]
