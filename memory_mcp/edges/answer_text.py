"""Compact text renderings of answers for a model to read (the full record stays structured).

A recall answer as pretty-printed JSON spends most of its bytes on keys, nine score components and the
index report; the model needs the title, what kind of memory it is, where to cite and open it, the
excerpt and one score. The index gets one line only when the reconcile did something worth knowing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..domain import provenance
from ..domain.text import clip
from ..domain.visible import FENCE, data_line, fenced, quarantine_label

if TYPE_CHECKING:
    from ..domain.answers import IndexReport, RecallAnswer, RecallResult
    from ..domain.models import ReadAnswer, RememberAnswer

EXCERPT_CHARS = 220
OTHER_TITLE_CHARS = 60
LISTED_TITLE_CHARS = 42
EVIDENCE_CHARS = 54
# what to do with a remember's list, in two lines at most (the tool description says the same)
SETTLE_GUIDE = (
    "Settle each with its call: supersede if this replaces it, keep_both if not a conflict (never listed again); "
    "ask the user if unsure."
)


def settle_call(new_id: str, other_id: str, resolution: str) -> str:
    """The one memory_update call that settles a listed pair (recorded or not)."""
    return f"memory_update op=resolve_conflict id={new_id} other_id={other_id} resolution={resolution}"


def recall_text(answer: RecallAnswer) -> str:
    scopes = {r.scope for r in answer.results}
    lines = [f"as of {answer.as_of}: what the store held as current that day"] if answer.as_of else []
    for n, r in enumerate(answer.results, 1):
        tags = [r.type if r.kind == "memory" else f"document {r.label}"]
        if r.state != "active":
            tags.append(r.state)
        if r.kind == "memory" and r.trust != "user-stated":
            tags.append(r.trust)
        if r.kind == "memory":
            tags.append(provenance.short(r.origin))
        if len(scopes) > 1:
            tags.append(r.scope)
        tags.extend(result_marks(answer, r))
        if r.quarantine:
            tags.insert(0, quarantine_label(r.quarantine).upper().replace(":", " -", 1))
        ident = f" id {r.id}" if r.kind == "memory" else ""
        lines.append(f"{n}. ({', '.join(tags)}) score {r.score:.2f} {r.path}:{r.line}{ident}")
        label = "quarantined" if r.quarantine else ""
        lines.append(fenced(label, f"{r.title}\n{clip(r.excerpt, EXCERPT_CHARS)}"))
        if r.conflicts:
            lines.append(conflict_line(r, answer.results))
    if not answer.results:
        lines.append(f"no results for {answer.query!r}" if answer.query.strip() else "empty query: nothing searched")
    if answer.left_out:
        lines.append(f"({answer.left_out} more result(s) did not fit the budget of {answer.budget_bytes} bytes)")
    if answer.collapsed:
        lines.append(f"({len(answer.collapsed)} near-duplicate(s) collapsed into results above)")
    if (weak := weak_results_note(answer.results)) is not None:
        lines.append(f"({weak})")
    if answer.semantic_note:
        lines.append(f"({answer.semantic_note})")
    if (note := index_note(answer.index)) is not None:
        lines.append(note)
    return "\n".join(lines)


WEAK_SCORE = 0.0005  # shown as 0.000 (the CLI) and 0.00 (the tools' text)


def weak_results_note(results: list[RecallResult]) -> str | None:
    """Why results scored 0 are listed: they match the query only through a short or common word (the limit is
    filled best first, and nothing better matched). None when every result scored above 0."""
    weak = [n for n, r in enumerate(results, 1) if r.score < WEAK_SCORE]
    if not weak:
        return None
    which = f"result {weak[0]}" if len(weak) == 1 else "results " + ", ".join(map(str, weak))
    return f"{which}: score 0, only a short or common word of the query matches (probably unrelated)"


def conflict_line(result: RecallResult, results: list[RecallResult]) -> str:
    """One line under a result in an unresolved conflict: which memory contradicts it (by its number when it is
    listed too) and the pair to settle with memory_update op=resolve_conflict."""
    number = {(r.scope, r.id): n for n, r in enumerate(results, 1)}
    others = []
    for c in result.conflicts:
        n = number.get((result.scope, c.other_id))
        others.append(f"result {n}" if n else f"id {c.other_id}")
    pairs = ", ".join(c.pair_hash for c in result.conflicts)
    return f"   ! unresolved conflict: contradicted by {'; '.join(others)} (pair_hash {pairs})"


def remember_text(answer: RememberAnswer) -> str:
    """What memory_remember did, in a few lines: where the memory is, what it replaced, and the memories it may
    contradict or replace, best first, each with its evidence and the call that settles it (the structured content
    keeps paths, pair hashes, shared entities and the index report)."""
    where = f"{answer.path} id {answer.id} ({answer.scope})"
    if answer.created:
        lines = [f"remembered: {where}"]
    else:
        lines = [f"already remembered ({answer.deduplicated_state}), nothing written: {where}"]
    if answer.superseded:
        lines.append(f"superseded (now archived): {', '.join(answer.superseded)}")
    if answer.message:
        lines.append(answer.message)
    if answer.quarantine:
        lines.append(
            f"put in quarantine ({quarantine_label(answer.quarantine)}): kept, but not in the session-start context "
            "and marked in recall until a person releases it"
        )
    if answer.listed:
        written = sum(n.written for n in answer.listed)
        lines.append(
            f"{len(answer.listed)} listed, best first, that this may contradict or replace; "
            + (f"{written} written as open conflict(s)." if written else "none written.")
        )
        lines.append(SETTLE_GUIDE)
    if answer.listed:
        # the listed memories' titles and the words the gate read are memory text: quoted inside one fence, a line
        # each; the calls that settle them are ours, after it, by the same numbers
        lines.append(FENCE + "memory listed")
        for n, item in enumerate(answer.listed, 1):
            lines.append(
                data_line(
                    f"{n}. {clip(item.title, LISTED_TITLE_CHARS)} ({item.type}; {item.kind} {item.weight:.2f}): "
                    f"{clip(item.evidence, EVIDENCE_CHARS)}"
                )
            )
        lines.append(FENCE)
    for n, item in enumerate(answer.listed, 1):
        lines.append(f"{n}. {settle_call(answer.id, item.id, item.settle)}")
    if (note := index_note(answer.index)) is not None:
        lines.append(note)
    return "\n".join(lines)


def read_text(answer: ReadAnswer) -> str:
    """memory_read for the model: where the lines are from, then the lines themselves inside the fence."""
    head = f"{answer.path} lines {answer.from_line}-{answer.to_line} of {answer.total_lines}"
    if answer.id:
        head += f" id {answer.id}"
    if answer.quarantine:
        head += f" ({quarantine_label(answer.quarantine).upper().replace(':', ' -', 1)})"
    lines = [head, fenced("quarantined" if answer.quarantine else answer.kind, answer.text)]
    if answer.superseded_by_chain:
        lines.append("superseded by: " + " -> ".join(f"{c.id} ({c.state})" for c in answer.superseded_by_chain))
    if answer.conflicts:
        lines.append(f"conflict history: {len(answer.conflicts)} pair(s) (structured content)")
    if (note := index_note(answer.index)) is not None:
        lines.append(note)
    return "\n".join(lines)


def result_marks(answer: RecallAnswer, r: RecallResult) -> list[str]:
    """What every rendering says beside a result: "current version of #3, #5" and "follows #1" (results of this
    answer by rank, or by id when the limit cut them)."""
    rank_of = {(x.scope, x.id): n for n, x in enumerate(answer.results, 1)}

    def ref(mem_id: str) -> str:
        return f"#{rank_of[(r.scope, mem_id)]}" if (r.scope, mem_id) in rank_of else mem_id

    marks = []
    if r.current_version_of:
        marks.append("current version of " + ", ".join(ref(i) for i in r.current_version_of))
    if r.continues is not None:
        marks.append(f"follows {ref(r.continues)}" + ("" if r.matched else ", not matched by the query"))
    return marks


def index_note(index: IndexReport) -> str | None:
    """One line when the reconcile did something worth knowing: a rebuild, hand edits picked up, files
    that do not parse, an index kept in memory. None for the everyday no-change call."""
    rec = index.reconcile
    parts = []
    if rec.rebuilt:
        parts.append(f"rebuilt ({rec.rebuild_reason})")
    elif rec.reindexed or rec.removed:
        parts.append(f"{rec.reindexed} file(s) re-read, {rec.removed} removed")
    if rec.quarantined:
        parts.append(f"{len(rec.quarantined)} put in quarantine: " + ", ".join(rec.quarantined[:3]))
    if index.unparseable:
        parts.append(f"{len(index.unparseable)} unparseable: " + ", ".join(u.path for u in index.unparseable[:3]))
    if rec.index_in_memory:
        parts.append(f"in-memory index ({rec.index_in_memory})")
    return "index: " + "; ".join(parts) if parts else None


def usage_guide() -> str:
    """How an agent should use the memory tools: the text of the memory_start prompt, before the context."""
    return """# Using memory-mcp

- Recall (memory_recall) before answering about the user, their projects or past decisions; cite path:line.
- Remember (memory_remember) durable things, one per call, with a type: fact, preference, decision (with its
  why), episode (dated event), reference (where to find something), knowledge (distilled how-to), handoff.
- trust: user-stated only for what the user said or confirmed; agent-inferred for your conclusions; imported
  for copied material.
- entities: the people, projects and systems a memory is about, in canonical names.
- Conflicts: remember lists, best first, memories the new one may contradict or replace, each with its evidence and
  one memory_update op=resolve_conflict call: supersede if the new one replaces it, keep_both if not a conflict;
  ask the user when unsure. Only near-certain conflicts are written into files. Nothing is overwritten silently.
- Something changed? memory_update op=supersede (or remember with supersedes) keeps the history.
- Before the session ends: memory_remember type=handoff with where you left off and what comes next."""
