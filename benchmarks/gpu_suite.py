"""Every GPU figure of the project in one command (``jaxsoc.gpu_suite``); the same as ``jaxsoc bench --suite gpu``.

    PYTHONPATH=. python3 benchmarks/gpu_suite.py                      # every part: 25 minutes of budgets
    PYTHONPATH=. python3 benchmarks/gpu_suite.py --quick              # throughput parts only, <= 8 minutes
    PYTHONPATH=. python3 benchmarks/gpu_suite.py --time-limit 560     # where a command may run 10 minutes: repeat
    python benchmarks/gpu_suite.py --toy                              # toy sizes on a CPU (into a temp dir)

Rows go to ``benchmarks/results/gpu_<part>.json`` and the generated GPU section of ``benchmarks/RESULTS.md``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout's jaxsoc, without PYTHONPATH

from jaxsoc.gpu_suite import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
