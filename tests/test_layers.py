"""The package layout is a layering: every module imports only its own layer or lower ones.

domain < canon < index < config < store < search < tools < importers < edges. `config` sits between index and
store (store and everything above reads settings); `web` and `__main__` are edges. The imports are read
from the source with `ast`, lazy ones inside functions included, so a shortcut cannot hide.

SQL lives only in `index/`: no module outside it calls execute, executemany or executescript, and
BEGIN/COMMIT are written once, in `index.db.atomic`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import memory_mcp

PACKAGE = Path(memory_mcp.__file__).parent
LAYERS = ("domain", "canon", "index", "config", "store", "search", "tools", "importers", "edges")
EDGE_MODULES = {"__main__"}  # a top-level module that is an edge (python -m memory_mcp)


def _layer_of(module: str) -> str | None:
    """The layer of `memory_mcp.x.y` (None for the package itself and for modules outside it)."""
    parts = module.split(".")
    if parts[0] != "memory_mcp" or len(parts) < 2:
        return None
    top = parts[1]
    if top in EDGE_MODULES:
        return "edges"
    if top in LAYERS:
        return top
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS or EDGE_MODULES in tests/test_layers.py")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file, relative ones resolved against `module`."""
    module = module or _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # `from . import x`: each name is a module
                out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
            else:
                out.append((node.lineno, target))
    return out


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_is_in_a_layer() -> None:
    for path in MODULES:
        _layer_of(_module_name(path))  # raises for a module no layer owns


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_higher_layer(path: Path) -> None:
    own = _layer_of(_module_name(path))
    if own is None:
        return
    upward = [
        f"line {line}: {target} ({layer})"
        for line, target in _imports(path)
        if (layer := _layer_of(target)) is not None and LAYERS.index(layer) > LAYERS.index(own)
    ]
    assert not upward, f"{path.relative_to(PACKAGE)} ({own}) imports a higher layer: {upward}"


def test_the_core_imports_no_edge() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)} line {line}: {target}"
        for path in MODULES
        if _layer_of(_module_name(path)) not in ("edges", None)
        for line, target in _imports(path)
        if _layer_of(target) == "edges"
    ]
    assert not offenders, offenders


def test_the_walk_sees_relative_and_lazy_imports(tmp_path: Path) -> None:
    """The checker itself: a lazy relative import of an edge inside a store module is found and resolved."""
    probe = tmp_path / "probe.py"
    probe.write_text("from .lock import StoreLock\n\n\ndef f():\n    from ..edges import server\n", encoding="utf-8")
    found = _imports(probe, module="memory_mcp.store.probe")
    assert found == [(1, "memory_mcp.store.lock"), (5, "memory_mcp.edges")]
    assert _layer_of(found[1][1]) == "edges"


MAX_CLASS_LINES = 400


def test_no_class_is_a_namespace() -> None:
    """No class over 400 lines: operations are modules of tools/, not methods of one large class."""
    large = [
        f"{path.relative_to(PACKAGE)}: {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES
    ]
    assert not large, large


SQL_CALLS = {"execute", "executemany", "executescript"}


def _sql_calls(path: Path) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SQL_CALLS
    ]


def test_sql_stays_in_the_index_package() -> None:
    """Every query is a function of memory_mcp/index/: no other module calls execute, executemany or
    executescript, so a schema change is read and made in one package."""
    calls = {
        f"{path.relative_to(PACKAGE).as_posix()}: lines {lines}"
        for path in MODULES
        if path.relative_to(PACKAGE).parts[0] != "index" and (lines := _sql_calls(path))
    }
    assert not calls, f"SQL outside memory_mcp/index/: {sorted(calls)}"


def test_the_sql_walk_sees_calls(tmp_path: Path) -> None:
    """The checker itself: execute, executemany and executescript on any receiver are found by line."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(conn, cur):\n    conn.execute('x')\n    cur.executemany('y', [])\n    conn.cursor().executescript('z')\n",
        encoding="utf-8",
    )
    assert _sql_calls(probe) == [2, 3, 4]


def test_transactions_go_through_atomic() -> None:
    """BEGIN/COMMIT are written once, in index.db.atomic (savepoints when nested)."""
    for path in MODULES:
        text = path.read_text(encoding="utf-8")
        if path.relative_to(PACKAGE).as_posix() != "index/db.py":
            assert "BEGIN" not in text and "COMMIT" not in text, path.relative_to(PACKAGE)


def _import_graph() -> dict[str, set[str]]:
    """Each module of the package → the package modules it imports (lazy and TYPE_CHECKING ones included)."""
    names = {_module_name(p) for p in MODULES}
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        module = _module_name(path)
        deps: set[str] = set()
        for _, target in _imports(path):
            while target and target not in names:  # `from x import name`: the module is x
                target = target.rpartition(".")[0]
            if target not in ("", module, "memory_mcp"):
                deps.add(target)
        graph[module] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                found.append(sorted([*group, v]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    """No two modules import each other, even through others or only for type checking."""
    assert _cycles(_import_graph()) == []


def test_the_cycle_walk_sees_cycles() -> None:
    """The checker itself: a three-module cycle is found, a chain beside it is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


