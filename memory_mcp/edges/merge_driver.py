"""`memory-mcp merge-driver %O %A %B %P`: the git merge driver for memory files and dictionary.md.

git runs it once per file changed on both sides, from the top of the work tree, and reads the result from
%A. It exits 0 with the merged file, or 1 on any internal error (git then marks the file conflicted with ours
in place, never stuck). Files it adds beside the merged one (a kept second memory) are written into the work
tree. This is the path of a plain `git pull`/`merge`/`rebase` in a repository `git-setup` configured; `sync`
merges the same files with the same code (`canon/merge.py`) in its own process instead of a process per file.

Started as `python -P -m memory_mcp merge-driver` (`store/sync.driver_command`), which runs `run` below
and imports only this module's few needs: a process per file, so no CLI, service, pydantic, MCP SDK or PyYAML
(tests/test_sync_driver_entry.py checks the modules it loads). `-P` keeps the work tree git runs it in off
`sys.path`: a project's own `signal.py` or `memory_mcp/` must not stand in for the installed modules.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path, PurePosixPath


def run(argv: list[str]) -> None:
    """The driver's own process (`python -m memory_mcp merge-driver ...`): merge, then leave at once."""
    gc.disable()  # a short process that frees nothing worth collecting: collections during the imports are pure cost
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # skip the interpreter's teardown (a few ms of freeing modules): every file written is closed by now
    os._exit(code)


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: memory-mcp merge-driver BASE OURS THEIRS PATH (git's %O %A %B %P)", file=sys.stderr)
        return 2
    base_file, ours_file, theirs_file, rel = argv
    try:
        # imported here, after `run` turned the collector off, and inside the guard: a broken install is an
        # internal error like any other (exit 1), never a stuck merge
        from ..canon import files as canon
        from ..canon import merge
        from ..store.git import merge_lines

        base = Path(base_file).read_bytes()
        ours, theirs = Path(ours_file).read_bytes(), Path(theirs_file).read_bytes()
        folder = Path(PurePosixPath(rel).parent)
        if PurePosixPath(rel).name == "dictionary.md":
            outcome = merge.merge_dictionary(base, ours, theirs, merge_lines)
        else:
            outcome = merge.merge_memory(
                base, ours, theirs, merge_lines, name_taken=lambda name: os.path.lexists(folder / name)
            )
        for extra in outcome.extra:
            canon.atomic_write(folder / extra.name, extra.data)
        Path(ours_file).write_bytes(outcome.data)
        return 0
    except Exception as exc:  # whatever happens, git must not be left stuck: say why, exit non-zero
        print(f"memory-mcp merge-driver: {rel}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
