"""The Claude Code plugin (issue 45): its manifests, the command it runs for the MCP server and the hooks
(plugin/bin/run-memory-mcp), the SessionStart hook failing open (plugin/bin/memory-hook), the commands its skill
names, and the real Claude Code CLI from npm validating, installing and connecting it (skipped without npm).

The scripts run as Claude Code runs them: as processes, with the environment it gives (CLAUDE_PROJECT_DIR, a
JSON object on stdin). `MEMORY_PLUGIN_COMMAND` points them at this checkout's memory-mcp."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .helpers import REPO, TOOL_NAMES, Tools
from .npm_tools import CLAUDE_CODE, npm_package

PLUGIN = REPO / ".claude-plugin" / "plugin.json"
MARKETPLACE = REPO / ".claude-plugin" / "marketplace.json"
MCP_JSON = REPO / "plugin" / ".mcp.json"
LAUNCHER = REPO / "plugin" / "bin" / "run-memory-mcp"
HOOK = REPO / "plugin" / "bin" / "memory-hook"
SKILL = REPO / "plugin" / "skills" / "memory" / "SKILL.md"
HANDOFF = REPO / "plugin" / "commands" / "handoff.md"
SERVER_COMMAND = "${CLAUDE_PLUGIN_ROOT}/plugin/bin/run-memory-mcp"


@pytest.fixture
def memory_mcp(tmp_path: Path) -> Path:
    """An executable that runs this checkout's memory-mcp (what `MEMORY_PLUGIN_COMMAND` names)."""
    script = tmp_path / "bin" / "memory-mcp"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m memory_mcp "$@"\n')
    script.chmod(0o755)
    return script


def plugin_env(home: Path, command: Path | str, **extra: str) -> dict[str, str]:
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", ""),
        "MEMORY_MCP_ROOT": str(home / "account"),
        "MEMORY_PLUGIN_COMMAND": str(command),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    return env | extra


