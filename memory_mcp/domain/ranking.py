"""Ranking: `score = text × trust × state × (1 + freshness + heat)`.

Every constant lives here and in docs/design/architecture.md; each result carries its components so
an answer can always be explained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import NamedTuple


@dataclass(frozen=True)
class RankingConstants:
    trust: dict[str, float] = field(
        default_factory=lambda: {"confirmed": 1.0, "user-stated": 1.0, "imported": 0.9, "agent-inferred": 0.8}
    )
    state: dict[str, float] = field(default_factory=lambda: {"active": 1.0, "archived": 0.6, "deprecated": 0.25})
    # bm25 column weights: a hit in the title or entities says more than one in the body
    column_weights: tuple[float, float, float] = (3.0, 2.0, 1.0)
    # how the three text legs mix into `text` (each leg normalised to 0..1 within the query)
    word_weight: float = 0.5
    trigram_weight: float = 0.5
    like_weight: float = 0.3
    # coverage: share of query terms found in the memory; text is scaled by floor + (1-floor)·coverage
    coverage_floor: float = 0.4
    freshness_max: float = 0.2
    freshness_half_life_days: float = 90.0
    heat_max: float = 0.15
    heat_saturation_recalls: float = 10.0
    heat_half_life_days: float = 30.0
    # query planner: rows each indexed leg (word, trigram) returns, best bm25 first; measured on LoCoMo and
    # KorQuAD, 60 finds what 200 found (top-20 differ by <0.5 points) at a third of the ranking work
    candidates_per_leg: int = 60
    # words this long or longer (and not stopwords) also score by each of their trigrams (re-scoring only)
    gram_min_len: int = 4


DEFAULT = RankingConstants()


@lru_cache(maxsize=65536)
def _moment(iso: str) -> datetime | None:
    # every candidate of every recall parses its dates: the same few thousand strings, parsed once each
    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return then if then.tzinfo is not None else then.replace(tzinfo=UTC)


def age_days(iso: str, now: datetime) -> float:
    then = _moment(iso)
    if then is None:
        return 3650.0
    return max(0.0, (now - then).total_seconds() / 86400)


def freshness(updated: str, now: datetime, k: RankingConstants = DEFAULT) -> float:
    return k.freshness_max * 0.5 ** (age_days(updated, now) / k.freshness_half_life_days)


def heat(recalls: int, last_recalled: str | None, now: datetime, k: RankingConstants = DEFAULT) -> float:
    if recalls <= 0 or not last_recalled:
        return 0.0
    volume = min(1.0, math.log1p(recalls) / math.log1p(k.heat_saturation_recalls))
    return k.heat_max * volume * 0.5 ** (age_days(last_recalled, now) / k.heat_half_life_days)


def text_score(word: float, trigram: float, like: float, coverage: float, k: RankingConstants = DEFAULT) -> float:
    mix = (k.word_weight * word + k.trigram_weight * trigram + k.like_weight * like) / (
        k.word_weight + k.trigram_weight + (k.like_weight if like > 0 else 0.0)
    )
    return mix * (k.coverage_floor + (1 - k.coverage_floor) * coverage)


class Total(NamedTuple):
    """A candidate's score and the rounded components it is made of (enough to order candidates)."""

    total: float
    text: float
    freshness: float
    heat: float


def score_total(
    *,
    word: float,
    trigram: float,
    like: float,
    coverage: float,
    trust: str,
    state: str,
    updated: str,
    recalls: int,
    last_recalled: str | None,
    now: datetime,
    k: RankingConstants = DEFAULT,
) -> Total:
    text = round(text_score(word, trigram, like, coverage, k), 6)
    fresh = round(freshness(updated, now, k), 6)
    warm = round(heat(recalls, last_recalled, now, k), 6)
    total = text * k.trust.get(trust, 1.0) * k.state.get(state, 1.0) * (1 + fresh + warm)
    return Total(round(total, 6), text, fresh, warm)


class ScoreParts(NamedTuple):
    """A score's components as plain floats, one per candidate ranked; only returned results become models
    (`ScoreComponents`, whose fields models.py checks against these at import, so the two never disagree)."""

    text: float
    trust: float
    state: float
    freshness: float
    heat: float
    word: float
    trigram: float
    like: float
    coverage: float


def score_parts(
    t: Total, *, word: float, trigram: float, like: float, coverage: float, trust: str, state: str, k: RankingConstants
) -> ScoreParts:
    """The components of a `score_total`, for the few candidates that become results."""
    return ScoreParts(
        text=t.text,
        trust=k.trust.get(trust, 1.0),
        state=k.state.get(state, 1.0),
        freshness=t.freshness,
        heat=t.heat,
        word=round(word, 6),
        trigram=round(trigram, 6),
        like=round(like, 6),
        coverage=round(coverage, 6),
    )
