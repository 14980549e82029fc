"""Finding the conflict gate's candidates: which stored memories a new one is weighed against.

Active memories of a gated type that share an entity with the new one (every one while the entity has at most
`ALL_OF_AN_ENTITY`, else the best word matches among them), the best word matches in the whole store (its
attribute words and names, and every word the lexicon gives their concepts, in every language it knows), and with
an embedder the stored memories nearest to it (`semantic_nearest`: what reaches a memory in another language that
shares no word or entity with it). Pairs already recorded (open or settled, "not a conflict" included) are never
candidates again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..domain.text import HANGUL, fold, sound_keys, stem
from ..domain.text import words as split_words
from ..index import conflict_pairs as conflict_table
from ..index import db as ix
from ..index import vectors as vector_table
from .claims import Statement, claim_of, concept, concept_words, entity_words, is_function_word, weekday_words
from .conflict_rules import EVENT_TYPES
from .planner import STOPWORDS, terms_of
from .semantic import Semantic, SemanticUnavailable

# An entity on this many active memories (a project, a team) says little about which statement is which.
BROAD_ENTITY = 5
# The types the gate weighs against each other: a decision to move to ECS contradicts a fact that says Heroku.
# Episodes record events: a stored one is never contradicted, a new one is weighed against these (design 7:
# the writers of the independent sets made "Upgraded X to 16" an episode that replaces "X is on 14");
# handoffs never reach the gate.
GATED_TYPES = ("fact", "preference", "decision", "knowledge", "reference")
# Every memory carrying an entity is weighed while the entity has at most this many; beyond (a project of
# thousands), the best word matches among them, so one remember stays fast on a large store.
ALL_OF_AN_ENTITY = 200
WORD_MATCHES = 20  # best word matches in the whole store (statements without a shared entity)
WORD_MATCHES_ON_AN_ENTITY = 60  # best word matches among the memories of an entity beyond ALL_OF_AN_ENTITY

# with an embedder: the stored memories nearest the new one's text (vectors in the index), beside the word matches
NEAREST = 5
# the rowids of the stored memories nearest a new statement, of the given types
Nearest = Callable[[Statement, tuple[str, ...]], set[int]]


@dataclass
class Candidates:
    """The stored memories a new statement is weighed against, and its entities too common to say much."""

    memories: list[ix.IndexedMemory]
    broad: frozenset[str]
    # what found a memory sharing no entity with the new one, when it is not its words: its text names one of the
    # new memory's entities (id → "names hardwood"), or a tag of its in the other script sounds like one of the new
    # memory's words (id → "sounds like: masks / 마스크")
    found_by: dict[str, str] = field(default_factory=dict)


def find_candidates(
    conn: sqlite3.Connection,
    new: Statement,
    new_id: str,
    skip_recorded: bool = True,
    nearest: Nearest | None = None,
) -> Candidates:
    """The candidates of `new` (see the module docstring); `skip_recorded=False` keeps the recorded pairs (how
    reindex judges them again); `nearest` adds the memories an embedder finds near it."""
    # a stored event never becomes untrue (an episode meets other episodes only as related), but a new event can
    # make a stored fact untrue ("Upgraded orders-db to Postgres 16 last night" / "orders-db is on PostgreSQL 14")
    types = (*GATED_TYPES, new.type) if new.type in EVENT_TYPES else GATED_TYPES
    entities = list(new.entities)
    counts = conflict_table.entity_counts(conn, entities)
    few = [e for e in entities if counts.get(e, 0) <= ALL_OF_AN_ENTITY]
    many = [e for e in entities if counts.get(e, 0) > ALL_OF_AN_ENTITY]
    rowids = conflict_table.rowids_sharing_an_entity(conn, few, types)
    # an entity few memories carry is searched as a word too: a memory may name it without the tag
    # ("Hardwood orders go to Baird Brothers" / "Hardwood for the shop comes from Johnson Lumber")
    named = tuple(e for e in entities if counts.get(e, 0) < BROAD_ENTITY)
    words = sorted(_search_words(new, named))[:96]
    if words:
        # stems as prefixes (the index holds "회의록은", the stem is "회의록"), plus the other words and
        # languages of the new statement's attributes (owner → responsable, 담당자)
        expr = " OR ".join('"' + w.replace('"', '""') + '"*' for w in words)
        rowids |= conflict_table.rowids_matching_words(conn, expr, types, WORD_MATCHES)
        if many:
            rowids |= conflict_table.rowids_matching_words(conn, expr, types, WORD_MATCHES_ON_AN_ENTITY, many)
    if nearest is not None:
        rowids |= nearest(new, types)
    sounding = _sounding_entities(conn, new)
    if sounding:
        rowids |= conflict_table.rowids_sharing_an_entity(conn, list(sounding), types)
    broad = frozenset(e for e in entities if counts.get(e, 0) >= BROAD_ENTITY)
    recorded = conflict_table.recorded_pairs(conn) if skip_recorded else set()
    found = [
        mem
        for mem in ix.memories_by_rowid(conn, sorted(rowids)).values()
        if mem.id != new_id and ix.pair_hash(mem.id, new_id) not in recorded
    ]
    found_by: dict[str, str] = {}
    for mem in found:
        if set(mem.entities) & set(entities):
            continue
        text = f" {' '.join(split_words(fold(f'{mem.title} {mem.body}')))} "
        if names := [e for e in named if _telling(e) and f" {' '.join(split_words(fold(e)))} " in text]:
            found_by[mem.id] = f"names {', '.join(names[:2])}"
        elif tags := [t for t in mem.entities if t in sounding]:
            found_by[mem.id] = f"sounds like: {sounding[tags[0]]} / {tags[0]}"
    return Candidates(found, broad, found_by)


def _sounding_entities(conn: sqlite3.Connection, new: Statement) -> dict[str, str]:
    """The stored entities written in the other script (Hangul / Latin) that sound like a word or an entity of the
    new statement ("masks" / 마스크, 펜션 / "pension", "check-in" / 체크인: `sound_keys`), each with that word: what
    connects two languages without an embedder where no word, concept or tag does."""
    mine: dict[str, tuple[str, bool]] = {}
    for word in [*split_words(fold(new.text)), *new.entities]:
        hangul = bool(HANGUL.search(word))
        for key in _word_keys(stem(word) if hangul else word):
            mine.setdefault(key, (word, hangul))
    if not mine:
        return {}
    found: dict[str, str] = {}
    for tag in conflict_table.entity_names(conn):  # the memories carrying one are filtered by type and state after
        for key in _word_keys(tag):
            hit = mine.get(key)
            if hit is not None and hit[1] != bool(HANGUL.search(tag)):
                found[tag] = hit[0]
                break
    return found


def _telling(entity: str) -> bool:
    """An entity whose name says something when a text writes it (not "me", "we", "ops")."""
    return len(f := fold(entity)) >= 4 and f not in STOPWORDS


@lru_cache(maxsize=16384)
def _word_keys(word: str) -> frozenset[str]:
    """The sound keys of a word or an entity ("study-rooms": the parts joined, and each part)."""
    parts = split_words(fold(word).replace("_", " "))
    keys = sound_keys("".join(parts)) if len(parts) > 1 else frozenset()
    for part in parts:
        keys |= sound_keys(part)
    return keys


def semantic_nearest(conn: sqlite3.Connection, semantic: Semantic) -> Nearest:
    """With an embedder: the `NEAREST` stored memories whose vectors are closest to the new statement's text, in
    any language. Memories still lacking a vector are embedded first, a few per call (as recall does); the stored
    vectors are read once into a matrix kept in memory until the index gains or loses a vector or a memory (design
    8 read all of them at every remember: p95 350 ms at 10,000). An embedder that fails finds nothing."""

    def nearest(new: Statement, types: tuple[str, ...]) -> set[int]:
        try:
            if semantic.config.embed_per_recall:
                semantic.fill(conn, semantic.config.embed_per_recall)
            vec = semantic.embed([vector_table.embed_text(new.title, new.body)])[0]
        except SemanticUnavailable:
            return set()
        rowids = _closest_rowids(conn, semantic.name, vec, NEAREST * 4)
        kept = [m.rowid for m in ix.memories_by_rowid(conn, rowids).values() if m.state == "active" and m.type in types]
        order = {r: i for i, r in enumerate(rowids)}
        return set(sorted(kept, key=order.__getitem__)[:NEAREST])

    return nearest


_MATRICES_MAX = 8  # stores whose vectors are kept (a service opens one or two; the benchmarks many in turn)
_MATRICES: dict[tuple[str, str], tuple[tuple[int, int, int], list[int], Any]] = {}


def _closest_rowids(conn: sqlite3.Connection, provider: str, vec: list[float], depth: int) -> list[int]:
    """The rowids of the `depth` stored vectors closest to `vec`, best first (numpy, from the cached matrix)."""
    try:
        import numpy as np
    except ImportError:  # an embedder without numpy (Ollama): the index's own scan
        return [r[0] for r in vector_table.cosine_rank(conn, provider, vec, depth=depth)]
    key = (vector_table.database_file(conn), provider)
    signature = vector_table.memory_vectors_signature(conn, provider)
    cached = _MATRICES.get(key)
    if cached is None or cached[0] != signature:
        rows = vector_table.memory_vectors(conn, provider, len(vec))
        matrix = np.frombuffer(b"".join(b for _, b in rows), dtype="<f4").reshape(len(rows), len(vec))
        cached = (signature, [r for r, _ in rows], matrix)
        if key[0]:  # an in-memory index has no name to key it by
            if len(_MATRICES) >= _MATRICES_MAX:
                _MATRICES.clear()
            _MATRICES[key] = cached
    _, rowids, matrix = cached
    if not rowids:
        return []
    q = np.asarray(vec, dtype=np.float32)
    sims = matrix @ (q / (np.linalg.norm(q) or 1.0))
    top = np.argsort(-sims)[:depth]
    return [rowids[i] for i in top if sims[i] > 0]


def broad_entities(conn: sqlite3.Connection, entities: list[str]) -> frozenset[str]:
    counts = conflict_table.entity_counts(conn, entities)
    return frozenset(e for e in entities if counts.get(e, 0) >= BROAD_ENTITY)


def _search_words(s: Statement, named: tuple[str, ...] = ()) -> set[str]:
    """What the candidate search looks for: the statement's attribute words and names (not its function words,
    numbers or broad entities: those are everywhere), the words of the `named` entities (few memories carry them),
    and every word the lexicon gives their concepts, in every language it knows."""
    c = claim_of(s)
    # an entity of one word ("hardwood", "passwords": its concept's words too), or of several as one phrase
    # ("deploy-server", not every memory about deploys)
    single = [f for e in named if len(split_words(f := fold(e))) == 1]
    own = entity_words(tuple(single))
    skip = c.entity_words - own
    words = {t.stem for t in terms_of(s.text) if not is_function_word(t) and t.stem not in skip}
    words |= {n for n in c.names if n not in skip}
    words |= {w for w in own if not concept(w)} | {fold(e) for e in named}
    for w in c.words | own:
        if name := concept(w):
            words |= concept_words(name) | {w}
    if c.value("weekday"):  # a day in one language finds the days said in another ("viernes" / "on Tuesdays")
        words |= weekday_words()
    return {w for w in words if len(w) >= 2 and w not in STOPWORDS}
