"""Token-size distributions from the Azure LLM inference trace 2023 (Splitwise).

Quantiles (every 2.5 %, 41 values) of two columns of the public trace, used by the
generator to draw realistic sizes by inverse-CDF sampling with linear interpolation:

* :data:`CONTEXT_QUANTILES`: ``ContextTokens`` of ``AzureLLMInferenceTrace_code.csv``
  (the first prompt of a coding agent's session);
* :data:`GENERATED_QUANTILES`: ``GeneratedTokens`` of ``AzureLLMInferenceTrace_conv.csv``
  (what one call of the agent generates).

Source: ``Azure/AzurePublicDataset``, ``data/AzureLLMInferenceTrace_{code,conv}.csv``,
licensed CC BY 4.0. Attribution: P. Patel, E. Choukse, C. Zhang, A. Shah, Í. Goiri,
S. Maleki, R. Bianchini, "Splitwise: Efficient generative LLM inference using phase
splitting", ISCA 2024. The quantiles are derived (adapted) material; how they were
computed, the licence text and the copy of the quantiles are in
``instances/agent_sessions/README.md``. Pause lengths are NOT from this trace: they are
synthetic (see :mod:`.generate`).
"""

from __future__ import annotations

import numpy as np

CONTEXT_QUANTILES = (
    3, 44, 75, 102, 147, 185, 232, 299, 386, 484, 578, 679, 770, 863, 939, 1016, 1075,
    1153, 1261, 1370, 1469, 1585, 1690, 1798, 1909, 2048, 2164, 2305, 2433, 2578, 2744,
    2942, 3192, 3538, 3920, 4434, 5188, 6097, 7303, 7435, 7437,
)  # fmt: skip
GENERATED_QUANTILES = (
    7, 28, 41, 48, 54, 60, 67, 72, 77, 82, 85, 88, 91, 93, 96, 99, 103, 108, 113, 120, 129,
    139, 151, 162, 177, 195, 217, 373, 384, 391, 395, 396, 400, 406, 411, 416, 424, 430,
    451, 522, 1000,
)  # fmt: skip


def sample(quantiles: tuple[int, ...], rng: np.random.Generator, size: int) -> np.ndarray:
    """``size`` integer draws from the empirical distribution given by ``quantiles``."""
    q = np.asarray(quantiles, dtype=float)
    u = rng.uniform(0.0, 1.0, size) * (len(q) - 1)
    lo = np.floor(u).astype(int)
    hi = np.minimum(lo + 1, len(q) - 1)
    return np.maximum(1, np.rint(q[lo] + (u - lo) * (q[hi] - q[lo]))).astype(np.int64)
