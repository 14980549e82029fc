"""Text that looks like a credential: refused on remember and update unless the memory stays on this machine.

A store that syncs carries every memory to every machine and into git history, so a pasted key or password
must not get in. The detection is detect-secrets' (Yelp's), not ours: its line plugins for private keys,
cloud and forge tokens (AWS, GitHub, GitLab, Slack, Stripe, npm, PyPI, OpenAI, ...), basic-auth URLs and
quoted `password = "..."` assignments, plus its keyword plugin in config-file mode on lines holding an `=`
(unquoted `password=...`, `export DB_PASSWORD=...`). Left out on purpose: the high-entropy plugins (ids, hashes
and commit names in ordinary memories would trip them) and the public-IP plugin (an address is not a secret).
"""

from __future__ import annotations

from functools import cache

# detect-secrets plugins never run here
_LEFT_OUT = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")


@cache
def _plugins() -> list[dict[str, str]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    names = sorted(cls.__name__ for cls in get_mapping_from_secret_type_to_class().values())
    return [{"name": name} for name in names if name not in _LEFT_OUT]


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret detect-secrets sees in `text` ("AWS Access Key", "Secret Keyword", ...), in order."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.plugins.keyword import KeywordDetector
    from detect_secrets.settings import transient_settings

    found: dict[str, None] = {}
    with transient_settings({"plugins_used": _plugins()}):
        keyword = KeywordDetector()
        for line in text.splitlines():
            if not line.strip():
                continue
            for secret in scan_line(line):
                found.setdefault(secret.type, None)
            if "=" in line:  # config-file mode: unquoted assignments count too
                for secret in keyword.analyze_line(filename="memory.ini", line=line, line_number=0):
                    found.setdefault(secret.type, None)
    return list(found)


def refuse_secrets(texts: dict[str, str | None]) -> None:
    """Raise InputError naming the argument and the kind of secret found in it (the first one)."""
    from .errors import InputError

    for name, text in texts.items():
        kinds = secret_kinds(text) if text else []
        if kinds:
            raise InputError(
                f"{name}: looks like a secret ({', '.join(kinds)}); a synced store carries every memory to every "
                "machine and into git history. Leave the secret out (say where it is kept instead), or mark the "
                "memory private (remember with private=true / --private: `sync: local`, it never leaves this machine)"
            )
