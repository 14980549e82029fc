"""The browser view's routes, through starlette's TestClient against a copy of the example store.

Every expectation is computed from the files on disk or from the service the view is meant to mirror,
never typed in: the view must show what the canon says, write only through the service, and refuse
foreign Hosts, foreign Origins and POSTs without its per-process token.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memory_mcp.canon.files import read_frontmatter
from memory_mcp.domain.memory import OptionalValues
from memory_mcp.edges.web import DONE, TOKEN_FIELD, TOKEN_HEADER, WebView, make_server
from memory_mcp.tools.service import MemoryService

from .helpers import EXAMPLE_STORE, REPO, server_env

PORT = 5099  # the TestClient never binds it; it is the port the Host/Origin checks expect
ORIGIN = f"http://127.0.0.1:{PORT}"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    shutil.copytree(EXAMPLE_STORE, root, ignore=shutil.ignore_patterns(".index"))
    return root


@pytest.fixture
def service(example: Path) -> Iterator[MemoryService]:
    svc = MemoryService(example)
    yield svc
    svc.close()


@pytest.fixture
def view(service: MemoryService) -> WebView:
    return WebView(service, PORT)


@pytest.fixture
def client(view: WebView) -> Iterator[TestClient]:
    with TestClient(view.app, base_url=ORIGIN) as c:
        yield c


# ---------------------------------------------------------------- helpers


def files_by_id(root: Path) -> dict[str, tuple[Path, dict]]:
    out = {}
    for path in sorted((root / "memories").glob("*.md")):
        meta = read_frontmatter(path)
        out[str(meta["id"])] = (path, meta)
    return out


def items(page: str) -> list[dict[str, str]]:
    """The memory rows of a list page, with the attributes the view puts on each."""
    pattern = r'<li class="item [^"]*" data-id="([^"]+)" data-state="([^"]+)" data-type="([^"]+)" data-trust="([^"]+)">'
    return [dict(zip(("id", "state", "type", "trust"), m, strict=True)) for m in re.findall(pattern, page)]


def token_of(page: str) -> str:
    m = re.search(rf'name="{TOKEN_FIELD}" value="([^"]+)"', page)
    assert m, "the page carries no form token"
    return m.group(1)


def title_of(path: Path) -> str:
    return next(line[2:].strip() for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# "))


def post(client: TestClient, url: str, data: dict[str, str], token: str | None, **kw) -> object:
    body = dict(data)
    if token is not None:
        body[TOKEN_FIELD] = token
    return client.post(url, data=body, follow_redirects=False, **kw)


def pick(root: Path, state: str) -> tuple[str, Path]:
    for mem_id, (path, meta) in files_by_id(root).items():
        if meta.get("state", "active") == state and not meta.get("conflicts"):
            return mem_id, path
    raise AssertionError(f"the example store has no {state} memory")


# ---------------------------------------------------------------- listing, filters, search


def test_list_shows_every_memory_and_state_counts_from_the_files(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    page = client.get("/memories").text
    assert sorted(i["id"] for i in items(page)) == sorted(files)
    for state in ("active", "archived", "deprecated"):
        n = sum(1 for _, meta in files.values() if meta.get("state", "active") == state)
        assert re.search(rf'data-state="{state}" href="[^"]*">\w+ <span class=n>{n}</span>', page), state


@pytest.mark.parametrize(
    ("param", "value", "key"),
    [("state", "archived", "state"), ("state", "deprecated", "state"), ("type", "episode", "type"),
     ("trust", "agent-inferred", "trust")],
)  # fmt: skip
def test_filters_match_the_frontmatter(client: TestClient, example: Path, param: str, value: str, key: str) -> None:
    files = files_by_id(example)
    expected = sorted(i for i, (_, meta) in files.items() if meta.get(key) == value)
    assert expected, f"the example store has no {key}={value}"
    shown = items(client.get("/memories", params={param: value}).text)
    assert sorted(i["id"] for i in shown) == expected
    assert all(i[key] == value for i in shown)


def test_entity_filter_goes_through_the_dictionary(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    expected = sorted(i for i, (_, meta) in files.items() if "postgres" in (meta.get("entities") or []))
    assert expected
    assert sorted(i["id"] for i in items(client.get("/memories?entity=postgres").text)) == expected


def test_search_is_the_tools_recall_in_the_same_order(client: TestClient, service: MemoryService) -> None:
    for query, params in [("postgres backup", {}), ("배포 서버", {}), ("atlas", {"state": "archived"})]:
        page = client.get("/memories", params={"q": query, **params}).text
        state = params.get("state")
        want = service.recall(query, limit=20, state=state, include_deprecated=state is None, touch=False)
        assert want.results, query
        assert [i["id"] for i in items(page)] == [r.id for r in want.results]
        first = want.results[0]
        assert f"{first.path}:{first.line}" in page  # the citation, as the tools give it


def test_search_header_speaks_plainly_and_keeps_the_plan_behind_a_toggle(
    client: TestClient, service: MemoryService
) -> None:
    # a long query runs every keyword step; "!!!" has no words at all
    for query in ("postgres nightly backups pgbackrest s3 retention", "!!!"):
        page = client.get("/memories", params={"q": query}).text
        want = service.recall(query, limit=20, include_deprecated=True, touch=False)
        summary = re.search(r'<p class="summary">(.*?)</p>', page, re.S).group(1)
        assert f"result{'s' if len(want.results) != 1 else ''} for <b>{query}</b>, best match first" in summary
        assert "found by keywords" in summary
        details = re.search(
            r'<details class="plan"><summary>How this search worked</summary>(.*?)</details>', page, re.S
        )
        assert details, page
        steps = re.findall(r"<li>(.*?)</li>", details.group(1))
        legs = want.plan.split("+")
        assert len(steps) == len(legs) == len(set(steps)) and len(legs) in (1, 5), want.plan
        for leg, step in zip(legs, steps, strict=True):
            assert step != leg and "-" not in step.split(" ")[0], (leg, step)  # words, not the leg's name
        assert f"<code>{want.plan}</code>" in details.group(1)
        outside = page.replace(details.group(0), "")
        for jargon in ("recall plan", "all-terms", "trigram", "any-term"):
            assert jargon not in outside, jargon


def test_search_does_not_count_as_an_agent_recall(client: TestClient, service: MemoryService, example: Path) -> None:
    import sqlite3

    client.get("/memories?q=postgres")
    with sqlite3.connect(example / ".index" / "index.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM heat").fetchone()[0] == 0


def test_everything_the_store_says_is_escaped(client: TestClient, service: MemoryService) -> None:
    hostile = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'
    made = service.remember(hostile, f"body {hostile}", entities=["<b>bold</b>"])
    for url in ("/memories", f"/memory/{made.id}", f"/memory/{made.id}/edit", "/memories?q=alert"):
        page = client.get(url).text
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold</b>" not in page, url
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page, url


# ---------------------------------------------------------------- one memory


def test_memory_page_shows_file_frontmatter_chain_and_conflicts(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    # the middle of the supersede chain: it supersedes one memory and is superseded by another
    mid = next(i for i, (_, m) in files.items() if m.get("supersedes") and m.get("superseded_by"))
    path, meta = files[mid]
    page = client.get(f"/memory/{mid}").text
    assert hashlib.sha256(path.read_bytes()).hexdigest()[:12] in page
    for line in path.read_text(encoding="utf-8").splitlines():
        assert f'<td class="code">{line.replace("&", "&amp;").replace("<", "&lt;")}' in page or not line.strip()
    chain = page[page.index("Supersede chain") :]
    older, newer = meta["supersedes"][0], meta["superseded_by"][0]
    assert chain.index(title_of(files[older][0])) < chain.index(title_of(path)) < chain.index(title_of(files[newer][0]))

    holder = next(i for i, (_, m) in files.items() if m.get("conflicts"))
    other = str(files[holder][1]["conflicts"][0]["with"])
    page = client.get(f"/memory/{holder}").text
    assert "Resolve conflict" in page and f'value="win:{other}"' in page
    assert title_of(files[other][0]) in page
    page = client.get(f"/memory/{other}").text  # the other side shows the same open conflict
    assert "Resolve conflict" in page and f'value="win:{holder}"' in page


def test_unknown_memory_is_a_404_page(client: TestClient) -> None:
    r = client.get("/memory/NOPE")
    assert r.status_code == 404 and "no memory with id" in r.text


# ---------------------------------------------------------------- actions


def test_archive_moves_the_memory_to_archived(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "active")
    page = client.get(f"/memory/{mem_id}").text
    r = post(client, f"/memory/{mem_id}/archive", {}, token_of(page))
    assert r.status_code == 303 and r.headers["location"].startswith(f"/memory/{mem_id}")
    assert read_frontmatter(path)["state"] == "archived"
    assert "Archived." in client.get(r.headers["location"]).text
    assert mem_id in [i["id"] for i in items(client.get("/memories?state=archived").text)]
    assert mem_id not in [i["id"] for i in items(client.get("/memories?state=active").text)]


def test_restore_brings_an_archived_memory_back(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "archived")
    token = token_of(client.get(f"/memory/{mem_id}").text)
    assert post(client, f"/memory/{mem_id}/restore", {}, token).status_code == 303
    assert read_frontmatter(path)["state"] == "active"


@pytest.mark.parametrize(
    ("start", "action", "key", "after"),
    [
        ("active", "deprecate", "deprecated_reason", "deprecated"),
        ("deprecated", "reactivate", "reactivated_reason", "active"),
    ],
)
def test_deprecate_and_reactivate_need_a_reason(
    client: TestClient, example: Path, start: str, action: str, key: str, after: str
) -> None:
    mem_id, path = pick(example, start)
    token = token_of(client.get(f"/memory/{mem_id}").text)
    before = path.read_bytes()
    r = post(client, f"/memory/{mem_id}/{action}", {"reason": "   "}, token)
    assert r.status_code == 400 and "requires a reason" in r.text
    assert path.read_bytes() == before
    r = post(client, f"/memory/{mem_id}/{action}", {"reason": "checked with the team"}, token)
    assert r.status_code == 303
    meta = read_frontmatter(path)
    assert meta["state"] == after and meta[key] == "checked with the team"
    assert DONE[action] in client.get(r.headers["location"]).text
    page = client.get(f"/memory/{mem_id}").text
    if after == "deprecated":  # frozen: no edit, no archive; reactivation (with a reason) and purge are offered
        assert "/edit" not in page and "/archive" not in page and "/reactivate" in page and "Purge" in page
    else:  # active again: editable, and purge only after archiving or deprecating
        assert "/edit" in page and "/reactivate" not in page and "/purge" not in page


def test_purge_needs_the_id_or_title_typed(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "archived")
    token = token_of(client.get(f"/memory/{mem_id}").text)
    for typed in ("", "yes", title_of(path)[:-1]):
        r = post(client, f"/memory/{mem_id}/purge", {"confirm_text": typed}, token)
        assert r.status_code == 400 and "id or its exact title to purge" in r.text
        assert path.exists()
    r = post(client, f"/memory/{mem_id}/purge", {"confirm_text": title_of(path)}, token)
    assert r.status_code == 303 and not path.exists()
    assert mem_id not in [i["id"] for i in items(client.get("/memories").text)]
    # an active memory is not offered for purge, and a forged purge is refused: archive or deprecate first
    other_id, other = pick(example, "active")
    page = client.get(f"/memory/{other_id}").text
    assert "/purge" not in page and "archive or deprecate it first" in page
    r = post(client, f"/memory/{other_id}/purge", {"confirm_text": other_id}, token)
    assert r.status_code == 409 and "must be archived or deprecated first" in r.text
    assert other.exists()
    deprecated_id, deprecated = pick(example, "deprecated")
    assert post(client, f"/memory/{deprecated_id}/purge", {"confirm_text": deprecated_id}, token).status_code == 303
    assert not deprecated.exists()


def test_resolve_conflict_keep_both(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    holder = next(i for i, (_, m) in files.items() if m.get("conflicts"))
    path = files[holder][0]
    page = client.get(f"/memory/{holder}").text
    pair = re.search(r'name="pair_hash" value="([0-9a-f]+)"', page).group(1)
    r = post(
        client,
        f"/memory/{holder}/resolve",
        {"pair_hash": pair, "choice": "keep_both", "note": "both hold"},
        token_of(page),
    )
    assert r.status_code == 303
    entry = read_frontmatter(path)["conflicts"][0]
    assert (entry["status"], entry["resolution"], entry["note"]) == ("resolved", "keep_both", "both hold")
    assert "Resolve conflict" not in client.get(f"/memory/{holder}").text
    assert "No open conflicts." in client.get("/status").text


def test_resolve_conflict_with_a_winner_supersedes_the_loser(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    holder = next(i for i, (_, m) in files.items() if m.get("conflicts"))
    loser = str(files[holder][1]["conflicts"][0]["with"])
    page = client.get(f"/memory/{loser}").text
    pair = re.search(r'name="pair_hash" value="([0-9a-f]+)"', page).group(1)
    r = post(client, f"/memory/{loser}/resolve", {"pair_hash": pair, "choice": f"win:{holder}"}, token_of(page))
    assert r.status_code == 303
    meta = read_frontmatter(files[loser][0])
    assert meta["state"] == "archived" and meta["superseded_by"] == [holder]
    r = post(client, f"/memory/{loser}/resolve", {"pair_hash": pair, "choice": "keep_both"}, token_of(page))
    assert r.status_code == 400 and "already resolved" in r.text


# ---------------------------------------------------------------- edit with stale-write protection


def edit_form(client: TestClient, mem_id: str) -> tuple[str, dict[str, str]]:
    page = client.get(f"/memory/{mem_id}/edit").text
    fields = dict(re.findall(r'<input (?:type="\w+" )?name="(\w+)"(?: type="date")? value="([^"]*)"', page))
    fields["body"] = re.search(r'<textarea name="body"[^>]*>(.*?)</textarea>', page, re.S).group(1)
    fields["type"] = re.search(r'<select name="type">.*?<option value="([^"]+)" selected>', page, re.S).group(1)
    fields["trust"] = re.search(r'<select name="trust">.*?<option value="([^"]+)" selected>', page, re.S).group(1)
    import html

    return page, {k: html.unescape(v) for k, v in fields.items()}


def test_edit_saves_only_what_changed_and_keeps_the_rest_of_the_file(client: TestClient, example: Path) -> None:
    files = files_by_id(example)
    # the file with a hand-written comment and an unknown key: both must survive the edit
    mem_id, (path, _) = next((i, f) for i, f in files.items() if "# reviewed by hand" in f[0].read_text("utf-8"))
    _, form = edit_form(client, mem_id)
    assert form["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    form["body"] = form["body"].replace("\n", "\r\n") + "\r\n\r\nFlags are reviewed every quarter."
    r = post(client, f"/memory/{mem_id}/edit", form, None)
    assert r.status_code == 303 and "done=edit" in r.headers["location"]
    text = path.read_text(encoding="utf-8")
    assert "Flags are reviewed every quarter." in text and "\r" not in text
    assert "# reviewed by hand" in text and "project: atlas" in text


def test_edit_without_changes_writes_nothing(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "active")
    before = path.read_bytes()
    _, form = edit_form(client, mem_id)
    r = post(client, f"/memory/{mem_id}/edit", form, None)
    assert r.status_code == 303 and "done=unchanged" in r.headers["location"]
    assert path.read_bytes() == before


def test_stale_edit_is_refused_and_shows_the_new_version(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "active")
    _, form = edit_form(client, mem_id)
    # someone edits the file in their editor after the page was opened
    path.write_text(path.read_text(encoding="utf-8") + "\nAdded in an editor meanwhile.\n", encoding="utf-8")
    edited = path.read_bytes()
    form["body"] = "My browser edit."
    r = post(client, f"/memory/{mem_id}/edit", form, None)
    assert r.status_code == 409
    assert "changed since you opened it" in r.text and "nothing was saved" in r.text
    assert path.read_bytes() == edited  # no lost write
    assert "Added in an editor meanwhile." in r.text  # the new version is shown
    assert ">My browser edit.</textarea>" in r.text  # and what the person typed is kept
    new_sha = re.search(r'name="sha256" value="([0-9a-f]+)"', r.text).group(1)
    assert new_sha == hashlib.sha256(edited).hexdigest()
    form["sha256"] = new_sha  # saving again from the refreshed form goes through
    assert post(client, f"/memory/{mem_id}/edit", form, None).status_code == 303
    assert "My browser edit." in path.read_text(encoding="utf-8")


def test_edit_input_errors_keep_the_form(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "active")
    before = path.read_bytes()
    _, form = edit_form(client, mem_id)
    form["review_after"] = "next tuesday"
    form["body"] = "kept text"
    r = post(client, f"/memory/{mem_id}/edit", form, None)
    assert r.status_code == 400 and "review_after" in r.text and ">kept text</textarea>" in r.text
    assert path.read_bytes() == before


def test_edit_with_a_control_character_is_refused_and_writes_nothing(client: TestClient, example: Path) -> None:
    """The text rule (issue 24) holds for the browser view's form fields: they go through the same service."""
    mem_id, path = pick(example, "active")
    before = path.read_bytes()
    for field, value in (("title", "nul\x00title"), ("source", "esc\x1b"), ("entities", "a\x7fb"),
                         ("body", "bell\x07")):  # fmt: skip
        _, form = edit_form(client, mem_id)
        form[field] = value
        r = post(client, f"/memory/{mem_id}/edit", form, None)
        assert r.status_code == 400 and field in r.text and "U+" in r.text, (field, r.status_code)
        assert path.read_bytes() == before