SEARCH_PIPELINE = {f"memory_mcp.search.{m}" for m in ("recall", "rank", "fusion", "collapse", "succession")}


def _modules_named(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """Like `_imports`, but `from pkg import name` also gives `pkg.name`: `from ..search import rank` names
    the module search.rank, not only the package."""
    module = module or _module_name(path)
    package = module.rpartition(".")[0]
    out = list(_imports(path, module))
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module])
            out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return out


def test_tools_call_the_search_instead_of_assembling_it() -> None:
    """A recall is searched in search/: tools/recall.py imports nothing from search/ but `search.recall` (its
    one entry point, `find`, with its records), and no other module of tools/ imports a part of the recall
    pipeline (search.recall, rank, fusion, collapse, succession), so ranking, fusion and collapse cannot be
    put together in tools/ again."""
    offenders = []
    for path in MODULES:
        module = _module_name(path)
        if _layer_of(module) != "tools":
            continue
        for line, target in _modules_named(path):
            if not target.startswith("memory_mcp.search."):
                continue
            if module == "memory_mcp.tools.recall":
                bad = not target.startswith("memory_mcp.search.recall")
            else:
                bad = any(target == m or target.startswith(m + ".") for m in SEARCH_PIPELINE)
            if bad:
                offenders.append(f"{path.relative_to(PACKAGE)} line {line}: {target}")
    assert not offenders, offenders


def test_the_search_rule_sees_a_package_import(tmp_path: Path) -> None:
    """The checker itself: `from ..search import rank` in a tools module names search.rank."""
    probe = tmp_path / "probe.py"
    probe.write_text("from ..search import rank\n", encoding="utf-8")
    assert _modules_named(probe, module="memory_mcp.tools.probe") == [
        (1, "memory_mcp.search"),
        (1, "memory_mcp.search.rank"),
    ]


# a file name is not a comparison: slugify keeps its own NFKC + lower (file names must never change)
FOLD_ALLOWED = {("canon/files.py", "slugify")}


def _folds_and_splits(path: Path) -> list[str]:
    """Where a module folds letters or splits words itself: casefold(), unicodedata.normalize(), a `\\w+`
    pattern or an FTS5 tokenizer written as a literal, with the function it is in."""
    found: list[str] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                f = child.func
                if f.attr == "casefold" or (
                    f.attr == "normalize" and isinstance(f.value, ast.Name) and f.value.id == "unicodedata"
                ):
                    found.append(f"{where}: line {child.lineno} {f.attr}")
            if isinstance(child, ast.Constant) and isinstance(child.value, str):
                tokenizer = "unicode61 remove_diacritics" in child.value or "tokenize = 'trigram'" in child.value
                if child.value == r"\w+" or tokenizer:
                    found.append(f"{where}: line {child.lineno} {child.value[:30]!r}")
            walk(child, inner)

    walk(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_letters_compare_in_one_module() -> None:
    """domain/text.py owns folding and the word split (and the FTS5 tokenizers, SQLite's side of the fold):
    every other module calls it, so two places cannot come to compare letters differently unnoticed."""
    offenders = []
    for path in MODULES:
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "domain/text.py":
            continue
        offenders += [
            f"{rel} {hit}" for hit in _folds_and_splits(path) if (rel, hit.split(":", 1)[0]) not in FOLD_ALLOWED
        ]
    assert not offenders, offenders


def test_the_fold_walk_sees_folds(tmp_path: Path) -> None:
    """The checker itself: a casefold, a normalize, a word pattern and a tokenizer literal are found."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import re, unicodedata\nW = re.compile(r'\\w+')\n\n\ndef f(t):\n    return unicodedata.normalize('NFC', t)"
        ".casefold()\n\n\nS = \"tokenize = 'trigram'\"\n",
        encoding="utf-8",
    )
    assert _folds_and_splits(probe) == [
        "<module>: line 2 '\\\\w+'",
        "f: line 6 casefold",
        "f: line 6 normalize",
        "<module>: line 9 \"tokenize = 'trigram'\"",
    ]
