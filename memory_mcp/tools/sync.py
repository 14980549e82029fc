"""`sync` and `git-setup`: the store's git exchange (store/sync.py), then the normal reconcile of what came in."""

from __future__ import annotations

import time
from dataclasses import asdict

from ..domain.models import GitSetupAnswer, SyncAnswer, SyncChanges
from ..store import arrivals
from ..store import sync as git_sync
from ..store.reconcile import PassRules
from ..store.session import exclusive, index_report
from .state import ServiceState


def sync(
    svc: ServiceState,
    options: git_sync.SyncOptions | None = None,
    scope: str | None = None,
    progress: git_sync.Progress | None = None,
) -> SyncAnswer:
    """Commit this store's canon, merge the remote's, push; then reconcile the index with what arrived."""
    s = svc.scopes.session(scope)
    before = arrivals.head(s.store.root)
    rewritten: set[str] = set()  # files the reconcile of what arrived wrote (a copy given an id of its own)

    def settle(merged: list[str]) -> None:
        """Under the lock the merge held: index what the merge wrote as merged (an archived memory whose text a
        merge changed stays archived; a teammate's new memory shown as theirs), before any other call sees it."""
        with s.transaction(rules=PassRules(merged=frozenset(merged))) as report:
            rewritten.update(r.partition(": ")[0] for r in report.renumbered)

    result = git_sync.sync(
        s.store.root, options or git_sync.SyncOptions(), progress, hold=lambda: exclusive(s), settle=settle
    )
    started = time.perf_counter()
    came = arrivals.receive(s.store, before)  # the list for the next context (reads git and ids, writes no memory)
    # what the merge wrote is no hand edit: an archived memory whose text a merge changed stays archived
    with s.transaction(rules=PassRules(merged=frozenset(result.arrived))) as report:
        index = index_report(s, report)
        rewritten.update(r.partition(": ")[0] for r in report.renumbered)
    reindex_seconds = round(time.perf_counter() - started, 4)
    if git_sync.pending_changes(s.store.root, among=set(result.arrived) | rewritten):
        # the reconcile rewrote what arrived (a copy given an id of its own): send that too, so one sync leaves
        # nothing of its own behind. What a server wrote meanwhile goes with the next sync: sending it now
        # would only start another exchange, which a busy server would never let end
        before = arrivals.head(s.store.root)
        again = git_sync.sync(s.store.root, git_sync.SyncOptions(options.remote, result.branch, options.push)
                              if options else git_sync.SyncOptions(branch=result.branch), progress,
                              hold=lambda: exclusive(s), settle=settle)  # fmt: skip
        came = arrivals.receive(s.store, before, also=came)
        with s.transaction(rules=PassRules(merged=frozenset(again.arrived))) as report:
            index = index_report(s, report)
        _fold(result, again)
    return SyncAnswer(
        repo=str(result.repo),
        remote=result.remote,
        branch=result.branch,
        sent=SyncChanges(**asdict(result.sent)),
        received=SyncChanges(**asdict(result.received)),
        surfaced=result.notes,
        setup=result.setup,
        pushed=result.pushed,
        push_attempts=result.push_attempts,
        memory_merges=result.memory_merges,
        merge_seconds=result.merge_seconds,
        git_seconds=result.git_seconds,
        reindex_seconds=reindex_seconds,
        seconds=round(result.seconds + reindex_seconds, 4),
        index=index,
        from_teammates=came.by_author(),
    )


def _fold(result: git_sync.SyncResult, again: git_sync.SyncResult) -> None:
    for kind in ("added", "edited", "archived", "removed", "other"):
        getattr(result.sent, kind).extend(getattr(again.sent, kind))
        getattr(result.received, kind).extend(getattr(again.received, kind))
    result.notes += again.notes
    result.pushed = result.pushed or again.pushed
    result.push_attempts += again.push_attempts
    result.memory_merges += again.memory_merges
    result.merge_seconds += again.merge_seconds
    result.git_seconds += again.git_seconds
    result.seconds += again.seconds


def git_setup(svc: ServiceState, scope: str | None = None) -> GitSetupAnswer:
    """Route the store's memory files through the merge driver in the git repository holding it (a project's
    `.memory/` inside the project's own repository), so plain `git pull`/`merge`/`rebase` merge them too."""
    _, store = svc.scopes.target(scope)
    git, _ = git_sync.open_repo(store.root)
    return GitSetupAnswer(repo=str(git.root), changed=git_sync.setup_repo(git, store.root))