# ---------------------------------------------------------------- status and stores


def test_status_page_lists_what_the_service_reports(client: TestClient, service: MemoryService, example: Path) -> None:
    (example / "memories" / "broken.md").write_text("---\nid: [unclosed\n---\n# Broken\n", encoding="utf-8")
    page = client.get("/status").text
    status = service.status()
    assert status.review_due and status.compaction_candidates and status.unparseable
    for r in status.review_due:
        assert r.title in page and r.review_after in page
    for c in status.compaction_candidates:
        assert f"<b>{c.entity}</b>" in page
    for u in status.unparseable:
        assert u.path in page
    assert status.index.path in page and "last reconcile" in page
    assert "1 unparseable file" in client.get("/memories").text


def test_stores_page_and_a_sibling_store(client: TestClient, example: Path, service: MemoryService) -> None:
    sibling = example.parent / "work"
    service.remember("Only in the work store", "A memory kept in the sibling store.", store="work")
    page = client.get("/stores").text
    assert str(example) in page and str(sibling) in page
    shown = items(client.get("/memories?store=work").text)
    assert len(shown) == 1 and "Only in the work store" in client.get("/memories?store=work").text
    page = client.get(f"/memory/{shown[0]['id']}?store=work").text
    assert 'name="store" value="work"' in page  # actions stay in that store


