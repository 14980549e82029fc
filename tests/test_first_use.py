"""The small frictions a new user met (issue 45): a version flag, help texts that say each option once,
`merge-driver --help`, results scored 0 explained, a user-stated fact under "What the user stated", and a
file without frontmatter reported as such."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_mcp import __version__
from memory_mcp.edges import cli

from .helpers import REPO, Tools, run_cli


def test_version_flags(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--version", "-V"):
        code, out, err = run_cli(store, capsys, flag)
        assert (code, out, err) == (0, f"memory-mcp {__version__}\n", "")
    assert not store.exists()


@pytest.mark.parametrize("command", ["remember", "update", "recall", "serve", "context", "import", "sync"])
def test_help_says_each_option_once(store: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    """No `--valid-from YYYY-MM-DD   YYYY-MM-DD` (a placeholder repeated as the help) or `--follows TEXT` for an id."""
    code, out, _ = run_cli(store, capsys, command, "--help")
    assert code == 0
    for line in out.splitlines():
        found = re.match(r"\s+(--[a-z0-9-]+) ([A-Z][A-Z0-9_=-]+)\s+(\S.*)?$", line)
        if found and found.group(3):
            assert not found.group(3).startswith(found.group(2)), line
    if command in ("remember", "update"):
        assert re.search(r"--follows ID\s+(edit: )?the memory it continues", out), out
        assert re.search(r"--valid-from YYYY-MM-DD\n\s+(edit: )?the first day it holds", out), out


def test_merge_driver_help_exits_0(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["merge-driver", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: memory-mcp merge-driver BASE OURS THEIRS PATH")
    code, out, _ = run_cli(store, capsys, "merge-driver", "--help")  # after a global option: argparse's help
    assert code == 0 and "merge-driver" in out
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "merge-driver", "-h"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0 and "git-setup" in done.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "memory_mcp", "merge-driver", "a"], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert wrong.returncode == 2 and "usage:" in wrong.stderr


@pytest.mark.anyio
async def test_results_scored_zero_are_explained(tools: Tools, store: Path, capsys: pytest.CaptureFixture) -> None:
    """`recall "copia de seguridad produccion"` listed a Korean Redis memory at score 0.000 with no word of why."""
    await tools.remember("레디스 캐시 TTL은 기본 1시간", "Redis cache TTL is one hour by default.")
    await tools.remember(
        "Copias de seguridad de producción", "Las copias de seguridad de producción se hacen cada noche."
    )
    await tools.remember("Deploys go out on Fridays", "We deploy on Fridays.")
    raw = await tools.raw("memory_recall", query="copia de seguridad produccion")
    results = raw.structured_content["results"]
    weak = [n for n, r in enumerate(results, 1) if r["score"] < 0.0005]
    assert results[0]["title"] == "Copias de seguridad de producción" and weak, results
    listed = ", ".join(map(str, weak))
    assert f"{listed}: score 0, only a short or common word of the query matches" in raw.content[0].text
    code, out, _ = run_cli(store, capsys, "recall", "copia de seguridad produccion")
    assert code == 0 and f"-- result{'s' if len(weak) > 1 else ''} {listed}: score 0" in out, out
    fine = await tools.raw("memory_recall", query="seguridad")
    assert all(r["score"] > 0.0005 for r in fine.structured_content["results"])
    assert "score 0," not in fine.content[0].text


@pytest.mark.anyio
async def test_a_user_stated_fact_is_under_what_the_user_stated(tools: Tools, store: Path, capsys) -> None:
    await tools.remember("The user's name is Sam", "My name is Sam.", trust="user-stated")
    await tools.remember("Prefers short answers", "Keep replies short.", type="preference", trust="user-stated")
    await tools.remember("The build uses pnpm", "Inferred from the lock file.", trust="agent-inferred")
    code, out, _ = run_cli(store, capsys, "context")
    assert code == 0
    stated = out.split("## What the user stated", 1)[1].split("## Also worth knowing", 1)
    assert "The user's name is Sam" in stated[0] and "Prefers short answers" in stated[0], out
    assert stated[0].index("Prefers short answers") < stated[0].index("The user's name is Sam")  # preferences first
    assert "The build uses pnpm" in stated[1], out


@pytest.mark.anyio
async def test_a_file_without_frontmatter_is_said_to_have_none(tools: Tools, store: Path) -> None:
    await tools.remember("A real memory", "So the store exists.")
    (store / "memories" / "plain.md").write_text("# Just a note\n\nNo frontmatter here.\n")
    status = await tools.status()
    [bad] = status["unparseable"]
    assert bad["path"] == "memories/plain.md" and bad["reason"].startswith("no frontmatter"), bad
