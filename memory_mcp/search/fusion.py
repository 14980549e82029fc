"""Fusion of the keyword and cosine rankings: a weighted sum of normalised scores, or Reciprocal Rank Fusion."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

RRF_K = 60  # Cormack et al. 2009: 1/(k + rank), k = 60 damps the head of each list
FUSIONS = ("score", "rrf")
KEYWORD_SHARE = 0.75  # chosen on the LoCoMo dev half (docs/benchmarks.md, "Hybrid search")


class FusionSettings(Protocol):
    """What fusion reads of the hybrid settings (`semantic.SemanticConfig` has these)."""

    @property
    def fusion(self) -> str: ...
    @property
    def keyword_share(self) -> float: ...
    @property
    def keyword_first(self) -> bool: ...
    @property
    def rrf_k(self) -> int: ...


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> dict[str, float]:
    """Reciprocal Rank Fusion: score(d) = Σ over rankings of 1 / (k + rank of d), ranks from 1."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def score_fusion(
    keyword: Sequence[tuple[str, float]], cosine: Sequence[tuple[str, float]], keyword_share: float
) -> dict[str, float]:
    """share × keyword score / best keyword score + (1 − share) × cosine scaled min-max over its ranking.

    Unlike RRF this keeps how far apart results are: a keyword result far ahead of the rest stays ahead
    unless the cosine leg strongly disagrees, and e5's cosines (crowded in 0.8-0.9) are spread over 0..1
    so their order, not their raw level, is what counts. A key missing from one ranking gets 0 from it.
    """
    fused: dict[str, float] = {}
    if keyword:
        top = keyword[0][1] or 1.0
        for key, s in keyword:
            fused[key] = keyword_share * s / top
    if cosine:
        hi, lo = cosine[0][1], cosine[-1][1]
        for key, c in cosine:
            scaled = (c - lo) / (hi - lo) if hi > lo else 1.0
            fused[key] = fused.get(key, 0.0) + (1.0 - keyword_share) * scaled
    return fused


def fuse(
    keyword: Sequence[tuple[str, float]], cosine: Sequence[tuple[str, float]], cfg: FusionSettings
) -> list[tuple[str, float]]:
    """Every key of either ranking (each best first, with its score) with its fused score, best first.

    `cfg.fusion` picks score fusion (the default, see docs/benchmarks.md) or plain RRF. Ties keep the
    keyword order, then the key (cosine-only keys after keyword ones). With `cfg.keyword_first` the keyword
    ranking's first result stays first whatever its fused score (the scores are not changed): the cosine leg
    reorders and adds to the rest, so hybrid's R@1 is keyword mode's and its R@k can only gain from it."""
    if cfg.fusion == "rrf":
        fused = rrf([[k for k, _ in keyword], [k for k, _ in cosine]], cfg.rrf_k)
    else:
        fused = score_fusion(keyword, cosine, cfg.keyword_share)
    kw_pos = {k: n for n, (k, _) in enumerate(keyword)}
    first = keyword[0][0] if cfg.keyword_first and keyword else None
    order = sorted(fused, key=lambda k: (k != first, -fused[k], kw_pos.get(k, len(kw_pos)), k))
    return [(k, fused[k]) for k in order]
