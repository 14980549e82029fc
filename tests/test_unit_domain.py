"""Unit tests of the domain package: the lifecycle matrix case by case, and the pure ranking score.

Expectations are written out from the state machine in the issue and architecture.md, not read from
`lifecycle.ALLOWED`, so a change of the table shows up here.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memory_mcp.domain.errors import InputError, TransitionError
from memory_mcp.domain.lifecycle import check_editable, check_purge, check_transition
from memory_mcp.domain.models import State
from memory_mcp.domain.ranking import DEFAULT, age_days, freshness, heat, score_parts, score_total, text_score
from memory_mcp.domain.text import clip, fold, stem, verb_root
from memory_mcp.search.planner import coverage, terms_of, trigram_phrases

A, R, D = State.ACTIVE, State.ARCHIVED, State.DEPRECATED
OK = None

# (current, target, reason, what happens)
TRANSITIONS = [
    (A, A, None, TransitionError),
    (A, R, None, OK),
    (A, D, None, InputError),  # deprecating needs a reason
    (A, D, "wrong", OK),
    (R, A, None, OK),  # restore
    (R, R, None, TransitionError),
    (R, D, None, InputError),
    (R, D, "retracted", OK),
    (D, A, None, InputError),  # reactivation needs a reason
    (D, A, "   ", InputError),  # blank is no reason
    (D, A, "true after all", OK),
    (D, R, None, TransitionError),  # the one forbidden move
    (D, R, "even with a reason", TransitionError),
    (D, D, "again", TransitionError),
]


@pytest.mark.parametrize(("current", "target", "reason", "outcome"), TRANSITIONS)
def test_transition(current: State, target: State, reason: str | None, outcome: type[Exception] | None) -> None:
    if outcome is None:
        check_transition(current, target, reason)
    else:
        with pytest.raises(outcome):
            check_transition(current, target, reason)


# (rule, state, allowed, what the refusal says)
STATE_RULES = [
    (check_purge, A, False, "archived or deprecated first"),
    (check_purge, R, True, None),
    (check_purge, D, True, None),
    (check_editable, A, True, None),
    (check_editable, R, True, None),
    (check_editable, D, False, "reactivate it first"),
]


@pytest.mark.parametrize(("rule", "current", "allowed", "refusal"), STATE_RULES)
def test_purge_and_edit_rules(
    rule: Callable[[State], None], current: State, allowed: bool, refusal: str | None
) -> None:
    """Purge only after archive or deprecate; every state but deprecated is editable."""
    if allowed:
        rule(current)
    else:
        with pytest.raises(TransitionError, match=refusal):
            rule(current)


NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _score(**overrides: object) -> float:
    args: dict = dict(word=0.8, trigram=0.5, like=0.0, coverage=1.0, trust="user-stated", state="active")
    args |= dict(updated=NOW.isoformat(), recalls=0, last_recalled=None, now=NOW)
    args |= overrides
    return score_total(**args).total


def test_trust_and_state_order_the_same_text() -> None:
    assert _score(trust="user-stated") > _score(trust="imported") > _score(trust="agent-inferred")
    assert _score(state="active") > _score(state="archived") > _score(state="deprecated")
    assert _score(state="archived") == pytest.approx(_score() * DEFAULT.state["archived"], rel=1e-5)


def test_more_coverage_and_more_text_rank_higher() -> None:
    assert _score(coverage=1.0) > _score(coverage=0.5) > _score(coverage=0.0) > 0
    assert _score(word=1.0) > _score(word=0.2)
    assert text_score(1.0, 1.0, 0.0, 0.0) == pytest.approx(DEFAULT.coverage_floor)


def test_freshness_halves_every_half_life_and_heat_needs_recalls() -> None:
    assert freshness(NOW.isoformat(), NOW) == pytest.approx(DEFAULT.freshness_max)
    half = (NOW - timedelta(days=DEFAULT.freshness_half_life_days)).isoformat()
    assert freshness(half, NOW) == pytest.approx(DEFAULT.freshness_max / 2)
    assert heat(0, NOW.isoformat(), NOW) == 0.0
    assert heat(5, None, NOW) == 0.0
    assert heat(int(DEFAULT.heat_saturation_recalls), NOW.isoformat(), NOW) == pytest.approx(DEFAULT.heat_max)
    assert _score(recalls=10, last_recalled=NOW.isoformat()) > _score()


def test_an_unreadable_date_counts_as_ten_years_old() -> None:
    assert age_days("not a date", NOW) == 3650.0
    assert age_days("2026-05-31T00:00:00Z", NOW) == pytest.approx(1.0)


def test_the_components_explain_the_total() -> None:
    inputs: dict = dict(word=0.8, trigram=0.5, like=0.0, coverage=1.0, trust="imported", state="archived")
    t = score_total(**inputs, updated=NOW.isoformat(), recalls=0, last_recalled=None, now=NOW)
    total, parts = t.total, score_parts(t, **inputs, k=DEFAULT)
    assert total == pytest.approx(parts.text * parts.trust * parts.state * (1 + parts.freshness + parts.heat), abs=1e-5)
    assert (parts.trust, parts.state) == (0.9, 0.6)


@pytest.mark.parametrize(
    ("text", "folded"),
    [("Café", "cafe"), ("ÅNGSTRÖM", "angstrom"), ("ｆｕｌｌ", "full"), ("한국어", "한국어"), ("plain", "plain")],
)
def test_fold_ignores_case_width_and_accents_but_keeps_hangul(text: str, folded: str) -> None:
    assert fold(text) == folded


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [
        ("backups", "backup"),
        ("policies", "polic"),
        ("boxes", "box"),
        ("class", "class"),
        ("보안을", "보안"),
        ("끄는", "끄"),
    ],
)
def test_stem_strips_plurals_and_korean_particles(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


@pytest.mark.parametrize(
    ("word", "root"),
    [
        ("painted", "paint"),
        ("vacationed", "vacation"),
        ("camping", "camp"),
        ("travelling", "travel"),
        ("swimming", "swim"),
        ("wedding", "wedd"),  # never "wed": that prefix is Wednesday
        ("indeed", None),
        ("during", None),
        ("being", None),
        ("bed", None),
        ("café", None),
        ("보안을", None),
    ],
)
def test_verb_root_strips_english_ed_and_ing_only_when_a_root_remains(word: str, root: str | None) -> None:
    assert verb_root(word) == root


def test_a_verb_ending_still_meets_the_word_in_another_form() -> None:
    terms = terms_of("Where has Melanie camped?")
    # the word leg keeps the form as typed; the trigram leg and coverage look for the root as well
    assert [t.stem for t in terms if t.text == "camped"] == ["camped"]
    assert "camp" in trigram_phrases(terms, "Where has Melanie camped?")
    assert coverage(terms)(fold("Melanie: we went camping by the lake")) == 1.0
    assert coverage(terms)(fold("Melanie: thanks for the kind words")) == 0.5


def test_question_frame_words_do_not_count_for_coverage() -> None:
    terms = terms_of("What kind of art does Caroline make?")
    answer = coverage(terms)(fold("Caroline: my art is about identity"))
    chatter = coverage(terms)(fold("Caroline: thanks for your kind words"))
    assert answer > chatter


def test_clip_marks_what_it_cut() -> None:
    assert clip("short", 10) == "short"
    assert clip("a long sentence here", 8) == "a long…"
    assert len(clip("x" * 50, 10)) == 10
