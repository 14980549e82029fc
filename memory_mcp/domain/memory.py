"""The memory record itself: a parsed canon file. Plain dataclasses, no pydantic, so the canon (and the
git merge driver, a process per merged file) can load without the answers' models."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .vocabulary import MemoryType, State, Trust


@dataclass
class ConflictRecord:
    """One conflict pair as recorded in the newer memory's frontmatter (`conflicts:`)."""

    other_id: str
    status: str  # "open" | "resolved"
    detected: str
    resolution: str | None = None
    resolved: str | None = None
    note: str | None = None


@dataclass(kw_only=True)
class OptionalValues:
    """The field table's optional single values (domain/fields.py `COLUMNS`: the index's plain columns), None when
    the file has none. The one typed place that names them: the parsed file, the index row and the tool arguments
    carry them as this record, and `tests/test_fields.py` holds it to the table."""

    origin: str | None = None  # where it came from (domain/provenance.py); None: not recorded ("origin unknown")
    review_after: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_at: str | None = None  # when a supersede archived it (older files: None)
    follows: str | None = None  # the memory this one continues in its thread (search/threads.py)
    quarantine: str | None = None  # `<date> <reason>`: the screen caught it (domain/screen.py)
    released: str | None = None  # `<date> <digest>`: a person released this text from quarantine

    def given(self) -> dict[str, str]:
        """The values that are set (a tool argument left out is None), by field name."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}


@dataclass
class Memory(OptionalValues):
    """A parsed canon file. `body_line` is the 1-based file line where the body starts."""

    id: str
    type: MemoryType
    state: State
    trust: Trust
    title: str
    body: str
    entities: list[str]
    source: str
    created: str
    updated: str
    supersedes: list[str]
    superseded_by: list[str]
    related: list[str] = field(default_factory=list)
    conflicts: list[ConflictRecord] = field(default_factory=list)
    title_line: int = 1
    body_line: int = 1

    @property
    def excerpt(self) -> str:
        return first_paragraph(self.body)


def first_paragraph(body: str, limit: int = 320) -> str:
    para = ""
    for block in body.strip().split("\n\n"):
        if block.strip():
            para = " ".join(line.strip() for line in block.strip().splitlines())
            break
    return para if len(para) <= limit else para[: limit - 1].rstrip() + "…"
