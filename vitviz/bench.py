"""``python -m vitviz.bench [--json] [--quick]``: how fast vitviz is, in one run.

The harness (app servers, Chromium, timm and Hugging Face peers) is not part of the library: it
lives in the repository's ``benchmarks/`` folder, and this command runs it from a clone.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    try:
        from benchmarks import bench as harness  # beside vitviz/ in a clone, not in the package
    except ModuleNotFoundError as err:
        if err.name not in ("benchmarks", "benchmarks.bench"):
            raise
        print(
            "error: the benchmarks live in the vitviz repository (benchmarks/): run python -m vitviz.bench "
            "from the root of a clone.",
            file=sys.stderr,
        )
        return 2
    return harness.main(argv)


if __name__ == "__main__":
    sys.exit(main())
