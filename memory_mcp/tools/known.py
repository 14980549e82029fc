"""Which texts a store already holds: the duplicate check memory_remember runs, asked ahead of writing.

An import's dry run and its dedupe use it. The key is remember's own: the sha256 of the normalised
title and body (`canon.norm_hash`), which is derived from each memory file's content, so it survives
deleting `.index/`. Unlike remember, a deprecated memory counts as present: re-importing must not bring
back what someone retracted. Nothing is written; a store that does not exist yet holds nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..canon import files as canon
from ..index import db as ix
from .state import ServiceState


@dataclass(frozen=True)
class Known:
    """One text's dedupe key and the memory already holding it (None: remember would create it)."""

    norm_hash: str
    existing_id: str | None


def known(
    svc: ServiceState, texts: Sequence[tuple[str, str]], store: str | None = None, scope: str | None = None
) -> list[Known]:
    """For each (title, body), as remember would check it (argument limits applied first: InputError)."""
    hashes = [canon.norm_hash(svc.limits.title(title), svc.limits.body(body)) for title, body in texts]
    if svc.missing_stores(scope, store, home=True):
        return [Known(h, None) for h in hashes]
    s = svc.scopes.session(scope, store)
    with s.transaction():
        found = {}
        for h in dict.fromkeys(hashes):
            mem = ix.find_by_norm_hash(s.conn, h, include_deprecated=True)
            found[h] = mem.id if mem is not None else None
    return [Known(h, found[h]) for h in hashes]
