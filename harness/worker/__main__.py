"""`python -m harness.worker JOB.json`: one run of a campaign in a fresh process (harness/worker/main.py)."""
from __future__ import annotations

import sys

from harness.worker.main import main

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m harness.worker JOB.json")
    sys.exit(main(sys.argv[1]))
