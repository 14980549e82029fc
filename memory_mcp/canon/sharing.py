"""What may leave this machine: the one rule sync applies before it stages a memory file and before it pushes.

A memory file is shared only when it parses, its frontmatter does not say `sync: local`, nothing in it says it
might have meant to (`sync: locall`, `snyc: local`: its privacy cannot be told), and no line of it, frontmatter
included, looks like a credential. A file that fails any of these stays on this machine: sync leaves it
unstaged and names it with the reason, and the pre-push check refuses any outgoing commit that holds one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..domain.secrets import SecretScanner
from . import files as canon

# the values `sync:` may take; anything else is a typo whose intent cannot be told
SHARED_VALUES = frozenset({"", "shared", "share", "true", "yes", "none"})


@dataclass(frozen=True)
class Withheld:
    """Why one memory file may not leave this machine; `private` when it says so itself (`sync: local`)."""

    reason: str
    private: bool = False


def blob_id(data: bytes) -> str:
    """git's object name of a blob holding `data` (sha1 of its header and bytes): a scanned file is not scanned
    twice in one sync, whether it is met in the work tree or as an outgoing blob."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def is_local_only(data: bytes) -> bool:
    """The memory's frontmatter says `sync: local`: it stays on this machine."""
    try:
        meta, _, _ = canon.split(canon.decode(data), round_trip=False)
    except canon.CanonError:
        return False
    return str(meta.get(canon.SYNC_FIELD) or "").strip() == canon.SYNC_LOCAL


def withheld(data: bytes, scanner: SecretScanner) -> Withheld | None:
    """Why this memory file must stay on this machine, or None when it may be shared."""
    try:
        text = canon.decode(data)
        meta, _, _ = canon.split(text, round_trip=False)
        canon.parse(data, "", "")
    except canon.CanonError as exc:
        return Withheld(f"it cannot be parsed ({exc}), so whether it is private cannot be told")
    said = str(meta.get(canon.SYNC_FIELD) if meta.get(canon.SYNC_FIELD) is not None else "").strip()
    if said == canon.SYNC_LOCAL:
        return Withheld("it is private (`sync: local`)", private=True)
    if said.lower() not in SHARED_VALUES:
        return Withheld(
            f"`{canon.SYNC_FIELD}: {said[:40]}` is neither `local` nor empty: whether it is private cannot be told"
        )
    for key, value in meta.items():
        if key != canon.SYNC_FIELD and str(value).strip().lower() == canon.SYNC_LOCAL:
            return Withheld(f"its field `{str(key)[:40]}: local` may be a misspelt `sync: local`")
    found = scanner.scan(text)
    if found:
        where = ", ".join(f"{kind} in {place}" for kind, place in found[:3])
        return Withheld(f"it holds what looks like a secret ({where})")
    return None
