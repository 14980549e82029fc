"""bench/locomo_peer_protocol.py on a small conversation the test writes itself (the LoCoMo data may not
enter the project): the protocol's corpus, gold and R@k rules, and a whole run through MemoryService."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import locomo_peer_protocol as protocol  # noqa: E402

CONVERSATION = {
    "speaker_a": "Ana",
    "speaker_b": "Ben",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I went sailing on the lake."},
    ],
    "session_2_date_time": "9:00 am on 1 June, 2023",
    "session_2": [
        {"speaker": "Ana", "dia_id": "D2:1", "text": "Pixel knocked my violin off the shelf."},
        {"speaker": "Ben", "dia_id": "D2:2", "text": "My boat needs new sails before July.", "blip_caption": "a boat"},
    ],
    # a gap: session 4 is never read, as the peer's loop stops at the first missing session
    "session_4": [{"speaker": "Ana", "dia_id": "D4:1", "text": "unreachable"}],
}
QA = [
    {"question": "What is the name of Ana's cat?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
    {"question": "What instrument and pet does Ana have?", "answer": "x", "evidence": ["D1:1", "D2:1"], "category": 1},
    {"question": "What does Ben sail?", "answer": "x", "evidence": ["D1:2; D2:2"], "category": 2},
    {"question": "Anything?", "answer": "x", "evidence": [], "category": 3},
]


def test_corpus_and_gold_follow_the_peer_protocol() -> None:
    dialog = protocol.documents_of(CONVERSATION, "dialog")
    assert [d.doc_id for d in dialog] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert dialog[0].text == 'Ana said, "I adopted a grey cat named Pixel."' and dialog[0].when == "2023-05-08T13:56:00"
    assert "a boat" not in dialog[3].text  # image captions are not part of a document
    session = protocol.documents_of(CONVERSATION, "session")
    assert [d.doc_id for d in session] == ["session_1", "session_2"]
    assert session[1].text.split("\n")[1] == 'Ben said, "My boat needs new sails before July."'
    # the file's slips stay: one id no turn has at dialog granularity, its leading session at session granularity
    assert protocol.gold_of(["D1:2; D2:2"], "dialog") == {"D1:2; D2:2"}
    assert protocol.gold_of(["D1:2; D2:2", "D:11:26", "D30:05"], "session") == {"session_1", "session_30"}


def test_recall_is_the_share_of_gold_in_the_top_k_and_random_is_its_expectation() -> None:
    assert protocol.recall_at(["a", "b", "c"], {"c", "z"}, 3) == 0.5
    assert protocol.recall_at(["a", "b", "c"], {"c"}, 2) == 0.0
    assert protocol.recall_at([], set(), 10) == 1.0  # no gold counts as found
    docs = {f"d{i}" for i in range(20)}
    assert protocol.random_recall_at({"d1", "missing"}, docs, 10) == pytest.approx(0.25)
    assert protocol.random_recall_at({"d1"}, {"d1", "d2"}, 10) == 1.0


def test_a_whole_run_through_memory_mcp(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    sample = {"sample_id": "conv-26", "conversation": CONVERSATION, "qa": QA}
    (tmp_path / "data" / "locomo10.json").write_text(json.dumps([sample]), encoding="utf-8")
    scored, timing = protocol.run_granularity([sample], "dialog", tmp_path / "work")
    assert timing["documents"] == 4 and len(scored) == 4
    by_question = {s.question.text: s for s in scored}
    cat = by_question["What is the name of Ana's cat?"]
    assert cat.ranked[0] == "D1:1" and cat.recall[1] == 1.0
    assert by_question["What does Ben sail?"].recall[10] == 0.0  # the slip can never be found
    assert by_question["Anything?"].recall[10] == 1.0
    rows = protocol.table(scored)
    assert rows["ALL"]["n"] == 4 and rows["4 single-hop"]["R@1"] == 1.0
    # the command line: a split that names conversations the file lacks is refused
    with pytest.raises(SystemExit):
        protocol.main(["--bench-dir", str(tmp_path), "--split", "dev", "--granularity", "dialog"])
    out = tmp_path / "peer.json"
    assert protocol.main(["--bench-dir", str(tmp_path), "--granularity", "session", "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["session"]["tables"]["all"]["ALL"]["n"] == 4