def run_hook(env: dict[str, str], stdin: str = "{}", timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([str(HOOK)], input=stdin, capture_output=True, text=True, env=env, timeout=timeout)
    return done, time.monotonic() - started


# ---------------------------------------------------------------- one source of truth for the server command


def test_the_plugin_the_mcp_json_and_the_readme_name_one_server_command() -> None:
    plugin = json.loads(PLUGIN.read_text())
    marketplace = json.loads(MARKETPLACE.read_text())
    servers = json.loads(MCP_JSON.read_text())["mcpServers"]
    assert plugin["mcpServers"] == "./plugin/.mcp.json"
    assert not (REPO / ".mcp.json").exists()  # a project .mcp.json here would name a variable only plugins get
    assert servers == {"memory": {"command": SERVER_COMMAND, "args": ["serve"]}}
    [entry] = marketplace["plugins"]
    assert entry["name"] == plugin["name"] and entry["source"] == "./" and entry["version"] == plugin["version"]
    for key in ("hooks", "skills", "commands"):
        assert (REPO / plugin[key]).exists(), key
    hooks = json.loads((REPO / plugin["hooks"]).read_text())["hooks"]
    [start] = hooks["SessionStart"]
    [hook] = start["hooks"]
    assert hook["command"] == '"${CLAUDE_PLUGIN_ROOT}/plugin/bin/memory-hook"' and hook["timeout"] == 10
    assert set(start["matcher"].split("|")) == {"startup", "resume", "clear", "compact"}
    assert os.access(LAUNCHER, os.X_OK) and os.access(HOOK, os.X_OK)
    # the hook runs the server's launcher, so both see the same stores
    assert 'with_name("run-memory-mcp")' in HOOK.read_text()
    readme = README.read_text()
    # the README quotes .mcp.json as it is, and its manual recipes run the same launcher and hook
    assert MCP_JSON.read_text().strip() in readme
    assert "plugin/bin/run-memory-mcp serve" in readme and "plugin/bin/memory-hook" in readme
    from memory_mcp import __version__

    assert plugin["version"] == __version__


README = REPO / "README.md"


# ---------------------------------------------------------------- the launcher: which stores


def test_the_launcher_uses_the_project_store_only_when_the_project_has_one(tmp_path: Path, memory_mcp: Path) -> None:
    home, bare, kept = tmp_path / "home", tmp_path / "bare", tmp_path / "kept"
    for folder in (home, bare, kept / ".memory"):
        folder.mkdir(parents=True)

    def remember(project: Path, title: str) -> dict:
        env = plugin_env(home, memory_mcp, CLAUDE_PROJECT_DIR=str(project))
        done = subprocess.run(
            [str(LAUNCHER), "remember", title, "A body.", "--json"], capture_output=True, text=True, env=env, cwd=home
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert remember(bare, "Said in a bare project")["scope"] == "global"
    assert not (bare / ".memory").exists()  # a project without a store is never given one
    assert list((home / "account" / "memories").glob("*.md"))
    made = remember(kept, "Said in a project with a store")
    assert made["scope"] == "local" and (kept / ".memory" / made["path"]).is_file()
    # no CLAUDE_PROJECT_DIR: the working directory is the project
    env = plugin_env(home, memory_mcp)
    done = subprocess.run([str(LAUNCHER), "status", "--json"], capture_output=True, text=True, env=env, cwd=kept)
    assert done.returncode == 0 and json.loads(done.stdout)["scope"] == "local", done.stderr


def test_the_launcher_says_what_to_install_when_memory_mcp_is_missing(tmp_path: Path) -> None:
    copy = tmp_path / "plugin" / "bin" / "run-memory-mcp"  # a plugin folder with no .venv beside it
    copy.parent.mkdir(parents=True)
    copy.write_bytes(LAUNCHER.read_bytes())
    copy.chmod(0o755)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}  # no memory-mcp, no uvx, no command given
    if any(Path(folder, name).exists() for folder in ("/usr/bin", "/bin") for name in ("memory-mcp", "uvx")):
        pytest.skip("memory-mcp or uvx is installed system-wide")
    done = subprocess.run([str(copy), "serve"], capture_output=True, text=True, env=env, timeout=30)
    assert done.returncode == 127 and "pipx install" in done.stderr, done.stderr


# ---------------------------------------------------------------- the SessionStart hook fails open


def test_the_hook_prints_the_context_of_both_stores(tmp_path: Path, memory_mcp: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "atlas"
    (project / ".memory").mkdir(parents=True)
    home.mkdir()
    env = plugin_env(home, memory_mcp, CLAUDE_PROJECT_DIR=str(project))
    for args in (
        ["remember", "Sam prefers short answers", "Keep replies short.", "--type", "preference", "--scope", "global"],
        ["remember", "Left off at the parser", "Next: the tokenizer tests.", "--type", "handoff"],
    ):
        done = subprocess.run([str(LAUNCHER), *args], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
    done, _ = run_hook(env, stdin=json.dumps({"session_id": "s1", "source": "startup", "cwd": str(project)}))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("# Memory context"), done.stdout
    assert "Left off at the parser" in done.stdout and "Sam prefers short answers" in done.stdout
    # Claude Code's stdin names the project when CLAUDE_PROJECT_DIR is not set
    env.pop("CLAUDE_PROJECT_DIR")
    again, _ = run_hook(env, stdin=json.dumps({"cwd": str(project)}))
    assert "Left off at the parser" in again.stdout


def test_the_hook_with_no_store_says_so_and_creates_nothing(tmp_path: Path, memory_mcp: Path) -> None:
    done, _ = run_hook(plugin_env(tmp_path, memory_mcp), stdin="not json at all")
    assert done.returncode == 0 and "No memories yet" in done.stdout
    assert not (tmp_path / "account").exists()


@pytest.mark.parametrize("case", ["missing", "error", "crash"])
def test_the_hook_fails_open(tmp_path: Path, memory_mcp: Path, case: str) -> None:
    """memory-mcp missing, refusing its settings, or failing mid-way: nothing printed, exit 0."""
    if case == "missing":
        env = plugin_env(tmp_path, tmp_path / "no-such-memory-mcp")
    elif case == "error":  # a real error of memory-mcp: a setting out of range (exit 2, a message on stderr)
        env = plugin_env(tmp_path, memory_mcp, MEMORY_MCP_RANKING__FRESHNESS_MAX="banana")
    else:
        broken = tmp_path / "broken"
        broken.write_text("#!/bin/sh\necho '# Memory context'\necho 'half an answer'\nexit 1\n")
        broken.chmod(0o755)
        env = plugin_env(tmp_path, broken)
    done, _ = run_hook(env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_hook_does_not_wait_on_a_stdin_left_open(tmp_path: Path, memory_mcp: Path) -> None:
    hook = subprocess.Popen(
        [str(HOOK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=plugin_env(tmp_path, memory_mcp), text=True
    )
    try:
        code = hook.wait(timeout=30)  # stdin is never written to nor closed
        out = hook.stdout.read()
    finally:
        hook.stdin.close()
        hook.stdout.close()
        if hook.poll() is None:
            hook.kill()
    assert code == 0 and "No memories yet" in out


def test_the_hook_gives_up_at_its_deadline_and_stops_what_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "still-running"
    slow = tmp_path / "slow"
    slow.write_text(f"#!/bin/sh\necho '# Memory context'\nsleep 30\ntouch '{marker}'\n")
    slow.chmod(0o755)
    done, took = run_hook(plugin_env(tmp_path, slow, MEMORY_PLUGIN_HOOK_DEADLINE="1"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert took < 10, took  # well inside the 10 s Claude Code gives the hook
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(slow) not in ps and not marker.exists()


# ---------------------------------------------------------------- what the skill and the command tell the agent


@pytest.mark.anyio
async def test_the_skill_names_only_tools_ops_and_arguments_that_exist(tools: Tools) -> None:
    text = SKILL.read_text() + HANDOFF.read_text()
    front = re.match(r"---\n(.*?)\n---\n", SKILL.read_text(), re.S)
    assert front and "name: memory" in front.group(1) and "description:" in front.group(1)
    listed = {tool.name: tool.input_schema for tool in (await tools.client.list_tools()).tools}
    named = set(re.findall(r"\bmemory_[a-z_]+\b", text))
    assert named and named <= TOOL_NAMES, named - TOOL_NAMES
    arguments = set().union(*(schema["properties"] for schema in listed.values()))
    for name, value in re.findall(r"\b([a-z_]+)=([a-z_\-<]+)", text):
        assert name in arguments, name
        enum = next((s["properties"][name].get("enum") for s in listed.values() if name in s["properties"]), None)
        if enum and not value.startswith("<"):
            assert value in enum, (name, value)
    # the conflict recipe the skill gives works as written
    tabs = await tools.remember("Alice wants tabs in atlas-web", "Alice Kim wants tabs in the atlas-web code.")
    spaces = await tools.remember(
        "Alice wants 2-space indentation in atlas-web",
        "Alice Kim now wants 2-space indentation in the atlas-web code, not tabs.",
    )
    # issue 42: the remember lists it (a lone pair is not written); the call shown settles it
    [listed] = spaces["listed"]
    resolved = await tools.ok(
        "memory_update",
        op="resolve_conflict",
        id=spaces["id"],
        other_id=listed["id"],
        resolution="supersede",
        note="Alice said so",
    )
    assert resolved and (await tools.ok("memory_read", id=tabs["id"]))["frontmatter"]["state"] == "archived"
    handoff = await tools.remember("Left off at the parser", "Next: the tokenizer tests.", type="handoff")
    assert handoff["created"]


def test_the_skills_claude_code_commands_run_as_written(tmp_path: Path, memory_mcp: Path) -> None:
    """`memory-mcp import claude-code <auto-memory folder>` (with --dry-run first) and `memory-mcp export --to`."""
    auto = tmp_path / "home" / ".claude" / "projects" / "-src-atlas" / "memory"
    auto.mkdir(parents=True)
    (auto / "MEMORY.md").write_text("- [Deploys](deploys.md) - when we deploy\n")
    (auto / "deploys.md").write_text(
        "---\nname: Deploys go out on Tuesdays\ndescription: deploy day\ntype: project\n---\n\n"
        "We deploy atlas-web on Tuesday mornings.\n"
    )
    env = plugin_env(tmp_path / "home", memory_mcp)
    skill = SKILL.read_text()
    assert "memory-mcp import claude-code <that folder>" in skill and "--dry-run" in skill
    assert "memory-mcp export --to DIR" in skill
    dry = subprocess.run([str(LAUNCHER), "import", "claude-code", str(auto), "--dry-run"], capture_output=True, text=True, env=env)  # fmt: skip
    assert dry.returncode == 0 and not (tmp_path / "home" / "account").exists(), dry.stderr
    done = subprocess.run([str(LAUNCHER), "import", "claude-code", str(auto)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "export"
    out.mkdir()
    exported = subprocess.run([str(LAUNCHER), "export", "--to", str(out)], capture_output=True, text=True, env=env)
    assert exported.returncode == 0, exported.stderr
    assert "Deploys go out on Tuesdays" in (out / "MEMORY.md").read_text()


# ---------------------------------------------------------------- the real Claude Code CLI (npm)


class ClaudeCode:
    """The Claude Code CLI from npm, run with a scratch HOME in a scratch project folder."""

    def __init__(self, tmp_path: Path, memory_mcp: Path) -> None:
        self.binary = npm_package(CLAUDE_CODE, "claude")
        self.home, self.project = tmp_path / "home", tmp_path / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.env = plugin_env(self.home, memory_mcp) | {"PATH": f"{self.binary.parent}:{os.environ.get('PATH', '')}"}

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.binary), *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.project,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    def install_and_connect(self, source: str) -> str:
        """`plugin marketplace add source`, `plugin install`, `plugin list`, then `mcp list` (the project folder
        marked trusted first, as `claude` does when asked): the plugin's server line."""
        added = self.run("plugin", "marketplace", "add", source)
        assert added.returncode == 0 and "Successfully added marketplace" in added.stdout, added.stdout + added.stderr
        installed = self.run("plugin", "install", "memory-mcp@memory-mcp")
        assert installed.returncode == 0 and "Successfully installed" in installed.stdout, installed.stdout
        listed = self.run("plugin", "list")
        assert "memory-mcp@memory-mcp" in listed.stdout and "enabled" in listed.stdout, listed.stdout
        state = self.home / ".claude.json"
        config = json.loads(state.read_text()) if state.exists() else {}
        config.setdefault("projects", {})[str(self.project)] = {"hasTrustDialogAccepted": True}
        state.write_text(json.dumps(config))
        servers = self.run("mcp", "list")
        line = next((x for x in servers.stdout.splitlines() if x.startswith("plugin:memory-mcp:memory:")), "")
        assert "plugin/bin/run-memory-mcp serve" in line and "Connected" in line, servers.stdout + servers.stderr
        return line


@pytest.mark.npm
def test_claude_code_validates_installs_and_connects_the_plugin(tmp_path: Path, memory_mcp: Path) -> None:
    """Claude Code from npm, with a scratch HOME: `plugin validate --strict` on the clone's folder, the plugin's
    manifest and the marketplace file, then this checkout added as a marketplace, the plugin installed, and its
    server connected."""
    claude = ClaudeCode(tmp_path, memory_mcp)
    version = claude.run("--version")
    assert version.returncode == 0 and CLAUDE_CODE[1] in version.stdout, version.stderr
    # the clone's folder (Claude Code reads its marketplace file), the plugin's manifest, the marketplace file
    for target, kind in ((REPO, "marketplace"), (PLUGIN, "plugin"), (MARKETPLACE, "marketplace")):
        checked = claude.run("plugin", "validate", "--strict", str(target))
        assert checked.returncode == 0 and "Validation passed" in checked.stdout, checked.stdout + checked.stderr
        assert f"Validating {kind} manifest: " in checked.stdout, checked.stdout
    claude.install_and_connect(str(REPO))


class GitOverHttp(http.server.BaseHTTPRequestHandler):
    """git's smart HTTP protocol for the repositories in `root` (`git http-backend` as a CGI program)."""

    root = ""

    def do_GET(self) -> None:
        self.serve()

    def do_POST(self) -> None:
        self.serve()

    def serve(self) -> None:
        path, _, query = self.path.partition("?")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        env = {
            "PATH": os.environ.get("PATH", ""),
            "GIT_PROJECT_ROOT": self.root,
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_ADDR": "127.0.0.1",
        }
        done = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env, timeout=60)
        head, _, payload = done.stdout.partition(b"\r\n\r\n")  # its CGI headers end with CRLF
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.npm
@pytest.mark.long
def test_claude_code_installs_the_plugin_from_a_git_url(tmp_path: Path, memory_mcp: Path) -> None:
    """`claude plugin marketplace add <git URL>`: Claude Code clones the repository (`git clone --depth 1`, so
    over git's smart HTTP, served here from a bare clone of this repository's HEAD), installs the plugin from its
    copy, and the server connects (memory-mcp from MEMORY_PLUGIN_COMMAND: the copy has no .venv)."""
    claude = ClaudeCode(tmp_path, memory_mcp)
    served = tmp_path / "served"
    served.mkdir()
    cloned = subprocess.run(["git", "clone", "-q", "--bare", str(REPO), str(served / "memory-mcp.git")], capture_output=True, text=True)  # fmt: skip
    assert cloned.returncode == 0, cloned.stderr
    handler = type("Handler", (GitOverHttp,), {"root": str(served)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        line = claude.install_and_connect(f"http://127.0.0.1:{server.server_address[1]}/memory-mcp.git")
    finally:
        server.shutdown()
        server.server_close()
    assert f"{claude.home}/.claude/plugins/cache/memory-mcp/memory-mcp/" in line, line


CLAUDE_TEST = f"{Path(__file__).relative_to(REPO)}::test_claude_code_validates_installs_and_connects_the_plugin"


def run_claude_test(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """The test above in a pytest of its own, with an empty npm cache (nothing installed yet) and `env`."""
    given = dict(os.environ) | {"MEMORY_MCP_NPM_CACHE": str(tmp_path / "npm-cache")} | env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-m", "npm", CLAUDE_TEST],
        capture_output=True,
        text=True,
        env=given,
        cwd=REPO,
        timeout=200,
    )


def test_without_npm_the_claude_code_test_is_skipped_saying_why(tmp_path: Path) -> None:
    """CI has Python and pip only: the test is skipped at once, with its reason (not failed, not hung)."""
    empty = tmp_path / "no-npm-here"
    empty.mkdir()
    done = run_claude_test(tmp_path, PATH=str(empty))
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "npm and node are not installed" in done.stdout, done.stdout
    assert not (tmp_path / "npm-cache").exists()


@pytest.mark.long
def test_a_registry_that_never_answers_skips_the_claude_code_test(tmp_path: Path) -> None:
    """npm present, its registry accepting connections and never answering: `npm install` alone waited over
    10 minutes (past the test's own 300 s); the test is skipped, saying why, well within its time."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm and node are not installed")
    sink = socket.socket()
    sink.bind(("127.0.0.1", 0))
    sink.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(sink.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        done = run_claude_test(tmp_path, npm_config_registry=f"http://127.0.0.1:{sink.getsockname()[1]}/")
    finally:
        sink.close()
        for conn in held:
            conn.close()
    assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "the npm registry" in done.stdout, done.stdout
    assert not (tmp_path / "npm-cache").exists()
