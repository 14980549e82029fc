"""The canon: one Markdown file per memory, YAML frontmatter, `# Title`, body.

Reading is strict about safety (no YAML aliases, no custom tags, size caps) and lenient about
omissions a person makes by hand (missing type/state/trust get defaults). Writing is round-trip:
a server rewrite keeps the person's key order, comments and unknown keys, and every write is
temp file + fsync + atomic rename so a crash never leaves a partial memory behind.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..domain.fields import COLUMNS, FIELD_ORDER, TIME_KEYS
from ..domain.memory import ConflictRecord, Memory
from ..domain.text import nfkc_casefold, squeeze
from ..domain.vocabulary import MemoryType, State, Trust

# ruamel.yaml is imported by the functions that read or write YAML with it (a rewrite, a file the fast reader
# hands over): a call that reads no changed file (a one-shot recall with nothing changed) never loads it
if TYPE_CHECKING:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.nodes import Node

MAX_FILE_BYTES = 1024 * 1024
MAX_FRONTMATTER_BYTES = 64 * 1024
ID_PATTERN = re.compile(r"^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$")
_CORE_TAGS = {
    "tag:yaml.org,2002:" + name for name in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map")
}
# The order a new file's frontmatter is written in (hand-written files keep their own order) and the keys whose
# values are times or dates come from the field table.
# `sync: local` in a memory's frontmatter: the memory stays on this machine (sync never stages it)
SYNC_FIELD, SYNC_LOCAL = "sync", "local"


class CanonError(Exception):
    """A canon file that cannot be used as a memory; the message is the reason shown to people."""


def _yaml() -> YAML:
    from ruamel.yaml import YAML

    _represent_plain_times()
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


class RoundTripYAMLHandler:
    """The frontmatter block of a canon file, read and written with ruamel.yaml's round-trip mode, refusing
    unsafe YAML."""

    START_DELIMITER = END_DELIMITER = "---"
    # Exact split: the content keeps every byte after the closing delimiter (it starts with that
    # line's newline), so a rewrite never shifts the person's blank lines.
    _BLOCK = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$", re.DOTALL | re.MULTILINE)
    _EMPTY = re.compile(r"\A---[ \t]*\r?\n---[ \t]*$", re.MULTILINE)

    def detect(self, text: str) -> bool:
        return text.startswith("---")

    def split(self, text: str) -> tuple[str, str]:
        match = self._EMPTY.match(text) or self._BLOCK.match(text)
        if match is None:
            raise ValueError("frontmatter is not closed")
        fm = match.group(1) if match.re is self._BLOCK else ""
        return fm, text[match.end() :]

    def load(self, fm: str, **kwargs: object) -> CommentedMap:
        from ruamel.yaml.comments import CommentedMap
        from ruamel.yaml.error import YAMLError

        if len(fm.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
            raise CanonError(f"frontmatter larger than {MAX_FRONTMATTER_BYTES} bytes")
        y = _yaml()
        # The YAML library is a boundary: whatever it raises on hostile text (deep nesting overflows its
        # recursive composer, an impossible date or a 5,000-digit integer raise ValueError while building
        # values) becomes this file's reason, never a crash of the reconcile pass.
        try:
            node = y.compose(fm)
        except YAMLError as exc:
            raise CanonError(f"bad YAML: {_one_line(exc)}") from None
        except RecursionError:
            raise CanonError("bad YAML: frontmatter nested too deeply") from None
        except Exception as exc:
            raise CanonError(f"bad YAML: {type(exc).__name__}: {_one_line(exc)}") from None
        if node is None:
            return CommentedMap()
        _check_node(node)
        try:  # built from the node just checked: one parse, not two
            data = y.constructor.construct_document(node)
        except YAMLError as exc:
            raise CanonError(f"bad YAML: {_one_line(exc)}") from None
        except RecursionError:
            raise CanonError("bad YAML: frontmatter nested too deeply") from None
        except Exception as exc:
            raise CanonError(f"bad YAML value: {type(exc).__name__}: {_one_line(exc)}") from None
        if not isinstance(data, CommentedMap):
            raise CanonError("frontmatter is not a mapping")
        _check_unicode(data)
        return data

    def export(self, metadata: dict[str, object], **kwargs: object) -> str:
        buf = io.StringIO()
        _yaml().dump(metadata, buf)
        return buf.getvalue().rstrip("\n")


HANDLER = RoundTripYAMLHandler()


def _one_line(exc: Exception) -> str:
    # YAML messages quote the offending text, which may hold lone surrogates: keep the reason storable
    text = " ".join(str(exc).split())[:300]
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _check_unicode(value: Any) -> None:
    """Refuse a lone surrogate made by a YAML escape ("\\ud800"): not Unicode text, so not storable or sendable."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise CanonError(
                    "frontmatter holds an escaped lone surrogate (e.g. \\ud800): not valid Unicode"
                ) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_node(root: Node) -> None:
    """Refuse anchors/aliases (billion-laughs) and any tag beyond YAML's core schema."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise CanonError("YAML aliases are not allowed in frontmatter")
        seen.add(id(node))
        if getattr(node, "anchor", None):
            raise CanonError("YAML anchors are not allowed in frontmatter")
        tag = getattr(node.tag, "value", node.tag)
        if tag and tag not in _CORE_TAGS:
            raise CanonError(f"YAML tag {tag!r} is not allowed in frontmatter")
        if isinstance(node, MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)


# ---------------------------------------------------------------- reading


def read_regular(
    path: str | os.PathLike[str], *, cap: int | None = None, follow: bool = True
) -> tuple[os.stat_result, bytes]:
    """(fstat, bytes) of a regular file, from one open file: at most `cap` bytes when given.

    Every read of a file that a person, a sync or another process may swap under us goes through here:
    O_NONBLOCK and the regular-file check keep a FIFO or a device put in its place from blocking the
    caller forever; fstat describes exactly the file that was read. `follow=False` refuses a symlink.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks, left = [], -1 if cap is None else cap  # -1: to the end, however the file grew meanwhile
        while left != 0:
            chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left = left if left < 0 else left - len(chunk)
        return st, b"".join(chunks)
    finally:
        os.close(fd)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A memory file's bytes (see `read_regular`): never blocks on a FIFO put where a memory was."""
    return read_regular(path)[1]


