"""Where a memory came from (its `origin:` line) and which trust levels only a person gives.

The origin is one readable line in the frontmatter, written by the surface that made the memory:

    origin: mcp claude-code 2.1.337                      # a tool call; the client's name and version (clientInfo)
    origin: mcp claude-code 2.1.337 (static token)       # over HTTP: the authenticated principal too
    origin: mcp cursor 1.2 (token subject alice)         #   (an OAuth token's subject)
    origin: cli                                          # memory-mcp remember
    origin: browser view
    origin: import mem0 export.json                      # an importer and its source file
    origin: sync from Ana <ana@example.com>; mcp claude-code 2.1.337   # arrived by sync: the git author, then
                                                                       # what the sender's file said
A file without the line was written before origins were recorded (or by hand): it says "origin unknown", never
a guess. A file a person adds by hand is told apart by reconcile in the index only ("hand edit"): the server
never rewrites a file the person is editing just to label it.

Plain dataclasses, no pydantic: the canon and the merge driver import this.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

UNKNOWN = "origin unknown"
_PART_CHARS = 60  # a client's name, a version, an author: short, whatever the sender says
_KEEP = set(" ._-+@/<>()'")


class Surface(StrEnum):
    MCP = "mcp"
    CLI = "cli"
    WEB = "browser view"
    IMPORT = "import"
    HAND = "hand edit"
    SYNC = "sync from"
    OTHER = "other"  # a line written by hand that names none of these: shown as written


# the surfaces a person works through: only they may give a trust level a person gives (PERSON_TRUSTS)
PERSON_SURFACES = frozenset({Surface.CLI, Surface.WEB, Surface.HAND})


def clean(text: str, limit: int = _PART_CHARS) -> str:
    """A name a client or a git author chose, made safe for a one-line label: letters, digits and a few signs
    (no newline, no control or invisible character, no `#` that YAML would read as a comment), at most `limit`."""
    kept = "".join(c if unicodedata.category(c)[0] in "LN" or c in _KEEP else " " for c in text)
    kept = " ".join(kept.split())
    return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Origin:
    surface: Surface
    detail: str = ""  # mcp: the client's name and version; import: the format and file; sync from: the author
    principal: str = ""  # mcp over HTTP: "static token", "token subject alice", "token client x"
    earlier: Origin | None = None  # sync from: the origin the sender's file recorded (None: it said none)

    @property
    def text(self) -> str:
        """The frontmatter line's value."""
        if self.surface is Surface.OTHER:
            return self.detail
        out = self.surface.value + (f" {self.detail}" if self.detail else "")
        if self.surface is Surface.MCP:
            out = f"mcp {self.detail or '(client unnamed)'}" + (f" ({self.principal})" if self.principal else "")
        if self.surface is Surface.SYNC and self.earlier is not None:
            out += f"; {self.earlier.text}"
        return out

    @property
    def by_person(self) -> bool:
        return self.surface in PERSON_SURFACES

    @property
    def client(self) -> str:
        """Who wrote it, in a few words: the MCP client, `the CLI`, the teammate a sync brought it from."""
        if self.surface is Surface.MCP:
            return self.detail or "an unnamed MCP client"
        return {
            Surface.CLI: "the CLI",
            Surface.WEB: "the browser view",
            Surface.HAND: "a hand edit",
            Surface.IMPORT: f"an import ({self.detail})" if self.detail else "an import",
            Surface.SYNC: self.detail or "another machine",
        }.get(self.surface, self.detail)


def mcp_origin(name: str | None, version: str | None, principal: str = "") -> Origin:
    """A tool call's origin from the client's clientInfo (over HTTP with the principal, see `principal_of`)."""
    client = " ".join(p for p in (clean(name or "", 40), clean(version or "", 20)) if p)
    return Origin(Surface.MCP, client, clean(principal))


def import_origin(format: str, path: str) -> Origin:
    return Origin(Surface.IMPORT, clean(f"{format} {path}", 120))


def sync_origin(author: str, earlier: Origin | None) -> Origin:
    return Origin(Surface.SYNC, clean(author, 80), earlier=earlier)


def by_teammate(author: str, recorded: str | None) -> str:
    """The origin shown for a memory `author` added through git, given the line its file records."""
    earlier = parse(recorded)
    if earlier is not None and earlier.surface is Surface.SYNC and same_person(earlier.detail, author):
        return earlier.text  # a file stamped by an older version already names them
    return sync_origin(author, earlier).text


