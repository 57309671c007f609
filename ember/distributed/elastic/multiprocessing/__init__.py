"""``torch.distributed.elastic.multiprocessing``: only its ``errors`` module (``record``).

torch's ``start_processes`` is the agent's way to start workers; under ember, mpiexec starts
them (see ``ember.distributed.run``).
"""
