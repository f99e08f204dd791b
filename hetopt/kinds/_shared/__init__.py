"""Pieces shared by several kinds (not a kind: no ``KIND`` here).

* :mod:`.arguments`: the checks of the generators' size, fraction, rate and seed
  arguments (and :data:`~.arguments.MAX_GENERATED`).
* :mod:`.assignment`: the unrelated-machine assignment block (``multicore``, ``cpu_gpu``).
* :mod:`.validation`: duplicate-id checks of the instance models.
* :mod:`.cli`: the ``-o/--output`` and ``--seed`` options of the ``generate`` commands.
"""
