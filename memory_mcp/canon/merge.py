"""Three-way merge of one memory file (base, ours, theirs), as git's merge driver runs it.

The frontmatter merges field by field, each field by the one rule declared with it in domain/fields.py
(`FIELD_MERGE_RULES`; a field not named there follows `DEFAULT_RULE`); the content (title and body) merges through a line
merge the caller gives (git's own `git merge-file`, never a diff3 of ours). Nothing here ever writes a
conflict marker: a content clash keeps the side edited later and turns the other side's version into a new
memory holding an open conflict pair ("edited on two machines"), so the clash reaches memory_status, the
context resource and the browser view like any other conflict.

Every choice is deterministic (ties are broken by comparing bytes), so two machines merging the same
three versions write the same bytes, and the copy of a losing side gets the same id wherever it is made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ..domain.fields import DEFAULT_RULE, FIELD_MERGE_RULES, FieldMergeRule, MergeHow
from . import dictionary as dictionary_file
from . import files as canon

# (base, ours, theirs) -> the merged text, or None when the line merge clashes
LineMerge = Callable[[str, str, str], "str | None"]
CLASH_REASON = "edited on two machines"
# what a clash copy's title adds to its original's, so the pair reads as two versions, not one title twice
COPY_TITLE = "(the other machine's version)"
_MISSING = object()


# One rule per frontmatter field, declared with the field (domain/fields.py); every field not named follows
# DEFAULT_RULE.
STATE_ORDER = ("active", "archived", "deprecated")


class MergeError(Exception):
    """The three versions cannot be merged field by field (a side is not a memory): keep both files instead."""


@dataclass(frozen=True)
class ExtraFile:
    """A file the merge adds beside the merged one (same folder): a kept second memory."""

    name: str
    data: bytes


@dataclass
class MergeOutcome:
    data: bytes
    extra: list[ExtraFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a person should hear about (surfaced decisions)


@dataclass
class _Side:
    meta: CommentedMap
    content: str
    raw: bytes

    @property
    def id(self) -> str:
        return str(self.meta.get("id") or "").strip()

    @property
    def updated(self) -> str:
        return _text(self.meta.get("updated") or self.meta.get("created"))


def _text(value: Any) -> str:
    plain = canon.to_plain(value)
    return "" if plain is None else str(plain)


def _read(data: bytes, what: str) -> _Side:
    try:
        meta, content, _ = canon.split(canon.decode(data))
    except canon.CanonError as exc:
        raise MergeError(f"{what}: {exc}") from None
    side = _Side(meta, content, data)
    if not canon.ID_PATTERN.match(side.id):
        raise MergeError(f"{what}: no valid id")
    return side


def merge_memory(
    base: bytes | None, ours: bytes, theirs: bytes, line_merge: LineMerge, name_taken: Callable[[str], bool]
) -> MergeOutcome:
    """Merge three versions of one memory file (`base` None or empty: added on both sides).

    Raises MergeError when ours or theirs is not a memory; the caller then keeps both files (`keep_both`)."""
    o, t = _read(ours, "ours"), _read(theirs, "theirs")
    if o.id != t.id:  # add/add of one file name, or a file re-used by hand: two memories
        return MergeOutcome(ours, [_as_extra(t, name_taken)], [f"two memories shared a file name: kept {t.id} too"])
    b: _Side | None = None
    if base:
        try:
            b = _read(base, "base")
        except MergeError:
            b = None
        if b is not None and b.id != o.id:
            b = None
    later = _later_side(o, t)
    notes = _lifecycle_kept(b, o, t)  # before the fields merge into ours' map
    out = o.meta  # ours' key order and comments; values replaced where merged
    keys = list(dict.fromkeys([*o.meta.keys(), *t.meta.keys()]))
    for key in keys:
        rule = FIELD_MERGE_RULES.get(str(key), DEFAULT_RULE)
        bv = b.meta.get(key, _MISSING) if b is not None else _MISSING
        ov, tv = o.meta.get(key, _MISSING), t.meta.get(key, _MISSING)
        value, note = _merge_field(str(key), rule, bv, ov, tv, later is t)
        if note:
            notes.append(note)
        if value is _MISSING:
            out.pop(key, None)
        elif value is not ov:
            out[key] = value
    merged = line_merge(b.content if b is not None else "", o.content, t.content)
    extra: list[ExtraFile] = []
    if merged is None:
        winner, loser = (t, o) if later is t else (o, t)
        merged = winner.content
        copy = _clash_copy(loser, o.id, max(o.updated, t.updated), name_taken)
        extra.append(copy)
        notes.append(
            f"{o.id}: {CLASH_REASON}: kept the later edit ({'theirs' if winner is t else 'ours'}); "
            f"the other version is now {copy.name}, with an open conflict"
        )
    return MergeOutcome(_compose(out, merged), extra, notes)


def _lifecycle_kept(b: _Side | None, o: _Side, t: _Side) -> list[str]:
    """What to say when one side archived or deprecated the memory and the other edited its text: the merge keeps
    the state (a one-sided field change) with the edit, and the reconcile after a sync does not take the edit
    for a person using an archived memory again."""
    if b is None:
        return []
    was = _text(b.meta.get("state")) or "active"
    for mover, editor in ((o, t), (t, o)):
        now = _text(mover.meta.get("state")) or "active"
        if now != was and now in STATE_ORDER[1:] and (_text(editor.meta.get("state")) or "active") == was:
            if editor.content != b.content and mover.content == b.content:
                return [f"{o.id}: {now} on one machine and edited on the other: stays {now}, with the edit"]
    return []


def keep_both(ours: bytes, theirs: bytes, name_taken: Callable[[str], bool]) -> MergeOutcome:
    """The fallback when a field-by-field merge is impossible: ours stays, theirs becomes a second file (a new
    memory with an open conflict when it has ours' id; byte for byte when it is not a memory at all)."""
    try:
        t = _read(theirs, "theirs")
    except MergeError:
        return MergeOutcome(ours, [ExtraFile(free_name("unmerged", name_taken), theirs)], ["kept an unparseable side"])
    ours_id = id_of(ours)  # read leniently: ours may be a memory whose frontmatter a person broke
    if ours_id and ours_id != t.id:
        return MergeOutcome(ours, [_as_extra(t, name_taken)], [f"kept {t.id} beside ours"])
    # the same memory, or one whose id cannot be told: theirs is kept under a new id, never beside ours under
    # one id (two files with one id would hide one of them)
    copy = _clash_copy(t, t.id, t.updated, name_taken)
    return MergeOutcome(ours, [copy], [f"{t.id}: {CLASH_REASON}: kept ours; theirs is now {copy.name}"])


def id_of(data: bytes) -> str:
    """The id a memory file's frontmatter names, read line by line (a file whose YAML does not parse still says
    whose it is); "" when it names none."""
    if not data.startswith(b"---"):
        return ""
    end = data.find(b"\n---", 3)
    found = _ID_LINE.search(data, 0, end if end > 0 else canon.MAX_FILE_BYTES)
    ident = found.group(1).decode("ascii") if found else ""
    return ident if canon.ID_PATTERN.match(ident) else ""


_ID_LINE = re.compile(rb"^id:[ \t]*['\"]?([0-9A-Za-z_-]+)['\"]?[ \t]*\r?$", re.M)


# ---------------------------------------------------------------- one field


def _merge_field(
    key: str, rule: FieldMergeRule, bv: Any, ov: Any, tv: Any, theirs_later: bool
) -> tuple[Any, str | None]:
    pb, po, pt = (_plain(v) for v in (bv, ov, tv))
    if po == pt:
        return ov, None
    if rule.how is MergeHow.SET:
        return _merge_set(key, rule, bv, ov, tv), None
    if rule.how is MergeHow.CONFLICT_PAIRS:
        return _merge_pairs(bv, ov, tv), None
    if po == pb:
        return tv, None
    if pt == pb:
        return ov, None
    if rule.how is MergeHow.LATER_TIME:
        return (tv if str(pt) > str(po) else ov), None
    if rule.how is MergeHow.LIFECYCLE and str(po) in STATE_ORDER and str(pt) in STATE_ORDER:
        pick = tv if STATE_ORDER.index(str(pt)) > STATE_ORDER.index(str(po)) else ov
        return pick, f"state changed on both machines ({po} here, {pt} there): took {_plain(pick)}"
    # identity never differs here (checked first); one side / an unknown state: the later-edited side
    pick = tv if theirs_later else ov
    return pick, f"'{key}' changed on both machines: took the later edit's value {_plain(pick)!r}"


def _plain(value: Any) -> Any:
    return None if value is _MISSING else canon.to_plain(value)


def _entries(value: Any, key: str) -> list[str]:
    if value is _MISSING:
        return []
    try:
        return canon._as_list(value, key)
    except canon.CanonError:
        return []


def _merge_set(key: str, rule: FieldMergeRule, bv: Any, ov: Any, tv: Any) -> Any:
    ident = canon.link_id if rule.links else (lambda e: e)
    base = {ident(e) for e in _entries(bv, key)}
    ours, theirs = _entries(ov, key), _entries(tv, key)
    removed = (base - {ident(e) for e in ours}) | (base - {ident(e) for e in theirs})
    kept: dict[str, str] = {}
    for entry in [*ours, *theirs]:
        kept.setdefault(ident(entry), entry)
    result = [entry for k, entry in kept.items() if k not in removed]
    if result == ours and ov is not _MISSING:
        return ov
    if not result and ov is _MISSING and tv is _MISSING:
        return _MISSING
    seq = CommentedSeq(result)
    seq.fa.set_flow_style()
    return seq


def _pair_key(entry: Any) -> str:
    return str(entry.get("with")) if isinstance(entry, dict) else json.dumps(_plain(entry), sort_keys=True)


def _merge_pairs(bv: Any, ov: Any, tv: Any) -> Any:
    def by_key(value: Any) -> dict[str, Any]:
        return {_pair_key(e): e for e in value} if isinstance(value, list) else {}

    base, ours, theirs = by_key(bv), by_key(ov), by_key(tv)
    removed = (base.keys() - ours.keys()) | (base.keys() - theirs.keys())
    result = []
    for k in dict.fromkeys([*ours, *theirs]):
        if k in removed:
            continue
        o, t = ours.get(k), theirs.get(k)
        if o is None or t is None:
            result.append(o if o is not None else t)
            continue
        po, pt, pb = _plain(o), _plain(t), _plain(base.get(k, _MISSING))
        if po == pt or pt == pb:
            result.append(o)
        elif po == pb:
            result.append(t)
        else:  # both changed the entry: a resolution beats open; two resolutions: the later one
            result.append(max((o, t), key=lambda e: (_is_resolved(e), _text(e.get("resolved")), _dump(e))))
    if not result:
        return _MISSING if ov is _MISSING and tv is _MISSING else CommentedSeq()
    if [id(e) for e in result] == [id(e) for e in (ov if isinstance(ov, list) else [])]:
        return ov
    return CommentedSeq(result)


def _is_resolved(entry: Any) -> bool:
    return isinstance(entry, dict) and str(entry.get("status") or "open") == "resolved"


def _dump(value: Any) -> str:
    return json.dumps(_plain(value), sort_keys=True, ensure_ascii=False)


# ---------------------------------------------------------------- the two sides and the copy of a loser


def _later_side(o: _Side, t: _Side) -> _Side:
    """The side edited later; equal times: the larger bytes (any fixed order works: both machines agree)."""
    return max((o, t), key=lambda s: (s.updated, s.raw))


def new_id_for(original_id: str, data: bytes, updated: str) -> str:
    """A ULID for the copy of a losing side: the time of its edit and a hash of what it says, so every
    machine resolving the same clash names the copy alike."""
    from datetime import datetime
    from hashlib import sha256  # here: only a clash needs it (loading OpenSSL costs the driver ~2 ms)

    try:
        ms = int(datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        ms = 0
    digest = sha256(original_id.encode("utf-8") + b"\0" + data).digest()[:10]
    number = (max(ms, 0) % (1 << 48)) << 80 | int.from_bytes(digest, "big")
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32, ULID's text form (26 characters)
    return "".join(alphabet[(number >> (5 * i)) & 31] for i in reversed(range(26)))


def _clash_copy(loser: _Side, original_id: str, detected: str, name_taken: Callable[[str], bool]) -> ExtraFile:
    meta = _read(loser.raw, "loser").meta  # a fresh copy: the winner's map may be this side's, already merged
    new_id = new_id_for(original_id, loser.raw, loser.updated)
    meta["id"] = new_id
    meta["source"] = f"concurrent edit of {original_id} on another machine ({CLASH_REASON})"
    for key in canon.LINK_KEYS:  # the link graph stays with the original: a copy holds no one-sided links
        if key in meta:
            canon.set_list(meta, key, [])
    meta["conflicts"] = CommentedSeq(
        [CommentedMap([("with", original_id), ("status", "open"), ("detected", detected), ("note", CLASH_REASON)])]
    )
    title = _title(loser.content) or original_id
    name = free_name(f"{canon.slugify(title)}-{new_id[-6:].lower()}", name_taken)
    return ExtraFile(name, _compose(meta, _retitled(loser.content, f"{title} {COPY_TITLE}")))


def _retitled(content: str, title: str) -> str:
    """The content under another title: its `# ` heading replaced, or one added when it has none."""
    lines = content.split("\n")
    for i, line in enumerate(lines):
        if line.strip():
            if line.startswith("# "):
                lines[i] = f"# {title}"
                return "\n".join(lines)
            break
    return f"\n# {title}\n\n{content.lstrip()}"


def _as_extra(side: _Side, name_taken: Callable[[str], bool]) -> ExtraFile:
    title = _title(side.content) or side.id
    return ExtraFile(free_name(f"{canon.slugify(title)}-{side.id[-6:].lower()}", name_taken), side.raw)


def _title(content: str) -> str:
    for line in content.split("\n"):
        if line.strip():
            return line[2:].strip() if line.startswith("# ") else ""
    return ""


def same_copy(held: bytes, made: bytes) -> bool:
    """A file already under a copy's name is that copy: the same bytes, or the same memory id (the other side
    settled the same clash first: a copy's id is derived from what it copies, so both sides make the same)."""
    if held == made:
        return True
    try:
        return _read(held, "held").id == _read(made, "made").id
    except MergeError:
        return False


def free_name(stem: str, name_taken: Callable[[str], bool]) -> str:
    name, n = f"{stem}.md", 2
    while name_taken(name):
        name, n = f"{stem}-{n}.md", n + 1
    return name


def _compose(meta: CommentedMap, content: str) -> bytes:
    return canon.compose(meta, content).encode("utf-8")


# ---------------------------------------------------------------- dictionary.md


def merge_dictionary(base: bytes | None, ours: bytes, theirs: bytes, line_merge: LineMerge) -> MergeOutcome:
    """A clean line merge is taken; a clash keeps ours and adds, per canonical name, the aliases theirs has
    (a name only theirs lists is appended unless ours removed it)."""
    b, o, t = (canon.decode(x) if x else "" for x in (base, ours, theirs))
    merged = line_merge(b, o, t)
    if merged is not None:
        return MergeOutcome(merged.encode("utf-8"))
    base_names = {e.canonical for e in dictionary_file.entries(b)}
    ours_entries = {e.canonical: e for e in dictionary_file.entries(o)}
    lines = o.split("\n")
    trailing = lines and lines[-1] == ""
    if trailing:
        lines.pop()
    notes = []
    for entry in dictionary_file.entries(t):
        mine = ours_entries.get(entry.canonical)
        if mine is None:
            if entry.canonical not in base_names:
                lines.append(entry.line)
                notes.append(f"dictionary: added '{entry.name}' from the other machine")
            continue
        extra = [a for a in entry.aliases if a not in mine.aliases]
        if extra:
            mine.aliases.extend(extra)
            lines[mine.index] = mine.render()
            notes.append(f"dictionary: '{mine.name}' gained aliases {', '.join(extra)}")
    return MergeOutcome(("\n".join(lines) + ("\n" if trailing else "")).encode("utf-8"), notes=notes)