def still_from(shown: str | None, recorded: str | None) -> str | None:
    """The origin shown for a changed file whose memory was shown as `shown`: a teammate's memory stays theirs
    (with what its file records now), unless the file itself names a sync."""
    before = parse(shown)
    now = parse(recorded)
    if before is None or before.surface is not Surface.SYNC or (now is not None and now.surface is Surface.SYNC):
        return recorded
    return sync_origin(before.detail, now).text


CLI = Origin(Surface.CLI)
WEB = Origin(Surface.WEB)
HAND = Origin(Surface.HAND)

_MCP = re.compile(r"^mcp(?: (?P<detail>.*?))?(?: \((?P<principal>[^()]*)\))?$")


def parse(text: str | None) -> Origin | None:
    """The origin a frontmatter line records; None when it records none (an older file: "origin unknown")."""
    text = " ".join(str(text or "").split())
    if not text:
        return None
    if text.startswith(Surface.SYNC.value + " "):
        author, _, earlier = text[len(Surface.SYNC.value) + 1 :].partition("; ")
        return Origin(Surface.SYNC, author, earlier=parse(earlier))
    if text == "mcp" or text.startswith("mcp "):
        match = _MCP.match(text)
        detail = (match.group("detail") or "") if match else text[4:]
        principal = (match.group("principal") or "") if match else ""
        return Origin(Surface.MCP, "" if detail == "(client unnamed)" else detail, principal)
    for surface in (Surface.CLI, Surface.WEB, Surface.HAND):
        if text == surface.value:
            return Origin(surface)
    if text.startswith(Surface.IMPORT.value + " "):
        return Origin(Surface.IMPORT, text[len(Surface.IMPORT.value) + 1 :])
    return Origin(Surface.OTHER, text)


def shown(text: str | None) -> str:
    """The origin as every answer shows it: the line as recorded, or "origin unknown"."""
    origin = parse(text)
    return origin.text if origin is not None else UNKNOWN


def short(text: str | None) -> str:
    """A recall result's few words: "by claude-code 2.1", "by the CLI", "from Ana <ana@example.com>"."""
    origin = parse(text)
    if origin is None:
        return UNKNOWN
    return f"from {origin.client}" if origin.surface is Surface.SYNC else f"by {origin.client}"


def label(trust: str, text: str | None, who: str = "the user", me: str | None = None) -> str:
    """Who says so, in words a model and a person read: "stated by the user, as recorded by claude-code 2.1"; what
    a sync brought names the teammate first: "from Ana <ana@example.com>, stated by them, as recorded by ..."."""
    origin = parse(text)
    if trust == "confirmed":
        return f"confirmed by {who}"
    if origin is None:
        return f"{trust}, {UNKNOWN}"
    if origin.surface is Surface.SYNC:
        earlier = origin.earlier.text if origin.earlier is not None else None
        if me and same_person(origin.detail, me):  # one's own memory, back through a teammate's clone
            return label(trust, earlier, who)
        return f"from {origin.client}, {label(trust, earlier, 'them')}"
    if trust == "user-stated":
        if origin.by_person:
            return f"stated by {who}, through {origin.client}"
        return f"stated by {who}, as recorded by {origin.client}"
    if trust == "agent-inferred":
        return f"inferred by {origin.client}"
    if trust == "imported":
        return f"from {origin.client}" if origin.surface is Surface.IMPORT else f"imported, by {origin.client}"
    return f"{trust}, by {origin.client}"


def from_teammate(text: str | None, me: str | None = None) -> bool:
    """A sync brought it from another author (what they stated is theirs, not this user's). `me`: who this machine
    commits as (the last sync's), so a memory of one's own that came back through a teammate's clone stays one's."""
    origin = parse(text)
    if origin is None or origin.surface is not Surface.SYNC:
        return False
    return not (me and same_person(origin.detail, me))


_EMAIL = re.compile(r"<([^<>]*)>\s*$")


def same_person(a: str, b: str) -> bool:
    """Two git identities are one person when their e-mail addresses match (else their whole text)."""
    ea, eb = _EMAIL.search(a), _EMAIL.search(b)
    if ea and eb and ea.group(1).strip():
        return ea.group(1).strip().lower() == eb.group(1).strip().lower()
    return a.strip() == b.strip()
