"""Training mode (placeholder)."""
from __future__ import annotations
from ...contract import RunMethodBase
class MinStageTime(RunMethodBase):
    pass
class MinIterationTime(RunMethodBase):
    pass