def test_a_url_never_creates_a_store(client: TestClient, example: Path) -> None:
    r = client.get("/memories?store=ghost")
    assert r.status_code == 404 and not (example.parent / "ghost").exists()
    r = client.get("/memories?store=../../etc")
    assert r.status_code == 404


def test_local_and_global_scopes_and_a_cited_document(tmp_path: Path, example: Path) -> None:
    from memory_mcp.config import DocumentSource

    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    lines = ["# Deploy notes", "", *[f"filler line {n}" for n in range(40)], "The zebracorn deploy gate runs at noon."]
    (project / "notes" / "deploy.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = DocumentSource("notes", project / "notes", (".md",), (), 1_000_000)
    svc = MemoryService(example, project, sources=[source])
    local = svc.remember("Zebracorn builds use the local cache", "Only this project.", scope="local")
    try:
        with TestClient(WebView(svc, PORT).app, base_url=ORIGIN) as c:
            page = c.get("/stores").text
            assert str(project / ".memory") in page and str(example) in page
            # home is the local scope: only its memory is listed; the global one is a click away
            assert [i["id"] for i in items(c.get("/memories").text)] == [local.id]
            assert sorted(i["id"] for i in items(c.get("/memories?scope=global").text)) == sorted(files_by_id(example))
            assert c.get(f"/memory/{local.id}?scope=global").status_code == 404  # no cross-scope leak
            # a global memory archived from the global view, through the scope carried by the form
            mem_id, path = pick(example, "active")
            page = c.get(f"/memory/{mem_id}?scope=global").text
            assert 'name="scope" value="global"' in page
            r = post(c, f"/memory/{mem_id}/archive", {"scope": "global"}, token_of(page))
            assert r.status_code == 303 and "scope=global" in r.headers["location"]
            assert read_frontmatter(path)["state"] == "archived"
            # a document chunk found by search opens at the cited line, which holds the query term
            page = c.get("/memories?q=zebracorn").text
            m = re.search(r'href="(/document\?[^"]+)"', page)
            assert m, "no document result"
            href = m.group(1).replace("&amp;", "&")
            line = int(href.rsplit("#L", 1)[1])
            doc = c.get(href.split("#")[0]).text
            cited = re.search(rf'<tr id="L{line}">.*?<td class="code">(.*?)</td>', doc).group(1)
            assert "zebracorn" in cited.lower() and lines[line - 1] == cited
    finally:
        svc.close()


# ---------------------------------------------------------------- the loopback guard and the token


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "127.0.0.1", f"0.0.0.0:{PORT}"]
)
def test_foreign_host_is_refused(client: TestClient, host: str) -> None:
    r = client.get("/memories", headers={"host": host})
    assert r.status_code == 403 and "Host" in r.text


