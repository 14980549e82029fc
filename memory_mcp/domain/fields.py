"""The frontmatter fields of a memory file, each declared once: its YAML kind, where new files write it, whether
memory_remember / memory_update op=edit / the CLI / the edit form take it (and the argument's description), its
index column and its sync merge rule. The canon, the index, the tools, the edges and the git merge driver read
this table instead of naming fields again. Plain dataclasses, no pydantic: the merge driver imports it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    ID = "id"
    WORD = "word"  # one of a vocabulary's words (type, state, trust)
    TEXT = "text"
    LIST = "list"  # a list of names
    LINKS = "links"  # a list of memory ids, maybe written as Obsidian links
    LINK = "link"  # one memory id
    TIME = "time"  # an ISO time the server writes (`2026-02-11T09:10:00Z`)
    DATE = "date"  # a day a person or agent sets (`2026-05-31`), YAML-unquoted like a time
    CONFLICTS = "conflicts"  # the conflict pairs recorded in the newer memory


class MergeHow(StrEnum):
    IDENTITY = "identity"  # different on the two sides: two memories, both files kept
    LATER_TIME = "later time"  # the later of the two values
    LIFECYCLE = "lifecycle"  # changed differently on both sides: the move further along the lifecycle
    SET = "set"  # three-way as a set: an entry added on one side is added, removed on one side stays removed
    CONFLICT_PAIRS = "conflict pairs"  # entries keyed by `with`, three-way as a set; a resolved entry beats open
    ONE_SIDE = "one side"  # changed on one side only: that change; on both differently: the later-edited side


@dataclass(frozen=True)
class FieldMergeRule:
    how: MergeHow
    why: str
    links: bool = False  # entries are memory ids, maybe written as Obsidian links: compared by id


DEFAULT_RULE = FieldMergeRule(
    MergeHow.ONE_SIDE, "a one-sided change is the only news; a two-sided clash takes the later-edited side"
)
_LINK_RULE = FieldMergeRule(MergeHow.SET, "links are facts about pairs: kept unless removed", links=True)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: Kind
    merge: FieldMergeRule = DEFAULT_RULE
    leading: bool = True  # written in this order at the top of a new file (the rest follow in the order given)
    column: bool = False  # a plain TEXT column of the same name in the index's `memories` rows (beyond the core)
    edit: bool = False  # an argument of memory_remember and memory_update op=edit, of the CLI and the edit form
    description: str = ""  # the tool argument's description: short, the tool surface has a byte budget
    cli_help: str = ""  # the CLI's help where the description does not read as one (it only names a format)

    @property
    def flag(self) -> str:
        """The CLI option: `--review-after`."""
        return "--" + self.name.replace("_", "-")

    @property
    def metavar(self) -> str:
        """The CLI placeholder: a day's format, ID for a memory id, else TEXT."""
        return {Kind.DATE: "YYYY-MM-DD", Kind.LINK: "ID"}.get(self.kind, "TEXT")

    @property
    def help(self) -> str:
        """The CLI help: `cli_help`, else the description without its format prefix (`when to re-check it`)."""
        return self.cli_help or self.description.split(": ", 1)[-1].rstrip(".")