def sha256_bytes(data: bytes) -> str:
    from hashlib import sha256  # here, not at the top: loading OpenSSL (~2 ms) would slow every merge-driver process

    return sha256(data).hexdigest()


def sha256_small(data: bytes) -> str:
    """sha256 of a small input (dictionary.md, read by every process at its first call) from CPython's own C code,
    the one hashlib falls back to: importing hashlib loads OpenSSL (~3.5 ms of CPU in a new process), which a big
    input repays and a few kilobytes do not. The same digest as `sha256_bytes`."""
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:  # pragma: no cover - an interpreter built without it
            from hashlib import sha256
    return sha256(data).hexdigest()


def normalised_text(title: str, body: str) -> str:
    """What dedupe compares: NFKC, case-folded, whitespace collapsed."""
    return squeeze(nfkc_casefold(f"{title}\n{body}"))


def norm_hash(title: str, body: str) -> str:
    from hashlib import sha256  # (see sha256_bytes)

    return sha256(normalised_text(title, body).encode("utf-8")).hexdigest()


def iso_utc(moment: datetime) -> str:
    """The canon's timestamp form: UTC, whole seconds, `Z`."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def now_iso() -> str:
    return iso_utc(datetime.now(UTC))


def _as_text(value: Any) -> str:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return "" if value is None else str(value)


def _as_list(value: Any, key: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict | list):
                raise CanonError(f"'{key}' must be a list of plain values")
            text = _as_text(item).strip()
            if text:
                out.append(text)
        return out
    raise CanonError(f"'{key}' must be a list")


# An Obsidian wiki link as a link entry: `[[file-stem|ID]]` (what the server writes) or `[[ID]]`.
_WIKILINK = re.compile(r"^\[\[([^\[\]|]+)(?:\|([^\[\]|]+))?\]\]$")
LINK_KEYS = ("supersedes", "superseded_by", "related")


def link_id(entry: str) -> str:
    """The memory id an entry of supersedes/superseded_by/related names: a bare id, or the id in an
    Obsidian link (`[[file-stem|ID]]`: the file name for Obsidian to resolve, the id for us)."""
    match = _WIKILINK.match(entry.strip())
    if match is None:
        return entry
    return (match.group(2) or match.group(1)).strip()


def link_ids(value: Any, key: str) -> list[str]:
    return [link_id(entry) for entry in _as_list(value, key)]


def link_entry(mem_id: str, path: str, obsidian: bool) -> str:
    """What a link to `mem_id` (whose file is `path`) looks like in a file: the bare id, or an Obsidian link.
    Files are named by slug, not by id, so the link targets the file's stem and carries the id as its alias."""
    return f"[[{PurePosixPath(path).stem}|{mem_id}]]" if obsidian else mem_id