def test_loopback_hosts_are_served_with_security_headers(client: TestClient) -> None:
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LOCALHOST:{PORT}"):
        r = client.get("/memories", headers={"host": host})
        assert r.status_code == 200, host
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize(
    "origin", ["http://evil.example", f"http://127.0.0.1:{PORT + 1}", "null", f"https://127.0.0.1:{PORT}"]
)
def test_foreign_origin_cannot_change_anything(client: TestClient, example: Path, origin: str) -> None:
    mem_id, path = pick(example, "active")
    token = token_of(client.get(f"/memory/{mem_id}").text)
    before = path.read_bytes()
    r = post(client, f"/memory/{mem_id}/archive", {}, token, headers={"origin": origin})
    assert r.status_code == 403 and "Origin" in r.text
    assert path.read_bytes() == before
    assert client.get("/memories", headers={"origin": origin}).status_code == 403
    r = post(client, f"/memory/{mem_id}/archive", {}, token, headers={"origin": ORIGIN})
    assert r.status_code == 303 and read_frontmatter(path)["state"] == "archived"


def test_post_needs_the_page_token(client: TestClient, example: Path, view: WebView, service: MemoryService) -> None:
    mem_id, path = pick(example, "active")
    before = path.read_bytes()
    for token in (None, "", "x" * 43, token_of(client.get(f"/memory/{mem_id}").text)[:-1]):
        r = post(client, f"/memory/{mem_id}/archive", {}, token)
        assert r.status_code == 403 and "token" in r.text
        _, form = edit_form(client, mem_id)
        form.pop(TOKEN_FIELD)
        form["body"] = "forged"
        assert post(client, f"/memory/{mem_id}/edit", form, token).status_code == 403
    assert path.read_bytes() == before
    # another process (another view) has another token: this page's token is worthless there
    other = WebView(service, PORT)
    assert other.token != view.token
    with TestClient(other.app, base_url=ORIGIN) as c2:
        assert post(c2, f"/memory/{mem_id}/archive", {}, view.token).status_code == 403
        assert (
            c2.post(
                f"/memory/{mem_id}/archive", headers={TOKEN_HEADER: other.token}, follow_redirects=False
            ).status_code
            == 303
        )
    assert read_frontmatter(path)["state"] == "archived"


