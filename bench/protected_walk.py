"""The protected-folder walk bash runs twice per command (mino_server/core/tools/protected.py).

    python bench/protected_walk.py [--runs N]

Builds two trees in a temporary folder — 20,000 and 200,000 empty files, 10 per folder, three
levels of folders, one nested `.git` — and times protected.find() on each, plus the empty folder
bench/run.py's tool rows use: the first walk of a process (every folder listed) and the next ones
(the kept walk checked folder by folder). Prints a Markdown table (median and max, ms) for
bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mino_server.core.tools import protected  # noqa: E402


def make_tree(root: Path, files: int) -> None:
    made = folder = 0
    while made < files:
        d = root / f"a{folder % 20}" / f"b{(folder // 20) % 20}" / f"c{folder // 400}"
        d.mkdir(parents=True, exist_ok=True)
        for i in range(10):
            (d / f"f{i}.txt").touch()
        made += 10
        folder += 1
    (root / "a0" / "b0" / ".git").mkdir()


def timed(root: Path, runs: int, fresh: bool) -> tuple[protected.Found, list[float]]:
    times = []
    found = protected.find(root)
    for _ in range(runs):
        if fresh:
            protected._walkers.clear()  # a new process's first command: the whole tree is listed
        start = time.perf_counter()
        found = protected.find(root)
        times.append((time.perf_counter() - start) * 1000)
    return found, times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    print(f"nproc {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}")
    print("| tree | entries | complete | first walk, median ms | max | next walks, median ms | max |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for label, files in (("empty folder", 0), ("20,000 files", 20_000), ("200,000 files", 200_000)):
            root = Path(tmp) / str(files)
            root.mkdir()
            if files:
                make_tree(root, files)
            # Folders changed in the last 3 s are listed every time (TRUST_AFTER_NS): let them age.
            time.sleep(protected._Walker.TRUST_AFTER_NS / 1e9 + 0.5)
            found, first = timed(root, runs, fresh=True)
            _, kept = timed(root, runs, fresh=False)
            print(
                f"| {label} | {found.entries:,} | {'yes' if found.complete else 'no (asks)'} "
                f"| {statistics.median(first):.2f} | {max(first):.2f} "
                f"| {statistics.median(kept):.2f} | {max(kept):.2f} |"
            )


if __name__ == "__main__":
    main()