def add_link(meta: CommentedMap, key: str, mem_id: str, entry: str) -> bool:
    """Append `entry` to the link list `key` unless it already names `mem_id`; an existing list keeps its
    entries and style (minimal diff). False when it was already there."""
    from ruamel.yaml.comments import CommentedSeq

    current = meta.get(key)
    if mem_id in link_ids(current, key):
        return False
    if isinstance(current, CommentedSeq) and current:  # (an empty `[]` would turn into a block list)
        current.append(entry)
    else:
        set_list(meta, key, [*_as_list(current, key), entry])
    return True


def _enum(cls: type, value: Any, key: str, default: Any) -> Any:
    if value is None or value == "":
        return default
    try:
        return cls(str(value).strip())
    except ValueError:
        allowed = ", ".join(m.value for m in cls)
        raise CanonError(f"unknown {key} '{value}' (allowed: {allowed})") from None


def to_plain(value: Any) -> Any:
    """Frontmatter values as JSON-ready plain data (dates become ISO text)."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, datetime | date):
        return _as_text(value)
    if isinstance(value, bool | int | float) or value is None:
        return value
    return str(value)


def split(text: str, *, round_trip: bool = True) -> tuple[dict[str, Any], str, int]:
    """Frontmatter map, the content after it, and the 1-based line the content starts on.

    `round_trip=True` gives ruamel's CommentedMap, which a rewrite needs to keep comments and order;
    reading only (`False`) takes libyaml's fast path when the text allows it (same values, see fastyaml).
    """
    if not HANDLER.detect(text):
        from ruamel.yaml.comments import CommentedMap

        return CommentedMap(), text, 1
    try:
        fm, content = HANDLER.split(text)
    except ValueError:
        raise CanonError("frontmatter is not closed with '---'") from None
    meta = None if round_trip else _read_fast(fm)
    if meta is None:
        meta = HANDLER.load(fm)
    return meta, content, text[: len(text) - len(content)].count("\n") + 1


def _read_fast(fm: str) -> dict[str, Any] | None:
    if len(fm.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        return None  # the round-trip loader gives the reason
    from . import fastyaml  # PyYAML's libyaml, loaded on the first fast read: the merge driver never needs it

    meta = fastyaml.load(fm)
    if meta is not None:
        _check_unicode(meta)
    return meta


def decode(data: bytes) -> str:
    if b"\x00" in data:
        raise CanonError("binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CanonError(f"not UTF-8 text (byte {exc.start})") from None
    # files saved by Windows editors (or checked out with core.autocrlf) are the same memory
    return text.removeprefix("\ufeff").replace("\r\n", "\n")


def parse(data: bytes, fallback_title: str, fallback_time: str) -> Memory:
    """Parse one canon file's bytes into a Memory, or raise CanonError with the reason."""
    if len(data) > MAX_FILE_BYTES:
        raise CanonError(f"file larger than {MAX_FILE_BYTES} bytes")
    text = decode(data)
    if not HANDLER.detect(text):
        raise CanonError("no frontmatter (a memory file starts with a '---' block that holds its id)")
    meta, content, content_line = split(text, round_trip=False)
    raw_id = meta.get("id")
    if raw_id is None or str(raw_id).strip() == "":
        raise CanonError("missing id in frontmatter")
    mem_id = str(raw_id).strip()
    if not ID_PATTERN.match(mem_id):
        raise CanonError(f"invalid id '{mem_id[:80]}' (letters, digits, '-' and '_' only)")
    title, body, title_line, body_line = _title_and_body(content, content_line)
    if not title:
        title = str(meta.get("title") or fallback_title).strip()
    created = _as_text(meta.get("created")) or fallback_time
    conflicts = _conflicts(meta.get("conflicts"))
    return Memory(
        id=mem_id,
        type=_enum(MemoryType, meta.get("type"), "type", MemoryType.FACT),
        state=_enum(State, meta.get("state"), "state", State.ACTIVE),
        trust=_enum(Trust, meta.get("trust"), "trust", Trust.USER_STATED),
        title=title,
        body=body,
        entities=_as_list(meta.get("entities"), "entities"),
        source=_as_text(meta.get("source")),
        created=created,
        updated=_as_text(meta.get("updated")) or created,
        **{key: _as_text(meta.get(key)) or None for key in COLUMNS},
        supersedes=link_ids(meta.get("supersedes"), "supersedes"),
        superseded_by=link_ids(meta.get("superseded_by"), "superseded_by"),
        related=link_ids(meta.get("related"), "related"),
        conflicts=conflicts,
        title_line=title_line,
        body_line=body_line,
    )


