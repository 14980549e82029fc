"""The conflict gate's default limits, apart from the gate itself: the settings' defaults (tools/limits.py) read
them without loading the gate's rules, claims and model, which only a remember needs."""

from __future__ import annotations

NEAR_TEXT_SIMILARITY = 0.5  # kept as a setting: the stem Jaccard above which a same-attribute pair is near text
MAX_CONFLICTS = 5  # most pairs written for one new memory
MAX_LISTED = 5  # most memories listed for one new memory
MAX_RELATED = MAX_LISTED  # the setting keeps its name (conflicts.max_related): the most memories listed
