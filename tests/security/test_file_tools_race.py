"""Finding 6: a parent folder swapped for a symlink to an outside folder while the file tools run.

A separate process exchanges `proj/sub` (a real folder) with `proj/alt` (a symlink to a folder
outside the project) in a tight loop — renameat2(RENAME_EXCHANGE), so at every instant one of the two
names is the link — while this process makes many read_file, write_file and edit_file calls through
`sub/`. Each call may fail (the path leads outside, or changed while in use), but none may ever return
the outside file's bytes or change anything outside.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tool_helpers import call

from mino_server.core.cancel import CancelToken
from mino_server.core.tools.base import COMPLETED, ToolContext, ToolFailure
from mino_server.core.tools.files import EditFileTool, ReadFileTool, WriteFileTool

INSIDE, OUTSIDE = "inside\n", "OUTSIDE SECRET\n"
SAME = "the same bytes on both sides\n"  # so the approval state matches wherever the write lands
CALLS = 3000  # a third of each kind; the old code leaked on up to a few percent of them, never on none

# Exchange two names atomically (renameat2 RENAME_EXCHANGE through libc); where that is missing or
# unsupported, three renames do the same non-atomically, which still races.
SWAPPER = r"""
import ctypes, os, sys
a, b, stop = sys.argv[1:4]
libc = ctypes.CDLL(None, use_errno=True)
fn = getattr(libc, "renameat2", None)

def exchange():
    if fn is not None and fn(-100, a.encode(), -100, b.encode(), 2) == 0:
        return True
    return False

atomic = exchange()
n = 1
while True:
    if atomic:
        exchange()
    else:
        os.rename(a, a + ".swap"); os.rename(b, a); os.rename(a + ".swap", b)
    n += 1
    if n % 128 == 0 and os.path.exists(stop):
        break
print(n, "atomic" if atomic else "renames")
"""


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_swapped_parent_folder_never_leads_outside(tmp_path: Path) -> None:
    wd, outside = tmp_path / "proj", tmp_path / "outside"
    (wd / "sub").mkdir(parents=True)
    outside.mkdir()
    (wd / "sub" / "f.txt").write_text(INSIDE)
    (outside / "f.txt").write_text(OUTSIDE)
    for folder in (wd / "sub", outside):
        (folder / "same.txt").write_text(SAME)
        (folder / "toggle.txt").write_text("A\n")
    (wd / "alt").symlink_to(outside)
    before = snapshot(outside)
    wd = wd.resolve()
    ctx = ToolContext(
        workdir=wd, home=tmp_path / "home", memory_dir=tmp_path / "home" / "memory", cancel=CancelToken()
    )
    read, write, edit = ReadFileTool(), WriteFileTool(), EditFileTool()
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(wd / "sub"), str(wd / "alt"), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    leaks: list[str] = []
    completed = {"read": 0, "write": 0, "edit": 0}
    toggle = "A\n"
    try:
        time.sleep(0.05)  # let the swapping start
        for i in range(CALLS):
            kind = ("read", "write", "edit")[i % 3]
            try:
                if kind == "read":
                    result = call(read, {"path": "sub/f.txt"}, ctx)
                    if result.output != INSIDE:
                        leaks.append(f"read_file returned {result.output!r}")
                elif kind == "write" and i % 2:
                    result = call(write, {"path": "sub/same.txt", "content": SAME, "mode": "overwrite"}, ctx)
                elif kind == "write":
                    result = call(
                        write, {"path": f"sub/new-{i}.txt", "content": "new\n", "mode": "create"}, ctx
                    )
                else:
                    new = "B\n" if toggle == "A\n" else "A\n"
                    result = call(edit, {"path": "sub/toggle.txt", "old_text": toggle, "new_text": new}, ctx)
                    toggle = new
                assert result.status == COMPLETED
                completed[kind] += 1
            except ToolFailure as failure:
                assert "Traceback" not in str(failure) and "\n" not in str(failure), str(failure)
                if kind == "edit" and "old_text was not found" in str(failure):
                    toggle = "B\n" if toggle == "A\n" else "A\n"  # an earlier edit did land: follow it
    finally:
        stop.touch()
        try:
            out, _ = swapper.communicate(timeout=10)
        finally:
            if swapper.poll() is None:
                swapper.kill()
                swapper.wait()
    swaps = int(out.split()[0])
    assert swaps > CALLS, f"the swapper barely ran ({out.strip()}): the race was not exercised"
    assert completed["read"] > 0 and completed["write"] > 0, completed  # the tools still work meanwhile
    after = snapshot(outside)
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert (leaks, changed) == ([], []), f"{len(leaks)} reads leaked; written outside: {changed[:5]}"
