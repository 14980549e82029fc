"""The built wheel has everything `memory-mcp` needs, and runs on its own (no clone on sys.path)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO, server_env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # from a copy of what the build reads: setuptools leaves build/ behind, and must not find an old one
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "memory_mcp", source / "memory_mcp", ignore=shutil.ignore_patterns("__pycache__"))
    # the dev extras bring setuptools, so no download and no isolated build environment is needed
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (found,) = out.glob("memory_mcp-*-py3-none-any.whl")
    return found


def _requirement_names(specs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def test_the_wheel_holds_every_module_the_script_and_the_dependencies(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for p in (REPO / "memory_mcp").rglob("*.py")}
    assert modules <= names, modules - names
    # package data (none today: the browser view renders its HTML and CSS inline) would be missed silently
    data = {p.relative_to(REPO).as_posix() for p in (REPO / "memory_mcp").rglob("*") if p.is_file()}
    data = {d for d in data if not d.endswith((".py", ".pyc"))}
    assert data <= names, data - names
    assert not {n for n in names if n.startswith(("tests/", "example_store/", "bench/", "docs/"))}
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    required = _requirement_names(
        [
            line.split(":", 1)[1].strip()
            for line in metadata.splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    )
    assert _requirement_names(project["dependencies"]) == required
    entry = zipfile.ZipFile(wheel).read(info.replace("METADATA", "entry_points.txt")).decode()
    assert re.search(r"^memory-mcp = memory_mcp\.edges\.cli:main$", entry, re.M), entry


def test_the_wheel_carries_the_mit_license_pyproject_promises(wheel: Path) -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 memory-mcp contributors" in text
    assert "Permission is hereby granted, free of charge" in text
    names = zipfile.ZipFile(wheel).namelist()
    (shipped,) = [n for n in names if re.search(r"\.dist-info/licenses/LICENSE$", n)]
    assert zipfile.ZipFile(wheel).read(shipped).decode() == text
    info = next(n for n in names if n.endswith(".dist-info/METADATA"))
    metadata = zipfile.ZipFile(wheel).read(info).decode()
    assert re.search(r"^License-Expression: MIT$", metadata, re.M), metadata[:400]


def test_the_wheel_runs_without_the_clone(wheel: Path, tmp_path: Path) -> None:
    """Import the package from the wheel itself (pure Python, so a zip on sys.path works)."""
    store = tmp_path / "store"
    env = {**server_env(store), "PYTHONPATH": str(wheel)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "memory_mcp", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )

    where = subprocess.run(
        [sys.executable, "-c", "import memory_mcp.edges.web, memory_mcp.edges.server; print(memory_mcp.__file__)"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert where.returncode == 0 and where.stdout.startswith(str(wheel)), where.stdout + where.stderr
    made = cli("remember", "Installed from the wheel", "The wheel alone can remember.", "--json")
    assert made.returncode == 0, made.stderr
    found = json.loads(cli("recall", "wheel alone", "--json").stdout)
    assert found["results"][0]["id"] == json.loads(made.stdout)["id"]
