"""The state machine through the tools: every allowed and forbidden transition case by case, reactivation
of a deprecated memory with a reason, supersede archiving the old memory, and purge only from archived or
deprecated, with confirm=true.

Expectations are written out here from the issue, not read from memory_mcp.lifecycle, so a change
to the state machine shows up as a failing test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Tools, frontmatter

pytestmark = pytest.mark.anyio

STATES = ("active", "archived", "deprecated")
# (from, to) -> allowed. Same-state moves and deprecated -> archived are the forbidden ones.
ALLOWED = {
    ("active", "archived"),
    ("archived", "active"),
    ("active", "deprecated"),
    ("archived", "deprecated"),
    ("deprecated", "active"),
}
# these moves must say why; the reason lands in the file under this key
REASON_KEY = {
    ("active", "deprecated"): "deprecated_reason",
    ("archived", "deprecated"): "deprecated_reason",
    ("deprecated", "active"): "reactivated_reason",
}


async def _memory_in(t: Tools, state: str, label: str) -> dict:
    made = await t.remember(f"Transition subject {label}", f"Body for the transition case {label}.", type="episode")
    if state == "archived":
        await t.ok("memory_forget", id=made["id"], mode="archive")
    elif state == "deprecated":
        await t.ok("memory_forget", id=made["id"], mode="deprecate", reason="set up for the test")
    got = await t.read(id=made["id"])
    assert got["frontmatter"]["state"] == state
    return made


@pytest.mark.parametrize(("start", "target"), [(a, b) for a in STATES for b in STATES])
async def test_set_state_transition_matrix(mem_tools: Tools, store: Path, start: str, target: str) -> None:
    made = await _memory_in(mem_tools, start, f"{start}-{target}")
    path = store / made["path"]
    before = path.read_bytes()
    key = REASON_KEY.get((start, target))
    if key is not None:  # without a reason (or a blank one) the move is refused and nothing is written
        for reason in (None, "   "):
            message = await mem_tools.err("memory_update", op="set_state", id=made["id"], state=target, reason=reason)
            assert "reason: " in message and "requires a reason" in message
            assert path.read_bytes() == before
    reason = "checked again: still true" if key else None
    r = await mem_tools.raw("memory_update", op="set_state", id=made["id"], state=target, reason=reason)
    if (start, target) in ALLOWED:
        assert not r.is_error, r.content
        fm = frontmatter(path)
        assert r.structured_content["state"] == target and fm["state"] == target
        if key is not None:
            assert fm[key] == reason
        if (start, target) == ("deprecated", "active"):
            assert fm["deprecated_reason"] == "set up for the test"  # the history stays
        assert (await mem_tools.read(id=made["id"]))["frontmatter"]["state"] == target
    else:
        assert r.is_error, f"{start} -> {target} was allowed"
        text = " ".join(c.text for c in r.content)
        assert ("already" if start == target else "not allowed") in text, text
        assert path.read_bytes() == before


@pytest.mark.parametrize(("start", "mode"), [(s, m) for s in STATES for m in ("archive", "deprecate")])
async def test_forget_modes_follow_the_same_matrix(mem_tools: Tools, store: Path, start: str, mode: str) -> None:
    made = await _memory_in(mem_tools, start, f"forget-{start}-{mode}")
    path = store / made["path"]
    before = path.read_bytes()
    target = "archived" if mode == "archive" else "deprecated"
    reason = "superseded by reality" if mode == "deprecate" else None
    r = await mem_tools.raw("memory_forget", id=made["id"], mode=mode, reason=reason)
    if (start, target) in ALLOWED:
        assert not r.is_error, r.content
        assert frontmatter(path)["state"] == target
    else:
        assert r.is_error, f"forget {mode} from {start} was allowed"
        assert path.read_bytes() == before


@pytest.mark.parametrize("start", STATES)
async def test_purge_only_from_archived_or_deprecated_and_with_confirm(
    mem_tools: Tools, store: Path, start: str
) -> None:
    made = await _memory_in(mem_tools, start, f"purge-{start}")
    path = store / made["path"]
    if start == "active":
        for args in ({"confirm": True}, {}):
            message = await mem_tools.err("memory_forget", id=made["id"], mode="purge", **args)
            assert "must be archived or deprecated first" in message and "active" in message
        assert path.is_file() and made["id"] in await mem_tools.recall_ids(f"purge-{start}")
        return
    for args in ({}, {"confirm": False}):
        message = await mem_tools.err("memory_forget", id=made["id"], mode="purge", **args)
        assert "confirm" in message
        assert path.is_file(), "a refused purge deleted the file"
    assert made["id"] in await mem_tools.recall_ids(f"purge-{start}", include_deprecated=True)
    answer = await mem_tools.ok("memory_forget", id=made["id"], mode="purge", confirm=True)
    assert answer["state"] is None
    assert not path.exists()
    assert made["id"] not in await mem_tools.recall_ids(f"purge-{start}", include_deprecated=True)
    assert "no memory" in await mem_tools.err("memory_read", id=made["id"])


async def _deprecating_requires_a_reason(tools: Tools, store: Path) -> None:
    for start in ("active", "archived"):
        made = await _memory_in(tools, start, f"reason-{start}")
        for args in (
            {"op": "set_state", "state": "deprecated"},
            {"op": "set_state", "state": "deprecated", "reason": "   "},
        ):
            message = await tools.err("memory_update", id=made["id"], **args)
            assert "reason" in message
        message = await tools.err("memory_forget", id=made["id"], mode="deprecate")
        assert "reason" in message
        assert frontmatter(store / made["path"])["state"] == start


async def _deprecated_is_hidden_and_frozen_until_reactivated(tools: Tools, store: Path) -> None:
    made = await tools.remember("Legacy VPN uses PPTP", "The legacy VPN used PPTP with a shared secret.")
    other = await tools.remember("Wiki lives in Confluence", "The team wiki lives in Confluence.")
    await tools.ok("memory_forget", id=made["id"], mode="deprecate", reason="VPN replaced by WireGuard")
    assert made["id"] not in await tools.recall_ids("PPTP VPN")
    assert made["id"] in await tools.recall_ids("PPTP VPN", include_deprecated=True)
    assert made["id"] in await tools.recall_ids("PPTP VPN", state="deprecated")
    for args in (
        {"op": "edit", "body": "changed"},
        {"op": "supersede", "by": other["id"]},
    ):
        message = await tools.err("memory_update", id=made["id"], **args)
        assert "deprecated" in message
    # a deprecated memory cannot be the replacement either
    message = await tools.err("memory_update", op="supersede", id=other["id"], by=made["id"])
    assert "deprecated" in message
    message = await tools.err("memory_remember", title="New VPN", body="WireGuard VPN.", supersedes=[made["id"]])
    assert "deprecated" in message
    message = await tools.err("memory_forget", id=made["id"], mode="archive")
    assert "deprecated → archived is not allowed" in message
    assert frontmatter(store / made["path"])["state"] == "deprecated"
    # reactivation: with a reason, it is active, recalled and editable again
    answer = await tools.ok(
        "memory_update", op="set_state", id=made["id"], state="active", reason="the PPTP VPN is back for one site"
    )
    assert answer["message"] == "deprecated → active"
    assert made["id"] in await tools.recall_ids("PPTP VPN")
    await tools.ok("memory_update", op="edit", id=made["id"], body="The legacy VPN uses PPTP at the Lyon site only.")
    fm = frontmatter(store / made["path"])
    assert fm["state"] == "active" and fm["reactivated_reason"] == "the PPTP VPN is back for one site"


async def _supersede_archives_the_old_memory_both_ways(tools: Tools, store: Path) -> None:
    old = await tools.remember(
        "Atlas API deploys to Heroku", "atlas-api is deployed to Heroku.", entities=["atlas-api"]
    )
    new = await tools.remember(
        "Atlas API runs on ECS", "atlas-api moved to AWS ECS in March.", entities=["atlas-api"], supersedes=[old["id"]]
    )
    assert new["superseded"] == [old["id"]]
    old_fm, new_fm = frontmatter(store / old["path"]), frontmatter(store / new["path"])
    assert old_fm["state"] == "archived" and old_fm["superseded_by"] == [new["id"]]
    assert new_fm["supersedes"] == [old["id"]] and new_fm["state"] == "active"
    chain = (await tools.read(id=new["id"]))["supersedes_chain"]
    assert [(c["id"], c["state"]) for c in chain] == [(old["id"], "archived")]
    chain = (await tools.read(id=old["id"]))["superseded_by_chain"]
    assert [(c["id"], c["state"]) for c in chain] == [(new["id"], "active")]
    # recall still finds the old one but, matching the query as well, ranks the current one first
    ranked = await tools.recall_ids("atlas-api")
    assert ranked.index(new["id"]) < ranked.index(old["id"])

    # op=supersede between existing memories does the same; cycles are refused
    third = await tools.remember("Atlas API runs on EKS", "atlas-api now runs on Kubernetes (EKS).")
    answer = await tools.ok("memory_update", op="supersede", id=new["id"], by=third["id"])
    assert set(answer["changed"]) == {new["id"], third["id"]}
    assert frontmatter(store / new["path"])["state"] == "archived"
    assert frontmatter(store / third["path"])["supersedes"] == [new["id"]]
    message = await tools.err("memory_update", op="supersede", id=third["id"], by=old["id"])
    assert "cycle" in message
    message = await tools.err("memory_update", op="supersede", id=third["id"], by=third["id"])
    assert "itself" in message
    chain = (await tools.read(id=third["id"]))["supersedes_chain"]
    assert [c["id"] for c in chain] == [new["id"], old["id"]]


# One server per test is the slow part (~1.5 s): each stdio test runs several scenarios on its own server.


async def test_deprecating_requires_a_reason(tools: Tools, store: Path) -> None:
    await _deprecating_requires_a_reason(tools, store)


async def test_deprecate_reactivate_supersede(tools: Tools, store: Path) -> None:
    await _deprecated_is_hidden_and_frozen_until_reactivated(tools, store)
    await _supersede_archives_the_old_memory_both_ways(tools, store)
