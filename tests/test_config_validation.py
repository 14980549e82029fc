"""Settings validation by pydantic, in the module's own words: every refusal reads as a ConfigError naming the key
and the layer, never as pydantic's text; the typed views are built from the declarations.

Every test passes an explicit environment mapping and user-file path, so nothing on this machine leaks in.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from memory_mcp.config import SETTINGS, ConfigError, Settings, default_settings, load_settings

# what pydantic's own messages carry; none of it may reach a person
PYDANTIC_WORDS = ("Input should", "pydantic", "errors.pydantic.dev", "For further information", "validation error")


def load(tmp_path: Path, **kw: Any) -> Settings:
    kw.setdefault("env", {})
    return load_settings(user_config=tmp_path / "absent.toml", **kw)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


BAD_VALUES = ["true", "-1", "1e12", "2.5", "nan", "inf", '""', '"  "', '"bogus"', "[1]", '["a"]', "{x = 1}", '"/abs"']


@pytest.mark.parametrize("key", [s.key for s in SETTINGS])
def test_every_refusal_names_key_and_layer_without_pydantic_text(tmp_path: Path, key: str) -> None:
    refused = 0
    for raw in BAD_VALUES:
        user = write(tmp_path / "user.toml", f"{key} = {raw}\n")
        try:
            load_settings(env={}, user_config=user)
        except ConfigError as exc:
            refused += 1
            msg = str(exc)
            assert msg.startswith(f"{key}: ") and msg.endswith(f"(in user file {user})"), msg
            assert not any(word in msg for word in PYDANTIC_WORDS), msg
    assert refused >= 4, f"{key}: only {refused} of {len(BAD_VALUES)} bad values refused"


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        # an unknown key is reported before a missing label and before a wrong type
        ('zzz = 1\nmax_file_bytes = "big"\n', "documents.sources[0].zzz: unknown key"),
        ('max_file_bytes = "big"\n', "documents.sources[0]: label is required"),
        # types and ranges before the table's own rules (label shape, extension shape), in field order
        ('label = "a b"\nmax_file_bytes = 0\n', "documents.sources[0].max_file_bytes: 0 is outside 1..1073741824"),
        ('label = "a b"\nextensions = ["md"]\n', "documents.sources[0].label: 'a b' must be 1-64 letters"),
        ('label = "a"\nignore = [2]\n', "documents.sources[0].ignore: expected a list of strings, got [2]"),
        ('label = "a"\nmax_file_bytes = true\n', "documents.sources[0].max_file_bytes: expected an integer, got True"),
    ],
)
def test_source_table_reports_the_first_problem_in_a_fixed_order(tmp_path: Path, table: str, problem: str) -> None:
    user = write(tmp_path / "user.toml", f"[[documents.sources]]\n{table}")
    with pytest.raises(ConfigError) as exc:
        load_settings(env={}, user_config=user)
    msg = str(exc.value)
    assert msg.startswith(problem) and f"(in user file {user})" in msg, msg
    assert not any(word in msg for word in PYDANTIC_WORDS), msg


def test_a_duplicate_label_is_reported_before_a_bad_extension(tmp_path: Path) -> None:
    user = write(
        tmp_path / "user.toml",
        '[[documents.sources]]\nlabel = "a"\n[[documents.sources]]\nlabel = "a"\nextensions = ["md"]\n',
    )
    with pytest.raises(ConfigError, match=r"^documents\.sources\[1\]\.label: 'a' is already used by documents"):
        load_settings(env={}, user_config=user)


@pytest.mark.parametrize("key", [s.key for s in SETTINGS if s.key.startswith("ranking.")])
def test_every_ranking_setting_reaches_the_ranking_constants(tmp_path: Path, key: str) -> None:
    setting = next(s for s in SETTINGS if s.key == key)
    changed = (setting.default + setting.minimum) / 2 if setting.default > setting.minimum else setting.default + 1
    constants = load(tmp_path, overrides=[f"{key}={changed}"]).ranking()
    before, after = dataclasses.asdict(default_settings().ranking()), dataclasses.asdict(constants)
    moved = {name for name in before if before[name] != after[name]}
    assert len(moved) == 1, f"{key} moved {moved}"
    got = after[moved.pop()]
    parts = list(got.values()) if isinstance(got, dict) else list(got) if isinstance(got, tuple | list) else [got]
    assert changed in parts, f"{key}: {got}"


def test_values_keep_their_normalised_types(tmp_path: Path) -> None:
    s = load(tmp_path, overrides=["ranking.heat_max=0", "scopes.global_root=~/elsewhere", "limits.max_title=7"])
    assert s.get("ranking.heat_max") == 0.0 and isinstance(s.get("ranking.heat_max"), float)
    assert s.get("scopes.global_root") == Path("~/elsewhere").expanduser()
    assert s.get("limits.max_title") == 7 and type(s.get("limits.max_title")) is int
