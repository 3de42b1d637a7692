"""One process's bash tool in bwrap, a call at a time, for bench/run.py's paired per-call rows.

Run with the tree to measure on PYTHONPATH (another tree's `mino_server`, the same interpreter):
argv is the working directory and MINO_HOME. It probes the sandbox, makes five calls that are not
counted, prints "ready", then for each line on stdin runs `echo hi` (prepare + run, in bwrap) and
prints its wall time in ms. The harness alternates the workers of several trees call by call, so a
drift of the machine falls on all of them alike.
"""

import os
import sys
import time
from pathlib import Path

from mino_server.core.cancel import CancelToken
from mino_server.core.tools import sandbox
from mino_server.core.tools.base import ToolContext
from mino_server.core.tools.bash import BashTool


def main() -> None:
    tree = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
    used = sys.modules[BashTool.__module__].__file__ or ""
    if tree and not os.path.realpath(used).startswith(os.path.realpath(tree) + os.sep):
        # An older tree without these modules: the import fell through to the installed package.
        sys.exit(f"{tree} has no mino_server.core.tools.bash (got {used})")
    box, line = sandbox.detect()
    if box is None:
        sys.exit(f"no sandbox: {line}")
    work, home = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    ctx = ToolContext(workdir=work, home=home, memory_dir=home / "memory", cancel=CancelToken(), sandbox=box)
    tool = BashTool()

    def call() -> float:
        started = time.perf_counter()
        args = tool.validate({"command": "echo hi"})
        result = tool.run(args, ctx, tool.prepare(args, ctx))
        if not result.output.startswith("hi\n"):
            sys.exit(f"bash echo hi in bwrap: {result.output!r}")
        return (time.perf_counter() - started) * 1000

    for _ in range(5):
        call()
    print("ready", flush=True)
    for _ in sys.stdin:
        print(f"{call():.4f}", flush=True)


if __name__ == "__main__":
    main()
