"""`memory-mcp merge-driver %O %A %B %P`: the git merge driver for memory files and dictionary.md.

git runs it once per file changed on both sides, from the top of the work tree, and reads the result from
%A. It exits 0 with the merged file, or 1 on any internal error (git then marks the file conflicted with ours
in place, never stuck; `sync` resolves such a file by keeping both). Files it adds beside the merged one (a
kept second memory) are written into the work tree; under `sync` it also appends what it did to the spool
file `sync` names in MEMORY_MCP_MERGE_SPOOL, so the merge commit includes them and the report tells them.

Started as `python -P -m memory_mcp merge-driver` (`store/sync.driver_command`), which runs `run` below
and imports only this module's few needs: a process per file, so no CLI, service, pydantic, MCP SDK or PyYAML
(tests/test_sync_driver_entry.py checks the modules it loads). `-P` keeps the work tree git runs it in off
`sys.path`: a project's own `signal.py` or `memory_mcp/` must not stand in for the installed modules.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path, PurePosixPath

SPOOL_ENV = "MEMORY_MCP_MERGE_SPOOL"


def run(argv: list[str]) -> None:
    """The driver's own process (`python -m memory_mcp merge-driver ...`): merge, then leave at once."""
    gc.disable()  # a short process that frees nothing worth collecting: collections during the imports are pure cost
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # skip the interpreter's teardown (a few ms of freeing modules): every file written is closed by now
    os._exit(code)


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    if len(argv) != 4:
        print("usage: memory-mcp merge-driver BASE OURS THEIRS PATH (git's %O %A %B %P)", file=sys.stderr)
        return 2
    base_file, ours_file, theirs_file, rel = argv
    record: dict[str, object] = {"path": rel, "extra": [], "notes": []}
    try:
        # imported here, after `run` turned the collector off, and inside the guard: a broken install is an
        # internal error like any other (exit 1, spooled), never a stuck merge
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
        spool = os.environ.get(SPOOL_ENV)
        for extra in outcome.extra:
            extra_rel = (PurePosixPath(rel).parent / extra.name).as_posix()
            # under sync, added files wait beside the spool: the same copy may be arriving from the other side
            # (a clash already settled there), and git must not find it in its way
            canon.atomic_write(Path(spool + ".files", extra_rel) if spool else folder / extra.name, extra.data)
            record["extra"].append(extra_rel)  # type: ignore[union-attr]
        Path(ours_file).write_bytes(outcome.data)
        record["notes"] = outcome.notes
        code = 0
    except Exception as exc:  # whatever happens, git must not be left stuck: say why, exit non-zero
        print(f"memory-mcp merge-driver: {rel}: {type(exc).__name__}: {exc}", file=sys.stderr)
        record["error"] = f"{type(exc).__name__}: {exc}"
        code = 1
    record["seconds"] = round(time.perf_counter() - started, 6)
    spool = os.environ.get(SPOOL_ENV)
    if spool:
        with open(spool, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return code