def heading_of(data: bytes) -> str | None:
    """A memory file's `# title` line, read without its YAML (a sync's summary names a thousand files); None
    when the file has none (`parse` then knows the title)."""
    try:
        text = decode(data)
        _, content = HANDLER.split(text) if HANDLER.detect(text) else ("", "")
    except (CanonError, ValueError):
        return None
    return _title_and_body(content, 1)[0] or None


def _title_and_body(content: str, first_line: int) -> tuple[str, str, int, int]:
    lines = content.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    title, title_line = "", first_line
    if i < len(lines) and lines[i].startswith("# "):
        title, title_line = lines[i][2:].strip(), first_line + i
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
    body = "\n".join(lines[i:]).rstrip()
    return title, body, title_line, first_line + i


def _conflicts(value: Any) -> list[ConflictRecord]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CanonError("'conflicts' must be a list")
    out = []
    for item in value:
        if not isinstance(item, dict) or not item.get("with"):
            raise CanonError("each 'conflicts' entry needs a 'with' id")
        out.append(
            ConflictRecord(
                other_id=str(item["with"]),
                status=str(item.get("status") or "open"),
                detected=_as_text(item.get("detected")),
                resolution=_as_text(item.get("resolution")) or None,
                resolved=_as_text(item.get("resolved")) or None,
                note=_as_text(item.get("note")) or None,
            )
        )
    return out


def read_frontmatter(path: Path) -> dict[str, Any]:
    meta, _, _ = split(decode(read_bytes(path)), round_trip=False)
    return to_plain(dict(meta))


# ---------------------------------------------------------------- writing


def render_new(fields: dict[str, Any], title: str, body: str) -> str:
    from ruamel.yaml.comments import CommentedMap

    meta = CommentedMap()
    for key in FIELD_ORDER:
        if key in fields and fields[key] is not None:
            meta[key] = _flow(fields[key])
    for key, value in fields.items():
        if key not in meta and value is not None:
            meta[key] = _flow(value)
    return _assemble(meta, f"\n# {title.strip()}\n\n{body.strip()}\n")


def _flow(value: Any) -> Any:
    """Short id/entity lists read best inline: `entities: [a, b]`."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        from ruamel.yaml.comments import CommentedSeq

        seq = CommentedSeq(value)
        seq.fa.set_flow_style()
        return seq
    return value


def compose(meta: CommentedMap, content: str) -> str:
    """A whole file from a (round-trip) frontmatter map and the content after it (title and body)."""
    return _assemble(meta, content if content.startswith("\n") else "\n" + content)


def _assemble(meta: CommentedMap, content: str) -> str:
    """`content` starts with the newline that ends the closing delimiter line."""
    _style_times(meta)
    return f"---\n{HANDLER.export(meta)}\n---{content}"


# ---------------------------------------------------------------- times in one style

# Keys whose values are times or dates inside each `conflicts:` entry (top level: TIME_KEYS).
CONFLICT_TIME_KEYS = ("detected", "resolved")
_TIME_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d+)?Z)?$")


class _PlainTime(str):
    """A time the server writes, emitted unquoted (`updated: 2026-02-11T09:10:00Z`), as people type it."""


@cache
def _represent_plain_times() -> None:
    """ruamel writes a `_PlainTime` unquoted, as a YAML timestamp (registered once, before the first dump)."""
    from ruamel.yaml.representer import RoundTripRepresenter

    RoundTripRepresenter.add_representer(
        _PlainTime, lambda rep, value: rep.represent_scalar("tag:yaml.org,2002:timestamp", str(value))
    )


def _time_slots(meta: CommentedMap) -> Iterator[tuple[dict, str]]:
    for key in TIME_KEYS:
        if key in meta:
            yield meta, key
    conflicts = meta.get("conflicts")
    for entry in conflicts if isinstance(conflicts, list) else []:
        if isinstance(entry, dict):
            yield from ((entry, key) for key in CONFLICT_TIME_KEYS if key in entry)


def _style_times(meta: CommentedMap) -> None:
    """Give the times the server wrote (plain `str`) the style the file's own times already have: unquoted
    (YAML timestamps) unless the person quoted theirs, so a rewrite never puts `'...'` next to unquoted times.
    Values read from the file keep their exact text (ruamel round-trips them)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, SingleQuotedScalarString

    slots = list(_time_slots(meta))
    style: type[str] = _PlainTime
    for container, key in slots:
        value = container[key]
        if isinstance(value, date):
            break
        if isinstance(value, SingleQuotedScalarString | DoubleQuotedScalarString):
            style = type(value)
            break
    for container, key in slots:
        value = container[key]
        if type(value) is str and _TIME_TEXT.match(value):
            container[key] = style(value)


