"""How long `sync` takes to bring 1,000 new and 100 edited memories into a 10k-memory store, against a plain
`git pull` of the same commits; and what the merge driver costs per file.

    python bench/sync_speed.py [--memories 10000] [--new 1000] [--edited 100] [--both-edited 0] [--driver-files 40]
                               [--no-server]

Builds (in a temp folder) a bare remote and two clones: the sender writes the new and edited memories and
pushes; then two identical copies of the receiver take them, one with `git pull`, one with
`memory-mcp sync` (its index warm first, as on a machine in use). Prints the total sync time split into git
(fetch, merge, push, status, commit) and our own work (everything else: staging decisions, summaries, the
reconcile of what arrived), and the merge of a file changed on both sides two ways: inside `sync` (in its own
process, `memory_merges`) and as the git merge driver a plain `git pull` runs in a `git-setup` repository (the
configured command, `store.sync.driver_command`, through the shell: a process per file). `--both-edited N`:
the receiver also edits N of the sender's edited memories before it syncs, so N files are merged both ways
(the plain pull runs the driver N times). Unless `--no-server`, a writer process on the receiver (the service a
server runs, remembering in a loop as fast as it can) runs beside the sync, as on a machine where an agent is at
work: the bench prints how many of its writes were acknowledged during the sync, its longest wait, and whether
every one is on disk afterwards. All figures are from this run; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_mcp.edges.merge_client import ask, helper_socket  # noqa: E402
from memory_mcp.edges.merge_helper import stop as stop_helper  # noqa: E402
from memory_mcp.store.sync import SyncOptions, driver_command  # noqa: E402
from memory_mcp.tools.service import MemoryService  # noqa: E402

WORDS = "postgres redis kafka deploy staging backup replica latency cache queue alice marco infra billing".split()
ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b"} | {
    "GIT_COMMITTER_EMAIL": "b@x"
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=ENV).stdout


def memory(n: int, body: str, updated: str = "2026-01-01T00:00:00Z") -> str:
    ident = f"01KH{n:022d}"
    words = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(8))
    return (
        f"---\nid: {ident}\ntype: fact\nstate: active\ntrust: user-stated\nentities: [{WORDS[n % len(WORDS)]}]\n"
        f"created: 2026-01-01T00:00:00Z\nupdated: {updated}\nsupersedes: []\nsuperseded_by: []\n---\n\n"
        f"# Memory {n} about {words}\n\n{body}\n\nSecond paragraph {n}.\n\nThird paragraph.\n"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--new", type=int, default=1_000)
    ap.add_argument("--edited", type=int, default=100)
    ap.add_argument("--both-edited", type=int, default=0)
    ap.add_argument("--driver-files", type=int, default=40)
    ap.add_argument("--no-server", action="store_true", help="no writer beside the sync")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sync-bench-"))
    try:
        run(tmp, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, args: argparse.Namespace) -> None:
    remote, sender, receiver = tmp / "remote.git", tmp / "sender", tmp / "receiver"
    git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
    (sender / "memories").mkdir(parents=True)
    for n in range(args.memories):
        (sender / "memories" / f"m-{n:06d}.md").write_text(memory(n, f"Body {n}."))
    svc = MemoryService(sender)
    svc.sync(SyncOptions(init_url=str(remote), branch="main"))
    svc.close()
    git(tmp, "clone", "-q", str(remote), str(receiver))
    rsvc = MemoryService(receiver)
    rsvc.sync(SyncOptions(branch="main"))  # set-up (driver, attributes) and the index, as on a machine in use
    rsvc.close()
    git(receiver, "commit", "-qam", "set-up", "--allow-empty")
    git(receiver, "push", "-q", "origin", "HEAD:main")
    git(sender, "pull", "-q", "origin", "main")
    for n in range(args.memories, args.memories + args.new):
        (sender / "memories" / f"m-{n:06d}.md").write_text(memory(n, f"Body {n}."))
    for n in range(args.edited):
        path = sender / "memories" / f"m-{n:06d}.md"
        path.write_text(memory(n, f"Body {n}, edited on the sender.", "2026-02-01T00:00:00Z"))
    git(sender, "add", "-A")
    git(sender, "commit", "-qm", "incoming")
    git(sender, "push", "-q", "origin", "HEAD:main")
    for n in range(min(args.both_edited, args.edited)):  # an edit on another line: a clean line merge
        path = receiver / "memories" / f"m-{n:06d}.md"
        path.write_text(memory(n, f"Body {n}.", "2026-01-15T00:00:00Z").replace("Third", "Third, receiver's"))
    if args.both_edited:
        git(receiver, "commit", "-qam", "edited here too")

    plain = tmp / "plain"
    shutil.copytree(receiver, plain, symlinks=True)
    started = time.perf_counter()
    git(plain, "pull", "-q", "--no-rebase", "origin", "main")
    pull_s = time.perf_counter() - started

    svc = MemoryService(receiver)
    svc.status()  # warm: the receiver's server has its index open
    writer = None if args.no_server else Writer(receiver, tmp)
    started = time.perf_counter()
    answer = svc.sync(SyncOptions())
    total = time.perf_counter() - started
    svc.close()
    written = writer.stop() if writer else None
    ours = total - answer.git_seconds
    got = answer.received
    print(f"store {args.memories} memories; incoming {args.new} new + {args.edited} edited")
    print(f"received: {len(got.added)} added, {len(got.edited)} edited")
    print("| step | seconds |")
    print("| --- | --- |")
    print(f"| plain `git pull` of the same commits | {pull_s:.2f} |")
    print(f"| `sync` total | {total:.2f} |")
    print(f"| of which git (fetch, merge, status, commit, push) | {answer.git_seconds:.2f} |")
    print(f"| of which our work (staging checks, summaries, reindex {answer.reindex_seconds:.2f} s) | {ours:.2f} |")
    print(f"| of which reindex | {answer.reindex_seconds:.2f} |")
    print(f"| sync beyond plain pull | {total - pull_s:.2f} |")
    if written is not None:
        ids, longest = written
        kept = sum(1 for i in ids if any((receiver / "memories").glob(f"*-{i[-6:].lower()}.md")))
        print(
            f"| writes a server beside it acknowledged meanwhile (all on disk after: {kept}/{len(ids)}) | {len(ids)} |"
        )
        print(f"| that writer's longest wait for one write | {longest:.2f} |")
    print(f"| files changed on both sides, merged in the sync process | {answer.memory_merges} |")
    if answer.memory_merges:
        per_file = answer.merge_seconds / answer.memory_merges * 1000
        print(f"| those merges (in process, git's line merge included), per file | {per_file:.1f} ms |")
    driver(tmp, args.driver_files)


WRITER = """
import sys, time
from pathlib import Path
from memory_mcp.tools.service import MemoryService
svc, stop, out = MemoryService(Path(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
ids, longest, n = [], 0.0, 0
svc.status()
print("ready", flush=True)
while not stop.exists():
    started = time.perf_counter()
    ids.append(svc.remember(f"Written beside the sync {n}", f"Server body {n}.", entities=["bench"]).id)
    longest, n = max(longest, time.perf_counter() - started), n + 1
out.write_text(f"{longest}\\n" + "\\n".join(ids))
svc.close()
"""


class Writer:
    """A process remembering on the receiver while the sync runs (what a server does when an agent writes)."""

    def __init__(self, store: Path, tmp: Path) -> None:
        self.stop_file, self.out = tmp / "writer.stop", tmp / "writer.out"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), str(self.stop_file), str(self.out)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> tuple[list[str], float]:
        self.stop_file.touch()
        self.proc.wait(timeout=120)
        longest, *ids = self.out.read_text().splitlines()
        return ids, float(longest)


def driver(tmp: Path, files: int) -> None:
    """The driver as git runs it: the configured command through the shell, `%O %A %B %P` filled in, one
    process per file, on a memory edited on both sides (frontmatter and body, a clean line merge). Three ways:
    the first file (no helper alive: the client becomes the full driver, which then stays as the helper), the
    next files (the client hands them to that warm helper), and the older command (a full driver per file)."""
    work = tmp / "driver"
    (work / "memories").mkdir(parents=True)
    base = memory(1, "Body 1.\n\nMiddle.\n\nEnd.")
    ours = memory(1, "Body 1, ours.\n\nMiddle.\n\nEnd.", "2026-02-01T00:00:00Z").replace("[", "[staging, ", 1)
    theirs = memory(1, "Body 1.\n\nMiddle.\n\nEnd, theirs.", "2026-03-01T00:00:00Z")

    def timed(command: str, n: int) -> tuple[list[float], list[float]]:
        line = command.replace("%O", "O").replace("%A", "A").replace("%B", "B").replace("%P", "memories/m.md")
        times, cpu = [], []
        for _ in range(n):
            for name, text in (("O", base), ("A", ours), ("B", theirs)):
                (work / name).write_text(text)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(line, shell=True, cwd=work, check=True)
            times.append(time.perf_counter() - started)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return sorted(times), sorted(cpu)

    sock = helper_socket()
    if sock is not None:
        stop_helper(sock)  # the first file below starts from no helper, as the first merge of a pull does
    first, _ = timed(driver_command(), 1)
    if sock is not None:
        wait_for_helper(sock)
    times, cpu = timed(driver_command(), files)
    if sock is not None:
        stop_helper(sock)  # the bench leaves no process behind
    older, older_cpu = timed(f"{shlex.quote(sys.executable)} -P -m memory_mcp merge-driver %O %A %B %P", files // 2)
    python = []
    for _ in range(10):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        python.append(time.perf_counter() - started)
    python.sort()
    print(f"driver command: {driver_command()}")
    print(
        f"| merge driver, first file of a merge (the full driver, which stays as the helper) | {_ms(first, 0.5)} ms |"
    )
    print(f"| merge driver per file, next files, median of {files} (process start included) | {_ms(times, 0.5)} ms |")
    print(f"| merge driver per file, next files, p95 | {_ms(times, 0.95)} ms |")
    print(
        f"| CPU per file of the shell and client (the helper's merge is not counted: not a child), median | {_ms(cpu, 0.5)} ms |"
    )
    print(f"| older command, a full driver per file, median of {files // 2} | {_ms(older, 0.5)} ms |")
    print(f"| older command, CPU per file, median | {_ms(older_cpu, 0.5)} ms |")
    print(f"| bare `python -c pass` start, median | {_ms(python, 0.5)} ms |")


def wait_for_helper(sock: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and ask(sock, ["status"]) is None:
        time.sleep(0.01)


def _ms(values: list[float], quantile: float) -> str:
    return f"{values[min(len(values) - 1, int(len(values) * quantile))] * 1000:.0f}"


if __name__ == "__main__":
    main()