def test_oversized_forms_and_silly_numbers_are_refused_cleanly(client: TestClient, example: Path) -> None:
    from memory_mcp.edges.web import MAX_FORM_BYTES

    mem_id, path = pick(example, "active")
    _, form = edit_form(client, mem_id)
    before = path.read_bytes()
    form["body"] = "x" * (MAX_FORM_BYTES + 1)
    assert post(client, f"/memory/{mem_id}/edit", form, None).status_code == 413
    form["body"] = "y" * 200_001  # under the form cap, over the service's body limit
    r = post(client, f"/memory/{mem_id}/edit", form, None)
    assert r.status_code == 400 and "body: 200001 characters" in r.text
    assert path.read_bytes() == before
    assert client.get("/memories?page=99999999999999999999999").status_code == 200
    assert client.get("/memories?page=two").status_code == 400
    assert client.get(f"/memory/{mem_id}?from=99999999999999999999").status_code == 200


def test_get_never_changes_anything(client: TestClient, example: Path) -> None:
    mem_id, path = pick(example, "active")
    before = path.read_bytes()
    for action in ("archive", "deprecate", "purge", "edit", "resolve"):
        assert client.get(f"/memory/{mem_id}/{action}").status_code in (404, 405, 200)
    assert path.read_bytes() == before