def rewrite(
    path: Path,
    mutate: Callable[[CommentedMap], None],
    title: str | None = None,
    body: str | None = None,
    expected_sha: str | None = None,
) -> str:
    """Round-trip edit of one file: frontmatter via `mutate`, optionally a new title/body.

    Keeps key order, comments and unknown keys. With `expected_sha`, refuses to write when the file
    changed since it was read (no lost write). Returns the new file's sha256.
    """
    data = read_bytes(path)
    if expected_sha is not None and sha256_bytes(data) != expected_sha:
        raise CanonError("the file changed since it was read")
    meta, content, _ = split(decode(data))
    mutate(meta)
    if title is not None or body is not None:
        old_title, old_body, _, _ = _title_and_body(content, 1)
        new_title = old_title if title is None else title
        new_body = old_body if body is None else body
        content = f"\n# {new_title.strip()}\n\n{new_body.strip()}\n"
    elif not content.startswith(("\n", "\r\n")):
        content = "\n" + content
    text = _assemble(meta, content)
    if b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b""):
        text = text.replace("\n", "\r\n")  # keep a CRLF file CRLF: a rewrite must not re-end every line
    atomic_write(path, text.encode("utf-8"))
    return sha256_bytes(text.encode("utf-8"))


def set_list(meta: CommentedMap, key: str, values: list[str]) -> None:
    meta[key] = _flow(values)


def atomic_write(path: Path, data: bytes) -> None:
    """Temp file in the same directory + fsync + rename + directory fsync."""
    import tempfile  # (with what it loads, ~4 ms: a call that writes no file never needs it)

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # name the file being written, not the temp name nobody will recognise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# Names Windows refuses as a file's stem, whatever the extension (NUL.md is as unusable as NUL).
WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"{d}{n}" for d in ("com", "lpt") for n in range(10))})
SLUG_MAX_CHARS = 60
# the id suffix and `.md` follow (13 bytes, `-N` on a clash): well under 255 bytes a name (ext4, APFS, NTFS)
# and under eCryptfs's 143
SLUG_MAX_BYTES = 120


def slugify(title: str, max_chars: int = SLUG_MAX_CHARS, max_bytes: int = SLUG_MAX_BYTES) -> str:
    """The file-name part of a title: letters, marks and digits of every script, lowercased, the rest `-`.

    NFKC first (full-width forms and ligatures fold to plain letters), NFC last, so every system spells
    the name with the same bytes. Only letters (L*), combining marks (M*, which Devanagari or Thai words
    need) and numbers (N*) survive, so nothing a file system refuses gets through: no separators, no
    `<>:"/\\|?*`, no control characters, no dot or space at the end. Cut at `max_chars` characters and
    `max_bytes` UTF-8 bytes on a character boundary."""
    text = unicodedata.normalize("NFKC", title).lower()
    kept = "".join(c if unicodedata.category(c)[0] in "LMN" else "-" for c in text)
    slug = unicodedata.normalize("NFC", re.sub(r"-{2,}", "-", kept).strip("-"))
    kept, size = [], 0
    for c in slug[:max_chars]:
        size += len(c.encode("utf-8"))
        if size > max_bytes:
            break
        kept.append(c)
    slug = "".join(kept).strip("-")
    while slug and unicodedata.category(slug[0])[0] == "M":  # a mark cannot start a name on its own
        slug = slug[1:].lstrip("-")
    if slug in WINDOWS_RESERVED:
        slug += "-memory"
    return slug or "memory"


__all__ = [
    "CanonError",
    "parse",
    "render_new",
    "rewrite",
    "atomic_write",
]
