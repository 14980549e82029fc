"""The browser view's HTML: Jinja2 templates from `templates/`, every value autoescaped.

Escaping is `html.escape(quote=True)` through the environment's `finalize` hook rather than MarkupSafe's
own, so pages keep the entities they always had (`&quot;`, `&#x27;`) and `None` prints as nothing.
`|join` and `~` switch to MarkupSafe's escaping as soon as one part is already markup (a macro's output),
so templates join plain text only and print macro output on its own.
"""

from __future__ import annotations

import html
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ...domain.fields import BY_NAME, EDIT_VALUES, Kind
from ...domain.models import MemoryType, State, Trust
from ...domain.visible import visible
from ..answer_text import result_marks
from .guard import LOOPBACK


def _escaped(value: Any) -> Markup:
    """Every value HTML-escaped, and any hidden character a memory holds written out as its code point."""
    if hasattr(value, "__html__"):  # a macro's output or a block: already HTML
        return Markup(value)
    return Markup(html.escape(visible("" if value is None else str(value)), quote=True))


def day(stamp: str | None) -> str:
    """The date part of an ISO timestamp."""
    return (stamp or "")[:10]


def plural(n: int, noun: str) -> str:
    """`1 result`, `2 results`."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


# What each step of a recall plan did, in words a person reads (the plan's own names stay behind a toggle).
SEARCH_STEPS = {
    "all-terms": "memories holding every word you typed",
    "any-term": "memories holding some of the words",
    "trigram": "words found inside longer words or with other endings",
    "trigram-grams": "closer spellings ranked higher",
    "like": "short words found anywhere in the text",
    "cosine": "memories with a similar meaning (embeddings)",
    "no terms": "nothing to search for: no words in the query",
    "empty query": "nothing to search for: the query is empty",
    "current handoff": "the current handoff",
}


def search_steps(plan: str) -> list[str]:
    """A recall plan (`all-terms+trigram`) as the steps it ran, in plain words."""
    return [SEARCH_STEPS.get(leg, leg) for leg in plan.split("+")]


def frontmatter_kind(value: Any) -> str:
    """How the memory page shows one frontmatter value: a list of mappings, a list, a mapping, blank or text."""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "mappings"
        return "list" if value else "empty-list"
    if isinstance(value, dict):
        return "mapping"
    return "blank" if value in (None, "") else "text"


ENV = Environment(
    loader=PackageLoader("memory_mcp.edges.web", "templates"),
    autoescape=True,
    finalize=_escaped,
    undefined=StrictUndefined,  # a misspelt name in a template is an error, not an empty string
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.globals.update(
    day=day,
    frontmatter_kind=frontmatter_kind,
    loopback=LOOPBACK,
    plural=plural,
    search_steps=search_steps,
    result_marks=result_marks,
    memory_types=[t.value for t in MemoryType],
    # the edit form's optional values: (name, input type) from the field table
    value_inputs=[(name, "date" if BY_NAME[name].kind is Kind.DATE else "text") for name in EDIT_VALUES],
    trusts=[t.value for t in Trust],
    state_tabs=[("", "All"), *((s.value, s.value.capitalize()) for s in State)],
    zip=zip,
)


def render(template: str, /, **values: Any) -> str:
    """One page (or partial) as HTML."""
    return ENV.get_template(template).render(**values)
