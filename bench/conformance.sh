#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, npm) against `memory-mcp serve --http`.
#
#   bash bench/conformance.sh            # every server scenario; exit 1 on a failure not in the baseline
#
# Needs Node >= 22: a `node` of that version on PATH, else the npm package `node@22` installed (with the
# suite) into $CONFORMANCE_DIR (default ~/.cache/memory-mcp/conformance). Without npm, or when the
# install fails (no network), it says so and exits 0: skipped, not passed.
# The suite sends no Authorization header, so the server runs with --no-auth on loopback; the bearer check
# is covered by tests/test_http_security.py. Not-applicable scenarios, with why: bench/conformance-baseline.yml.
set -euo pipefail
cd "$(dirname "$0")/.."
SUITE_VERSION=0.1.16
PY=${PYTHON:-.venv/bin/python}
DIR=${CONFORMANCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/memory-mcp/conformance}

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ ! -x "$DIR/node_modules/.bin/conformance" ] || { [ "$(node_major node)" -lt 22 ] && [ ! -x "$DIR/node_modules/.bin/node" ]; }; then
    if ! command -v npm >/dev/null; then
        echo "conformance: SKIPPED: npm is not installed (Node >= 22 and npm are needed)"; exit 0
    fi
    packages=("@modelcontextprotocol/conformance@$SUITE_VERSION")
    [ "$(node_major node)" -ge 22 ] || packages+=("node@22")
    echo "conformance: installing ${packages[*]} into $DIR"
    mkdir -p "$DIR"
    if ! npm install --prefix "$DIR" --silent --no-audit --no-fund "${packages[@]}" >"$DIR/install.log" 2>&1; then
        echo "conformance: SKIPPED: npm install failed (see $DIR/install.log)"; exit 0
    fi
fi
export PATH="$DIR/node_modules/.bin:$PATH"  # the npm package's node 22 first, when it was installed
echo "conformance: node $(node --version), suite $SUITE_VERSION"

WORK=$(mktemp -d -t memory-mcp-conformance.XXXXXX)  # a name no sweep of /tmp/tmp* takes
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT
HOME="$WORK" "$PY" -m memory_mcp --store "$WORK/store" serve --http --port 0 --no-auth 2>"$WORK/server.log" &
SERVER=$!
for _ in $(seq 600); do
    URL=$(sed -n 's/.*MCP over Streamable HTTP at \([^ ]*\).*/\1/p' "$WORK/server.log")
    [ -n "$URL" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/server.log"; exit 1; }
    sleep 0.1
done
[ -n "$URL" ] || { echo "conformance: the server did not start"; cat "$WORK/server.log"; exit 1; }
URL=${URL/127.0.0.1/localhost}

status=0
conformance server --url "$URL" --suite all --expected-failures bench/conformance-baseline.yml \
    -o "$WORK/results" >"$WORK/suite.log" 2>&1 || status=$?
"$PY" - "$WORK/results" bench/conformance-baseline.yml <<'PY'
import json, re, sys
from pathlib import Path

results, baseline = Path(sys.argv[1]), Path(sys.argv[2])
why = dict(re.findall(r"^\s*-\s*(\S+)\s*#\s*(.+)$", baseline.read_text(), re.M))
rows = []
for d in sorted(results.iterdir()):
    name = re.sub(r"^server-|-\d{4}-\d\d-\d\dT.*$", "", d.name)
    checks = json.loads((d / "checks.json").read_text())
    failed = [c for c in checks if c["status"] == "FAILURE"]
    ok = sum(c["status"] == "SUCCESS" for c in checks)
    verdict = "pass" if not failed else ("n/a" if name in why else "FAIL")
    note = why.get(name, "") if failed else f"{ok} check(s) passed"
    if failed and name not in why:
        note = "; ".join((c.get("errorMessage") or c["description"])[:120] for c in failed)
    rows.append((name, verdict, note))
width = max(len(r[0]) for r in rows)
for name, verdict, note in rows:
    print(f"{name:<{width}}  {verdict:<4}  {note}")
print(f"-- {sum(r[1] == 'pass' for r in rows)} pass, {sum(r[1] == 'n/a' for r in rows)} not applicable, "
      f"{sum(r[1] == 'FAIL' for r in rows)} unexpected failures, of {len(rows)} scenarios")
PY
[ "$status" -eq 0 ] || { echo "conformance: the suite exited $status"; tail -30 "$WORK/suite.log"; }
exit "$status"
