"""The browser view's package: HTML lives in templates, assets are files, and both ship with the package.

The pages themselves are tested through their routes in test_web.py; this file holds what keeps the
package shaped so: no markup in its Python, every template compiling, every asset served as the file it
is (behind the loopback guard), and every template and asset matched by the wheel's package data.
"""

from __future__ import annotations

import fnmatch
import io
import re
import shutil
import tokenize
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from memory_mcp.edges.web import WebView
from memory_mcp.edges.web.render import ENV
from memory_mcp.tools.service import MemoryService

from .helpers import EXAMPLE_STORE, REPO

PACKAGE = REPO / "memory_mcp" / "edges" / "web"
PORT = 5097
ORIGIN = f"http://127.0.0.1:{PORT}"
TAG = re.compile(r"</?[A-Za-z!][^<>]*>")
# the stylesheet, script and icon; .js is text/javascript or, from an older mimetypes table, application/javascript
ASSET_TYPES = {".css": ("text/css",), ".js": ("text/javascript", "application/javascript"), ".svg": ("image/svg+xml",)}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    root = tmp_path / "store"
    shutil.copytree(EXAMPLE_STORE, root, ignore=shutil.ignore_patterns(".index"))
    service = MemoryService(root)
    try:
        with TestClient(WebView(service, PORT).app, base_url=ORIGIN) as c:
            yield c
    finally:
        service.close()


def test_no_html_is_built_in_the_packages_python() -> None:
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
            if tok.type == tokenize.STRING and TAG.search(tok.string):
                found.append(f"{path.name}:{tok.start[0]}: {tok.string[:60]}")
    assert found == [], "markup belongs in templates/"


def test_every_template_compiles() -> None:
    names = ENV.list_templates()
    assert "base.html" in names and len(names) == len(list((PACKAGE / "templates").glob("*.html")))
    for name in names:
        ENV.get_template(name)  # a syntax error raises TemplateSyntaxError naming the file and line


def test_assets_are_served_as_their_files_behind_the_guard(client: TestClient) -> None:
    assets = sorted((PACKAGE / "static").iterdir())
    assert {a.suffix for a in assets} == set(ASSET_TYPES)
    for asset in assets:
        r = client.get(f"/assets/{asset.name}")
        assert r.status_code == 200 and r.content == asset.read_bytes(), asset.name
        assert r.headers["content-type"].split(";")[0] in ASSET_TYPES[asset.suffix], asset.name
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "default-src 'none'" in r.headers["content-security-policy"]
        assert client.get(f"/assets/{asset.name}", headers={"host": "evil.example"}).status_code == 403
    for missing in ("/assets/nope.css", "/assets/", "/assets/../app.py", "/assets/%2e%2e/app.py"):
        assert client.get(missing).status_code == 404, missing
    assert client.post("/assets/app.css").status_code == 405


def test_templates_and_assets_are_package_data() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["memory_mcp.edges.web"]
    files = [p.relative_to(PACKAGE).as_posix() for d in ("templates", "static") for p in (PACKAGE / d).rglob("*")]
    files = [f for f in files if (PACKAGE / f).is_file()]
    assert files
    # setuptools globs do not cross folders with `*`: a file in a subfolder needs its own pattern
    unshipped = [f for f in files if not any(fnmatch.fnmatch(f, p) and f.count("/") == p.count("/") for p in patterns)]
    assert unshipped == []
