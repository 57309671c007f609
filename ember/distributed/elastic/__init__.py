"""``torch.distributed.elastic``: the part of torchelastic a training script touches.

ember's launcher (``python -m ember.distributed.run``) starts jobs with MPI rather than an
elastic agent, so only the worker-side API is here: ``multiprocessing.errors.record``.
"""
