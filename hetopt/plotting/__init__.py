"""Plots of hetopt results (matplotlib, the optional ``hetopt[plot]`` extra).

Every function takes an optional matplotlib ``ax`` and returns the axes it drew on, so
plots compose into a user's own figures (the PyVRP ``plotting`` convention)::

    import matplotlib.pyplot as plt
    import hetopt
    from hetopt.plotting import plot_allocation

    result = hetopt.solve("instances/gpu_cluster/example.json")
    fig, ax = plt.subplots()
    plot_allocation(result, ax=ax)
    fig.savefig("allocation.png")

matplotlib is imported only when a plot is drawn, so ``import hetopt.plotting`` works
without it.

Functions
---------
plot_allocation
    Heatmap of an ``allocation(job, worker_type, fraction)`` table (``gpu_cluster``).
plot_gantt
    Generic Gantt chart of a schedule table with ``task, resource, start_s, end_s``.
plot_utilisation
    Used share of each capacity per server (``<r>_used`` / ``<r>`` column pairs).
plot_pareto
    A makespan-energy (or any two-objective) Pareto front table.
plot_jct_cdf
    Empirical CDF of job completion times, one curve per policy (hours for long runs).
plot_selection
    Timeline of a federated-learning round: training and upload of each selected client.
plot_result
    Choose one of the above from what a :class:`hetopt.Result` contains.
"""

from __future__ import annotations

from .plots import (
    PLOT_NAMES,
    available_plots,
    plot_allocation,
    plot_gantt,
    plot_jct_cdf,
    plot_pareto,
    plot_result,
    plot_selection,
    plot_utilisation,
)

__all__ = [
    "PLOT_NAMES",
    "available_plots",
    "plot_allocation",
    "plot_gantt",
    "plot_jct_cdf",
    "plot_pareto",
    "plot_result",
    "plot_selection",
    "plot_utilisation",
]
