"""`memory-mcp merge-driver %O %A %B %P`: the git merge driver for memory files and dictionary.md.

git runs it once per file changed on both sides, from the top of the work tree, and reads the result from
%A. It exits 0 with the merged file, or 1 on any internal error (git then marks the file conflicted with ours
in place, never stuck). Files it adds beside the merged one (a kept second memory) are written into the work
tree. This is the path of a plain `git pull`/`merge`/`rebase` in a repository `git-setup` configured; `sync`
merges the same files with the same code (`canon/merge.py`) in its own process instead of a process per file.

git's configured command is the small client `edges/merge_client.py`, which hands the merge to a warm
helper (`edges/merge_helper.py`) and, with none alive, becomes this driver: `python -P -m memory_mcp
merge-driver --helper SOCKET ...` runs `run` below, which merges the file and then stays as that helper. It
imports only this module's few needs, so no CLI, service, pydantic, MCP SDK or PyYAML
(tests/test_sync_driver_entry.py checks the modules it loads). `-P` keeps the work tree git runs it in off
`sys.path`: a project's own `signal.py` or `memory_mcp/` must not stand in for the installed modules. Older
configured commands (`python -P -m memory_mcp merge-driver %O %A %B %P`) run the same merge, a process per file.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path, PurePosixPath

USAGE = 2
USAGE_LINE = "usage: memory-mcp merge-driver BASE OURS THEIRS PATH (git's %O %A %B %P)"
HELP = f"""{USAGE_LINE}

The git merge driver for memory files and dictionary.md: git runs it once per file changed on both sides and
reads the merged file from OURS. `memory-mcp git-setup` configures it; you do not run it by hand."""


def run(argv: list[str]) -> None:
    """The driver's own process (`python -m memory_mcp merge-driver [--helper SOCKET] ...`): merge, then leave
    at once, or stay as the warm helper for the next files when git's client asked for one."""
    gc.disable()  # a short process that frees nothing worth collecting: collections during the imports are pure cost
    helper = None
    if argv[:1] == ["--helper"] and len(argv) >= 2:
        helper, argv = argv[1], argv[2:]
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    if helper is not None and code != USAGE:
        from .merge_helper import stay_as_helper

        stay_as_helper(helper, main)  # git gets this process's exit now; a forked child serves the next files
    # skip the interpreter's teardown (a few ms of freeing modules): every file written is closed by now
    os._exit(code)


def main(argv: list[str], root: Path | None = None) -> int:
    """Merge git's %O %A %B into %A for the file at %P; `root` is the work tree's top (git's working
    directory, given by the helper, which serves many work trees from one process)."""
    if argv[:1] in (["-h"], ["--help"]):
        print(HELP)
        return 0
    if len(argv) != 4:
        print(USAGE_LINE, file=sys.stderr)
        return USAGE
    top = root or Path()
    base_file, ours_file, theirs_file = (top / name for name in argv[:3])
    rel = argv[3]
    try:
        # imported here, after `run` turned the collector off, and inside the guard: a broken install is an
        # internal error like any other (exit 1), never a stuck merge
        from ..canon import files as canon
        from ..canon import merge
        from ..store.git import merge_lines

        base, ours, theirs = base_file.read_bytes(), ours_file.read_bytes(), theirs_file.read_bytes()
        folder = top / PurePosixPath(rel).parent
        if PurePosixPath(rel).name == "dictionary.md":
            outcome = merge.merge_dictionary(base, ours, theirs, merge_lines)
        else:
            outcome = merge.merge_memory(
                base, ours, theirs, merge_lines, name_taken=lambda name: os.path.lexists(folder / name)
            )
        for extra in outcome.extra:
            canon.atomic_write(folder / extra.name, extra.data)
        ours_file.write_bytes(outcome.data)
        return 0
    except Exception as exc:  # whatever happens, git must not be left stuck: say why, exit non-zero
        print(f"memory-mcp merge-driver: {rel}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
