"""Executes the ratelab notebooks headless (nbclient), as CI does.

    python3 notebooks/run_notebooks.py [--reports DIR] [--save DIR] [NOTEBOOK...]

--reports sets RATELAB_REPORTS for the kernels (default: the notebooks'
own default, ../reports). --save writes the executed copies there. Exits 1
naming the notebook and cell that failed.
"""

import argparse
import os
import sys

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = [
    "estimator_sizing.ipynb",
    "windows.ipynb",
    "pacers.ipynb",
    "decision_harm.ipynb",
    "rate_limit_sizing.ipynb",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", help="folder of report folders (sets RATELAB_REPORTS)")
    ap.add_argument("--save", help="folder for the executed notebooks")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    ap.add_argument("notebooks", nargs="*", default=DEFAULT)
    args = ap.parse_args()
    if args.reports:
        os.environ["RATELAB_REPORTS"] = os.path.abspath(args.reports)
    failed = 0
    for name in args.notebooks:
        path = name if os.path.isabs(name) else os.path.join(HERE, name)
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(
            nb,
            timeout=args.timeout,
            kernel_name="python3",
            resources={"metadata": {"path": HERE}},
        )
        try:
            client.execute()
            print(f"ok   {name}")
        except CellExecutionError as e:
            failed += 1
            print(f"FAIL {name}: {str(e)[-2000:]}", file=sys.stderr)
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            nbformat.write(nb, os.path.join(args.save, os.path.basename(path)))
    if failed:
        print(f"{failed} notebook(s) failed", file=sys.stderr)
        return 1
    print(f"{len(args.notebooks)} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
