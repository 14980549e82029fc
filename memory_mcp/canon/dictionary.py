"""`dictionary.md`: canonical entity names and their aliases, applied on write and on search.

Line format: `- canonical: description (aka: synonym, abbr)`. Anything else in the file is prose.
"""

from __future__ import annotations

import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..domain.text import nfkc_casefold
from .files import read_bytes, sha256_small

_LINE = re.compile(r"^\s*[-*]\s+([^:]+?)\s*:\s*(.*?)\s*$")
_AKA = re.compile(r"\(\s*aka\s*:\s*([^)]*)\)", re.IGNORECASE)


def entity_key(name: str) -> str:
    """Spelling-insensitive form of an entity: NFKC, case-folded, spaces/underscores as '-'."""
    text = nfkc_casefold(name).strip()
    return re.sub(r"[\s_]+", "-", text)


@dataclass
class DictionaryLine:
    """One `- name: description (aka: ...)` line of dictionary.md, where it is (0-based) and what it says."""

    index: int
    name: str
    description: str
    aliases: list[str]

    @property
    def canonical(self) -> str:
        return entity_key(self.name)

    @property
    def line(self) -> str:
        return self.render()

    def render(self) -> str:
        aka = f" (aka: {', '.join(self.aliases)})" if self.aliases else ""
        return f"- {self.name}: {self.description}{aka}".replace(":  (aka", ": (aka").rstrip()


def entries(text: str) -> list[DictionaryLine]:
    """The entry lines of a dictionary text (prose lines are not entries)."""
    out = []
    for n, line in enumerate(text.splitlines()):
        match = _LINE.match(line)
        if not match:
            continue
        rest, aliases = match.group(2), []
        aka = _AKA.search(rest)
        if aka:
            aliases = [a.strip() for a in aka.group(1).split(",") if a.strip()]
            rest = _AKA.sub("", rest).strip()
        out.append(DictionaryLine(n, match.group(1), rest, aliases))
    return out


@dataclass
class EntityDictionary:
    canonical_of: dict[str, str] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes) -> EntityDictionary:
        out = cls()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # not UTF-8: no aliases
            return out
        for entry in entries(text):
            canonical = entry.canonical
            out.descriptions[canonical] = entry.description
            out.canonical_of[canonical] = canonical
            for alias in entry.aliases:
                out.canonical_of.setdefault(entity_key(alias), canonical)
        return out

    def canonical(self, name: str) -> str:
        key = entity_key(name)
        return self.canonical_of.get(key, key)

    def normalise(self, names: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        for name in names:
            key = self.canonical(name)
            if key:
                seen.setdefault(key, None)
        return list(seen)

    def expand_query_terms(self, terms: list[str]) -> list[str]:
        """Canonical names for any query term (or adjacent pair) that is a known alias."""
        extra: list[str] = []
        keys = [entity_key(t) for t in terms]
        candidates = keys + [f"{a}-{b}" for a, b in zip(keys, keys[1:], strict=False)]
        for key in candidates:
            canonical = self.canonical_of.get(key)
            if canonical and canonical != key and canonical not in extra:
                extra.append(canonical)
        return extra


class DictionaryFile:
    """dictionary.md as a session last read it: read again only when its stat stamp (mtime, size) changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.dictionary = EntityDictionary()
        self.digest = ""  # SHA-256 of the bytes read; "" when there is no file
        self._stamp: tuple[int, int] | None = None

    def stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        # only a regular file is a dictionary: reading a FIFO would block every call
        return (st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else None

    def unchanged(self) -> bool:
        return self.stamp() == self._stamp

    def forget(self) -> None:
        """Have the next `reload` read the file whatever its stamp."""
        self._stamp = None

    def reload(self) -> bool:
        """Read the file again when its stamp changed; True when it did."""
        stamp = self.stamp()
        if stamp == self._stamp:
            return False
        try:
            data = read_bytes(self.path) if stamp else None
        except OSError:
            data, stamp = None, None  # unreadable: answer without aliases rather than not at all
        self.dictionary = EntityDictionary.parse(data) if data is not None else EntityDictionary()
        self.digest = sha256_small(data) if data is not None else ""
        self._stamp = stamp
        return True
