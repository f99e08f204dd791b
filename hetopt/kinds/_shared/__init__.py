"""Pieces shared by several kinds (not a kind: no ``KIND`` here).

* :mod:`.assignment`: the unrelated-machine assignment block (``multicore``, ``cpu_gpu``).
"""
