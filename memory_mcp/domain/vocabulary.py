"""The words of the tool surface, declared once: memory types, states, trusts, scopes, recall modes, update
ops, forget modes, conflict resolutions.

The models use the enums, the MCP schemas build their `Literal`s from these tuples and the CLI offers them
as choices, so adding a word here is the one change that reaches every edge.
"""

from __future__ import annotations

from enum import StrEnum


class MemoryType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    DECISION = "decision"
    EPISODE = "episode"
    REFERENCE = "reference"
    KNOWLEDGE = "knowledge"
    HANDOFF = "handoff"  # reserved: at most one active per store; a new one supersedes the previous


class State(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    DEPRECATED = "deprecated"


class Trust(StrEnum):
    USER_STATED = "user-stated"
    AGENT_INFERRED = "agent-inferred"
    IMPORTED = "imported"


TYPES = tuple(t.value for t in MemoryType)
STATES = tuple(s.value for s in State)
TRUSTS = tuple(t.value for t in Trust)
SCOPES = ("local", "global")  # the project's store, the account's store
RECALL_MODES = ("auto", "bm25", "hybrid")
# each op of memory_update and the fields it takes: any other field given is refused, naming the op
UPDATE_OP_FIELDS = {
    "edit": ("title", "body", "type", "trust", "entities", "source", "review_after", "expected_sha256"),
    "supersede": ("by",),
    "set_state": ("state", "reason"),
    "link": ("other_id",),
    "resolve_conflict": ("pair_hash", "resolution", "winner", "note"),
}
UPDATE_OPS = tuple(UPDATE_OP_FIELDS)
FORGET_MODES = ("archive", "deprecate", "purge")
RESOLUTIONS = ("keep_both", "supersede")