FIELDS: tuple[FieldSpec, ...] = (
    FieldSpec(
        "id", Kind.ID, FieldMergeRule(MergeHow.IDENTITY, "the id is the memory: two ids are two memories, both kept")
    ),
    FieldSpec("type", Kind.WORD, edit=True),
    FieldSpec(
        "state",
        Kind.WORD,
        FieldMergeRule(
            MergeHow.LIFECYCLE,
            "archiving or retracting is deliberate and must not be undone by a concurrent edit; "
            "the further state wins (active < archived < deprecated) and the merge says so",
        ),
    ),
    FieldSpec("trust", Kind.WORD, edit=True),
    FieldSpec(
        "entities",
        Kind.LIST,
        FieldMergeRule(MergeHow.SET, "tags: both sides' additions count, a removal is a decision"),
        edit=True,
    ),
    FieldSpec("source", Kind.TEXT, edit=True, description="Origin: conversation, URL, file."),
    # provenance (issue 44): where the memory came from, one readable line written by the surface that made it
    # (domain/provenance.py); no tool argument sets it. A sync stamps the git author of a teammate's new memory
    # on arrival (a one-sided change, taken everywhere); the same line from two machines merges cleanly
    FieldSpec(
        "origin",
        Kind.TEXT,
        FieldMergeRule(
            MergeHow.ONE_SIDE,
            "where a memory came from is set once: a one-sided change (a sync naming the sender) is the news; "
            "a two-sided clash takes the later-edited side",
        ),
        column=True,
    ),
    FieldSpec("created", Kind.TIME),
    FieldSpec(
        "updated",
        Kind.TIME,
        FieldMergeRule(MergeHow.LATER_TIME, "the merged memory was last changed at the later edit"),
    ),
    FieldSpec("review_after", Kind.DATE, column=True, edit=True, description="YYYY-MM-DD: when to re-check it."),
    # validity (issue 27): set by the agent or person, never parsed from the text; a two-sided change takes the
    # later edit, like any plain value (extending and shortening are both deliberate)
    FieldSpec(
        "valid_from", Kind.DATE, column=True, edit=True, description="YYYY-MM-DD", cli_help="the first day it holds"
    ),
    FieldSpec(
        "valid_until", Kind.DATE, column=True, edit=True, description="YYYY-MM-DD", cli_help="the last day it holds"
    ),
    FieldSpec("supersedes", Kind.LINKS, _LINK_RULE),
    FieldSpec("superseded_by", Kind.LINKS, _LINK_RULE),
    # when a supersede archived the memory (older files: the successor's `created` stands in)
    FieldSpec(
        "superseded_at",
        Kind.TIME,
        FieldMergeRule(MergeHow.LATER_TIME, "the latest supersede of the two sides is the one its links record"),
        column=True,
    ),
    # a thread (issue 28): the memory this one continues — the message before it in a conversation, the step
    # before it; recall shows the best result's continuation right after it (search/threads.py)
    FieldSpec(
        "follows",
        Kind.LINK,
        column=True,
        edit=True,
        description="Id of the memory it continues.",
        cli_help="the memory it continues",
    ),
    FieldSpec("related", Kind.LINKS, _LINK_RULE, leading=False),
    FieldSpec(
        "conflicts",
        Kind.CONFLICTS,
        FieldMergeRule(
            MergeHow.CONFLICT_PAIRS, "a pair recorded anywhere stays recorded; a resolution made anywhere stands"
        ),
        leading=False,
    ),
    # issue 44: the poisoning screen (domain/screen.py) caught the memory: `<YYYY-MM-DD> <reason>`. Kept in the canon,
    # never in the session-start context, fenced and marked in recall; only a person releases it (CLI, browser view)
    FieldSpec("quarantine", Kind.TEXT, leading=False, column=True),
    # written by that release: `<YYYY-MM-DD> <digest of the title and body released>`; a text changed since is
    # screened again
    FieldSpec("released", Kind.TEXT, leading=False, column=True),
)
BY_NAME = {f.name: f for f in FIELDS}

# derived views, each used by one reader
FIELD_ORDER = tuple(f.name for f in FIELDS if f.leading)  # a new file's frontmatter order
TIME_KEYS = tuple(f.name for f in FIELDS if f.kind in (Kind.TIME, Kind.DATE))  # written in one style
DATE_FIELDS = tuple(f.name for f in FIELDS if f.kind is Kind.DATE)  # optional days: checked as YYYY-MM-DD
# the optional single values (domain/memory.py OptionalValues): plain TEXT columns of the index's memory rows
COLUMNS = tuple(f.name for f in FIELDS if f.column)
EDIT_FIELDS = tuple(f.name for f in FIELDS if f.edit)  # what memory_update op=edit may change (with title, body)
# the optional values a caller sets: tool arguments, CLI flags and form fields derived from this table
EDIT_VALUES = tuple(name for name in COLUMNS if BY_NAME[name].edit)
FIELD_MERGE_RULES = {f.name: f.merge for f in FIELDS if f.merge is not DEFAULT_RULE}
