import os
import sys
from pathlib import Path

os.environ["HETOPT_CHECK_CONTRACT"] = "1"  # benchmarks keep the kind contract too

sys.path.insert(0, str(Path(__file__).parent))
