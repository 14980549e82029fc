"""Text that looks like a credential: refused on remember and update unless the memory stays on this machine.

A store that syncs carries every memory to every machine and into git history, so a pasted key or password
must not get in. The detection is detect-secrets' (Yelp's), not ours: its line plugins for private keys,
cloud and forge tokens (AWS, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI, ...), basic-auth URLs and
quoted `password = "..."` assignments, plus its keyword plugin in config-file mode on lines holding an `=`
(unquoted `password=...`, `export DB_PASSWORD=...`). Left out on purpose: the high-entropy plugins (ids, hashes
and commit names in ordinary memories would trip them) and the public-IP plugin (an address is not a secret).
"""

from __future__ import annotations

import re
from contextlib import AbstractContextManager
from functools import cache
from types import TracebackType

# detect-secrets plugins never run here
_LEFT_OUT = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")


@cache
def _plugins() -> list[dict[str, str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    names = sorted(cls.__name__ for cls in get_mapping_from_secret_type_to_class().values())
    return [{"name": name} for name in names if name not in _LEFT_OUT]


_FIELD_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:")
# a memory id (ULID: Crockford base32, 26 characters) is no credential, though its random part can take the
# shape of one (`A3T` + 16 capitals is an AWS access key to detect-secrets): ids are masked before the scan
_ULID = re.compile(r"(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])")


class SecretScanner(AbstractContextManager["SecretScanner"]):
    """detect-secrets' settings entered once for many texts (entering them costs more than a short memory's scan)."""

    def __enter__(self) -> SecretScanner:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.plugins.keyword import KeywordDetector
        from detect_secrets.settings import transient_settings

        self._settings = transient_settings({"plugins_used": _plugins()})
        self._settings.__enter__()
        self._scan_line, self._keyword = scan_line, KeywordDetector()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._settings.__exit__(exc_type, exc, tb)

    def kinds(self, line: str) -> list[str]:
        line = _ULID.sub("ULID", line)
        found = [secret.type for secret in self._scan_line(line)]
        if "=" in line:  # config-file mode: unquoted assignments count too
            found += [s.type for s in self._keyword.analyze_line(filename="memory.ini", line=line, line_number=0)]
        return found

    def scan(self, text: str) -> list[tuple[str, str]]:
        """(kind, place) of each secret in a memory file's whole text, frontmatter included: the place is the
        frontmatter field the line belongs to, `title` or `body`."""
        found: dict[tuple[str, str], None] = {}
        lines = text.splitlines()
        in_front = bool(lines) and lines[0].strip() == "---"
        place, titled = "frontmatter", False
        for number, line in enumerate(lines):
            if in_front and number and line.strip() == "---":
                in_front, place = False, "body"
                continue
            if in_front:
                named = _FIELD_LINE.match(line)
                place = f"`{named.group(1)}`" if named else place
            elif line.startswith("# ") and not titled:
                place, titled = "title", True
            if not line.strip():
                continue
            for kind in self.kinds(line):
                found.setdefault((kind, place), None)
            place = "body" if place == "title" else place
        return list(found)


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret detect-secrets sees in `text` ("AWS Access Key", "Secret Keyword", ...), in order."""
    found: dict[str, None] = {}
    with SecretScanner() as scanner:
        for line in text.splitlines():
            if line.strip():
                found.update(dict.fromkeys(scanner.kinds(line)))
    return list(found)


def refuse_secrets(texts: dict[str, str | list[str] | None]) -> None:
    """Raise InputError naming the argument and the kind of secret found in it (the first one). A list (the
    entities) is read a line per item: every text that reaches the file is checked, not only the body."""
    from .errors import InputError

    for name, given in texts.items():
        text = "\n".join(given) if isinstance(given, list) else given
        kinds = secret_kinds(text) if text else []
        if kinds:
            raise InputError(
                f"{name}: looks like a secret ({', '.join(kinds)}); a synced store carries every memory to every "
                "machine and into git history. Leave the secret out (say where it is kept instead), or mark the "
                "memory private (remember with private=true / --private: `sync: local`, it never leaves this machine)"
            )
