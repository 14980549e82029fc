"""What a parser makes of its input: memories to create, links between them, and the problems it skipped."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..domain.vocabulary import MemoryType

# the types an imported item may take from its input; a handoff is a session's own note, never imported
IMPORT_TYPES = tuple(t.value for t in MemoryType if t is not MemoryType.HANDOFF)


@dataclass(frozen=True)
class Draft:
    """One memory an import would create (always `trust: imported`).

    `key` names the item inside its input (an entity, a note's title) so that links can point at it;
    `source` says where it came from (file, line or heading), and is written into the memory."""

    title: str
    body: str
    type: str
    source: str
    entities: tuple[str, ...] = ()
    key: str = ""


@dataclass(frozen=True)
class Link:
    """A `related` link to write between two drafts, named by their keys (`why` says what it stands for)."""

    a: str
    b: str
    why: str


@dataclass(frozen=True)
class Problem:
    """Input that was skipped: where (a file, `file:line`) and why. Nothing of a skipped item is written."""

    where: str
    reason: str


@dataclass
class Parsed:
    """A parser's whole answer, made before anything is written."""

    drafts: list[Draft] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # what the format holds that no memory keeps, said once each

    def skip(self, where: str, reason: str) -> None:
        self.problems.append(Problem(where, reason))

    def drop(self, what: str) -> None:
        if what not in self.dropped:
            self.dropped.append(what)