# ---------------------------------------------------------------- real sockets and the CLI


def test_server_binds_loopback_only(service: MemoryService) -> None:
    ui = make_server(service, 0).start()
    try:
        assert ui.sock.getsockname()[0] == "127.0.0.1"
        with urllib.request.urlopen(ui.url + "memories", timeout=10) as r:
            assert r.status == 200 and b"memory-mcp" in r.read()
    finally:
        ui.stop()


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_ui_refuses_a_port_that_is_not_one(example: Path, port: str) -> None:
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(example), "ui", "--port", port]
    r = subprocess.run(cmd, capture_output=True, env=server_env(example), cwd=REPO, timeout=60)
    assert r.returncode == 2 and b"ui port" in r.stderr and b"Traceback" not in r.stderr


def test_ui_port_in_use_is_a_clear_error(service: MemoryService) -> None:
    from memory_mcp.domain.errors import InputError

    ui = make_server(service, 0)
    try:
        with pytest.raises(InputError, match="cannot listen on 127.0.0.1"):
            make_server(service, ui.port)
    finally:
        ui.sock.close()


def _url_from(stderr) -> str:
    line = stderr.readline().decode()
    m = re.search(r"browser view at (http://127\.0\.0\.1:\d+/)", line)
    assert m, f"no URL on stderr: {line!r}"
    return m.group(1)


