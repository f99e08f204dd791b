from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"

# every result the tests produce must keep the kind contract: an undeclared or mistyped
# ``info`` entry is an error here (a debug message for users)
os.environ["HETOPT_CHECK_CONTRACT"] = "1"


@pytest.fixture
def instances_dir() -> Path:
    return INSTANCES
