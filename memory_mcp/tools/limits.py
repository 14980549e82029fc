"""Argument limits and lifecycle thresholds: the defaults and the `Limits` record settings override."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..config import Settings
from ..domain.errors import InputError
from ..domain.textinput import check_text
from ..search.conflict_limits import MAX_CONFLICTS, MAX_RELATED, NEAR_TEXT_SIMILARITY

MAX_TITLE = 200
MAX_BODY = 200_000
MAX_ENTITIES = 50
MAX_ENTITY_LEN = 100
MAX_SOURCE = 1000
MAX_QUERY = 2000
MAX_READ_LINES = 200
RECALL_LIMIT = (1, 20)
BROWSE_LIMIT = (1, 500)
COMPACTION_MIN_AGE_DAYS = 30
COMPACTION_MIN_GROUP = 3
DEFAULT_BUDGET = 4096  # memory://context's bytes (context.budget_bytes)


def _setting(default: Any, key: str) -> Any:
    """A `Limits` field with its default and the setting (`memory-mcp config` key) that overrides it."""
    return field(default=default, metadata={"setting": key})


@dataclass(frozen=True)
class Limits:
    """Argument limits and lifecycle thresholds; defaults above, overridable by settings (limits.*, ...)."""

    max_title: int = _setting(MAX_TITLE, "limits.max_title")
    max_body: int = _setting(MAX_BODY, "limits.max_body")
    max_entities: int = _setting(MAX_ENTITIES, "limits.max_entities")
    max_entity_len: int = _setting(MAX_ENTITY_LEN, "limits.max_entity_len")
    max_source: int = _setting(MAX_SOURCE, "limits.max_source")
    max_query: int = _setting(MAX_QUERY, "limits.max_query")
    max_read_lines: int = _setting(MAX_READ_LINES, "limits.max_read_lines")
    recall_default: int = _setting(5, "recall.default_limit")
    recall_max: int = _setting(RECALL_LIMIT[1], "recall.max_limit")
    compaction_min_age_days: int = _setting(COMPACTION_MIN_AGE_DAYS, "compaction.min_age_days")
    compaction_min_group: int = _setting(COMPACTION_MIN_GROUP, "compaction.min_group")
    near_text_similarity: float = _setting(NEAR_TEXT_SIMILARITY, "conflicts.near_text_similarity")
    max_conflicts: int = _setting(MAX_CONFLICTS, "conflicts.max_conflicts")
    max_related: int = _setting(MAX_RELATED, "conflicts.max_related")
    context_budget: int = _setting(DEFAULT_BUDGET, "context.budget_bytes")

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """Each field from the setting named beside it."""
        return cls(**{f.name: settings.get(f.metadata["setting"]) for f in fields(cls)})

    def title(self, title: str) -> str:
        title = " ".join(check_text(title, "title").split())
        if not title:
            raise InputError("title: must not be empty")
        if len(title) > self.max_title:
            raise InputError(f"title: {len(title)} characters, at most {self.max_title}")
        return title

    def body(self, body: str) -> str:
        body = check_text(body, "body")
        if len(body) > self.max_body:
            raise InputError(f"body: {len(body)} characters, at most {self.max_body}")
        if not body.strip():  # the body is what recall excerpts and the gate compares: a memory needs one
            raise InputError("body: must not be empty (the memory's text: at least one word)")
        if body.lstrip().startswith("---"):
            body = "\u200b" + body.lstrip()  # never let a body start a second frontmatter block
        return body.strip()

    def entities(self, entities: list[str] | None) -> list[str]:
        entities = entities or []
        if len(entities) > self.max_entities:
            raise InputError(f"entities: {len(entities)} given, at most {self.max_entities}")
        for n, e in enumerate(entities):
            check_text(e, f"entities[{n}]")
            if not e.strip() or len(e) > self.max_entity_len or "\n" in e:
                raise InputError(f"entities: '{e[:40]}' must be 1..{self.max_entity_len} characters on one line")
        return entities

    def source(self, source: str | None) -> str:
        source = check_text(source or "", "source").strip()
        if len(source) > self.max_source or "\n" in source:
            raise InputError(f"source: at most {self.max_source} characters on one line")
        return source

    def line_range(self, from_line: int | None, to_line: int | None, total: int) -> tuple[int, int]:
        start = 1 if from_line is None else from_line
        if start < 1:
            raise InputError("from_line: must be at least 1")
        if to_line is not None and to_line < start:
            raise InputError("to_line: must not be before from_line")
        end = min(total, start + self.max_read_lines - 1) if to_line is None else to_line
        if end - start + 1 > self.max_read_lines:
            raise InputError(f"to_line: at most {self.max_read_lines} lines per read ({start}..{end} asked)")
        return start, min(end, total)