def test_ui_subcommand_prints_the_url_on_stderr(example: Path) -> None:
    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(example), "ui", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(example), cwd=REPO)
    try:
        url = _url_from(proc.stderr)
        with urllib.request.urlopen(url + "status", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    assert out == b""


def test_serve_with_ui_port_keeps_stdout_for_mcp(example: Path) -> None:
    import json

    cmd = [sys.executable, "-m", "memory_mcp", "--store", str(example), "serve", "--ui-port", "0"]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(example), cwd=REPO
    )
    try:
        url = _url_from(proc.stderr)
        with urllib.request.urlopen(url + "memories?q=postgres", timeout=10) as r:
            assert r.status == 200
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        proc.stdin.write((json.dumps(hello) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())  # the first stdout line is the MCP reply, nothing else
        assert reply["id"] == 1 and "result" in reply
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()


def test_search_results_carry_the_marks_the_tools_text_gives(client: TestClient, service: MemoryService) -> None:
    """A current version and a thread's continuation are marked on the page as in recall's text."""
    want = service.recall("atlas api heroku", limit=20, include_deprecated=True, touch=False)
    heads = [r for r in want.results if r.current_version_of]
    assert heads, "the example store's Atlas chain brings its current version in"
    page = client.get("/memories", params={"q": "atlas api heroku"}).text
    assert '<span class="chip mark">current version of' in page
    asks = service.remember("Zebracorn question", "Who feeds the zebracorn on Sundays?", type="episode")
    service.remember("Rota reply", "Priya, every other week.", type="episode", values=OptionalValues(follows=asks.id))
    page = client.get("/memories", params={"q": "who feeds the zebracorn"}).text
    assert '<span class="chip mark">follows #1' in page
