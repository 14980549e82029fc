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
RUN_THE_TESTS = 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]" && .venv/bin/python -m pytest -q'


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
    assert ".venv/bin/python -m pytest -q\n" in (REPO / ".ci" / "run").read_text()


def test_the_first_screen_quotes_the_current_conflict_figures() -> None:
    """The gate's figures on its newest blind set, as docs/benchmarks.md reports them (design 10, keyword)."""
    bench = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    row = re.search(r"\| \*\*design 10, keyword\*\* \| [^|]+\| \*\*0\.(\d\d) / 0\.(\d\d)\*\* \|[^|]+\|[^|]+\| \*\*0\.(\d\d) / 0\.(\d\d)\*\* \|", bench)  # fmt: skip
    assert row, "docs/benchmarks.md: the design 10 held-out-6 row moved"
    written_p, written_r, returned_p, returned_r = row.groups()
    first = README.read_text(encoding="utf-8").split("## Quickstart", 1)[0]
    assert f"right {written_p}% of the time and cover {written_r}% of the true ones" in first
    assert f"{returned_p}% and {returned_r}%" in first
    assert "160 new cases written blind" in first
