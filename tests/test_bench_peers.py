"""The peer drivers' own logic that runs without any peer installed (bench/peer_common.py, the memsearch
canon writer, eval_retrieval's sample option). The stdio MCP client the mempalace driver uses to
cross-check its answers is tested against our own real server process."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, server_env

sys.path.insert(0, str(REPO / "bench"))
import eval_retrieval  # noqa: E402
import peer_common  # noqa: E402
import peer_memsearch  # noqa: E402


def test_spread_sample_is_even_ordered_and_complete_when_not_smaller() -> None:
    rows = list(range(5774))
    sample = peer_common.spread_sample(rows, 1000)
    assert len(sample) == len(set(sample)) == 1000
    assert sample == sorted(sample) and sample[0] == 0
    gaps = {b - a for a, b in zip(sample, sample[1:], strict=False)}
    assert gaps <= {5, 6}  # 5774 / 1000: every gap is the floor or the ceiling
    assert peer_common.spread_sample(rows[:10], 10) == rows[:10]
    assert peer_common.spread_sample(rows[:10], None) == rows[:10]


def test_run_queries_maps_keys_to_corpus_ids_once_each_in_order() -> None:
    queries = [{"qid": "q1", "store": "a", "query": "x"}, {"qid": "q2", "store": "b", "query": "y"}]
    answers = {"q1": ["k2", "k1", "k2", "gone"], "q2": []}
    ids = {("a", "k1"): ["c1"], ("a", "k2"): ["c2", "c3"]}
    run = peer_common.run_queries(queries, lambda q: answers[q["qid"]], lambda s, k: ids.get((s, k), []))
    assert run.rows == [{"qid": "q1", "ranked": ["c2", "c3", "c1"]}, {"qid": "q2", "ranked": []}]
    assert run.unmapped == 1
    figures = run.figures()
    assert figures["queries"] == 2 and figures["with_results"] == 1 and figures["unmapped_results"] == 1


def test_memsearch_canon_is_one_markdown_file_per_memory_per_store(tmp_path: Path) -> None:
    corpus = [
        {"id": "conv-1:D1:1", "store": "conv-1", "title": "Ann, session 1", "text": "Ann: hello\n"},
        {"id": "conv-2:D1:1", "store": "conv-2", "title": "", "text": "Bob: 안녕"},
        {"id": "conv-1:D1:2", "store": "conv-1", "title": "Ann, session 1", "text": "Ann: bye"},
    ]
    folders, ids = peer_memsearch.write_canon(corpus, tmp_path)
    assert set(folders) == {"conv-1", "conv-2"} and folders["conv-1"] != folders["conv-2"]
    assert sorted(p.name for p in folders["conv-1"].iterdir()) == ["m000000.md", "m000002.md"]
    assert (folders["conv-1"] / "m000000.md").read_text(encoding="utf-8") == "# Ann, session 1\n\nAnn: hello\n"
    assert (folders["conv-2"] / "m000001.md").read_text(encoding="utf-8") == "Bob: 안녕\n"
    assert ids == {"m000000.md": "conv-1:D1:1", "m000001.md": "conv-2:D1:1", "m000002.md": "conv-1:D1:2"}


def test_max_queries_spec() -> None:
    datasets = ["locomo", "korquad"]
    assert eval_retrieval.parse_max_queries(None, datasets) == {}
    assert eval_retrieval.parse_max_queries("500", datasets) == {"locomo": 500, "korquad": 500}
    assert eval_retrieval.parse_max_queries("korquad=1000", datasets) == {"korquad": 1000}
    with pytest.raises(ValueError):
        eval_retrieval.parse_max_queries("squad=10", datasets)


def test_sample_queries_writes_the_sample_every_system_is_scored_on(tmp_path: Path) -> None:
    source = tmp_path / "queries.jsonl"
    peer_common.write_jsonl(source, [{"qid": f"q{i}", "store": "s", "query": f"w{i}"} for i in range(10)])
    assert eval_retrieval.sample_queries(source, None, tmp_path / "out.jsonl") == source
    assert eval_retrieval.sample_queries(source, 10, tmp_path / "out.jsonl") == source
    sampled = eval_retrieval.sample_queries(source, 4, tmp_path / "out.jsonl")
    assert [r["qid"] for r in peer_common.read_jsonl(sampled)] == ["q0", "q2", "q5", "q7"]


def test_stdio_mcp_client_speaks_to_a_real_server(tmp_path: Path) -> None:
    root = tmp_path / "store"
    env = dict(server_env(root), PYTHONPATH=str(REPO))
    client = peer_common.StdioMcpClient([sys.executable, "-m", "memory_mcp", "--store", str(root)], env)
    try:
        saved = client.call_tool("memory_remember", {"title": "Staging deploys", "body": "Deploys go through staging."})
        found = client.call_tool("memory_recall", {"query": "staging deploys", "limit": 5})
        assert [r["id"] for r in found["results"]][:1] == [saved["id"]]
        with pytest.raises(RuntimeError):
            client.call_tool("memory_recall", {"query": "x", "limit": "many"})
    finally:
        client.close()
    assert client.proc.returncode is not None
    json.dumps(found)  # the structured answer is plain JSON
