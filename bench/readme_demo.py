"""The README's CLI transcripts, produced by the CLI itself: the 30-second demo (two memories that disagree, then
a question, in an empty store), the Quickstart's recall on the example store, and what a new user sees (Install:
no store yet, a first memory, a first recall).

    python bench/readme_demo.py            # print both transcripts as the README shows them
    python bench/readme_demo.py --write    # put them into README.md (between the `<!-- readme_demo: NAME -->` marks)
    python bench/readme_demo.py --check    # exit 1, with a diff, when README.md says something else

Each run uses a fresh temporary store and HOME (no user settings). What differs from run to run is masked when
comparing: ids (ULIDs and the file-name suffix made from them), conflict pair hashes, the temporary paths (shown
as /tmp/memory-demo and /home/me). The example store's scores move slowly with the calendar (freshness halves every 90
days), so the Quickstart's are compared to two decimals. Nothing else is masked: a changed line, score, reason or
citation in the CLI's output is drift (tests/test_readme.py runs --check).
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
SHOWN_ROOT = "/tmp/memory-demo"
SHOWN_HOME = "/home/me"

DEMO = [
    [
        "remember",
        "Deploys go out on Fridays",
        "We deploy atlas-web to production every Friday at 16:00 UTC.",
        "--entity",
        "atlas-web",
    ],  # fmt: skip
    [
        "remember",
        "Deploys now go out on Tuesdays",
        "We moved atlas-web production deploys to Tuesday mornings instead of Fridays.",
        "--entity",
        "atlas-web",
    ],  # fmt: skip
    ["recall", "when do we deploy"],
]
QUICKSTART_QUERY = "postgres backup"


def _quote(word: str) -> str:
    return f'"{word}"' if re.search(r"[\s?!*$]", word) else word


def _run(args: list[str], env: dict[str, str], code: int = 0) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "memory_mcp", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as a terminal shows them (stderr is unbuffered: its lines come first)
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    if done.returncode != code:
        raise SystemExit(f"readme_demo: memory-mcp {' '.join(args)} exited {done.returncode}:\n{done.stdout}")
    return done.stdout


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(REPO),
        "PYTHONDONTWRITEBYTECODE": "1",
        "XDG_CONFIG_HOME": str(home / ".config"),
        **extra,
    }


def demo() -> str:
    """The 30-second demo's transcript, as typed in a shell with MEMORY_MCP_ROOT set."""
    with tempfile.TemporaryDirectory(prefix="readme-demo-") as tmp:
        root = Path(tmp) / "memory-demo"
        env = _env(Path(tmp), MEMORY_MCP_ROOT=str(root))
        lines = [f"$ export MEMORY_MCP_ROOT={SHOWN_ROOT}"]
        for args in DEMO:
            lines.append("$ memory-mcp " + " ".join(map(_quote, args)))
            lines.append(_run(args, env).replace(str(root), SHOWN_ROOT).rstrip("\n"))
    return "\n".join(lines) + "\n"


def quickstart() -> str:
    """The Quickstart's first command's output on a fresh copy of the example store: the first result, then
    the closing lines (the README elides the four results between)."""
    with tempfile.TemporaryDirectory(prefix="readme-demo-") as tmp:
        store = Path(tmp) / "example_store"
        shutil.copytree(REPO / "example_store", store, ignore=shutil.ignore_patterns(".index"))
        out = _run(["--store", str(store), "recall", QUICKSTART_QUERY], _env(Path(tmp))).splitlines()
    first = out[:3]
    if len(first[2]) > 92:  # the excerpt, cut at a word as the README prints it
        first[2] = first[2][:90].rsplit(" ", 1)[0] + " ..."
    tail = [line for line in out if line.startswith("-- ") and not line.startswith("-- mode")]
    return "\n".join([*first, "...", *tail]) + "\n"


NEW_USER = [
    (["status"], 2),
    (["remember", "레디스 캐시 TTL은 기본 1시간", "Redis cache TTL is one hour by default."], 0),
    (["recall", "redis ttl"], 0),
]


def new_user() -> str:
    """A first session with no store: the default store under HOME (shown as /home/me)."""
    with tempfile.TemporaryDirectory(prefix="readme-demo-") as tmp:
        home = Path(tmp) / "me"
        home.mkdir()
        lines = []
        for args, code in NEW_USER:
            lines.append("$ memory-mcp " + " ".join(map(_quote, args)))
            lines.append(_run(args, _env(home), code).replace(str(home), SHOWN_HOME).rstrip("\n"))
    return "\n".join(lines) + "\n"


BLOCKS = {"demo": demo, "quickstart": quickstart, "new_user": new_user}


def _block(text: str, name: str) -> re.Match[str]:
    found = re.search(rf"<!-- readme_demo: {name} -->\n```\n(.*?)```\n", text, re.S)
    if found is None:
        raise SystemExit(f"readme_demo: README.md has no `<!-- readme_demo: {name} -->` block")
    return found


def mask(text: str, name: str) -> str:
    text = re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "<ULID>", text)
    text = re.sub(r"-[0-9a-z]{6}\.md", "-<id>.md", text)
    text = re.sub(r"\b[0-9a-f]{16}\b", "<pair>", text)
    if name == "quickstart":
        text = re.sub(r"score (\d\.\d\d)\d", r"score \1", text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="put the transcripts into README.md")
    action.add_argument("--check", action="store_true", help="exit 1 when README.md's transcripts drifted")
    args = parser.parse_args(argv)
    made = {name: make() for name, make in BLOCKS.items()}
    if not (args.write or args.check):
        for name, text in made.items():
            print(f"<!-- readme_demo: {name} -->\n{text}")
        return 0
    readme = README.read_text(encoding="utf-8")
    if args.write:
        for name, text in made.items():
            found = _block(readme, name)
            readme = readme[: found.start(1)] + text + readme[found.end(1) :]
        README.write_text(readme, encoding="utf-8")
        return 0
    drift = []
    for name, text in made.items():
        shown, real = mask(_block(readme, name).group(1), name), mask(text, name)
        if shown != real:
            diff = difflib.unified_diff(shown.splitlines(), real.splitlines(), "README.md", "memory-mcp", lineterm="")
            drift.append(f"{name}:\n" + "\n".join(diff))
    if drift:
        print("README.md's transcripts differ from what the CLI prints (python bench/readme_demo.py --write):")
        print("\n".join(drift))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
