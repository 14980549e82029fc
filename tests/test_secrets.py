"""Text that looks like a credential is refused on remember and update, naming the kind, unless the memory is
private (`sync: local`); nothing refused is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Tools

SECRETS = [
    ("AWS key AKIAIOSFODNN7EXAMPLE for the deploy user", "AWS Access Key"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "Private Key"),
    ("CI token 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", "GitHub Token"),
    ("gitlab glpat-xxxxxxxxxxxxxxxxxxxx", "GitLab Token"),
    ("export DB_PASSWORD=hunter2secret", "Secret Keyword"),
    ('password = "hunter2secret"', "Secret Keyword"),
]
HARMLESS = [
    "The password policy asks for 12 characters.",
    "Commit 9bcf8c3a1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a fixed it; the id is 01KH60JFE05BTRAVE29W5R9Y1F.",
    "The API server is at 8.8.8.8 port 443.",
]


@pytest.mark.anyio
@pytest.mark.parametrize("text,kind", SECRETS)
async def test_remember_refuses_a_secret_naming_its_kind(mem_tools: Tools, store: Path, text: str, kind: str) -> None:
    message = await mem_tools.err("memory_remember", title="Deploy access", body=text)
    assert "body: looks like a secret" in message and kind in message and "private" in message
    assert not list((store / "memories").glob("*.md"))


@pytest.mark.anyio
async def test_harmless_text_is_kept_and_a_private_memory_may_hold_a_secret(mem_tools: Tools, store: Path) -> None:
    for n, text in enumerate(HARMLESS):
        await mem_tools.remember(f"Note {n}", text)
    private = await mem_tools.remember("Deploy key", SECRETS[0][0], private=True)
    text = (store / private["path"]).read_text()
    assert "sync: local" in text and "AKIAIOSFODNN7EXAMPLE" in text
    # editing the private memory keeps working; editing a shared one with a secret is refused
    await mem_tools.ok("memory_update", op="edit", id=private["id"], body=SECRETS[2][0])
    shared = await mem_tools.remember("Deploy steps", "Run the pipeline.")
    message = await mem_tools.err("memory_update", op="edit", id=shared["id"], body=SECRETS[4][0])
    assert "Secret Keyword" in message
    assert "hunter2" not in (store / shared["path"]).read_text()
    message = await mem_tools.err("memory_remember", title="From", body="x", source="https://bob:hunter2@example.com/")
    assert "source: looks like a secret (Basic Auth Credentials" in message
