"""The state machine through the real stdio server: every allowed and forbidden transition,
supersede archiving the old memory, and purge needing confirm=true.

Expectations are written out here from the issue, not read from memory_mcp.lifecycle, so a change
to the state machine shows up as a failing test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Tools, frontmatter

pytestmark = pytest.mark.anyio

STATES = ("active", "archived", "deprecated")
# (from, to) -> allowed. Same-state moves and anything out of deprecated are forbidden.
ALLOWED = {
    ("active", "archived"),
    ("archived", "active"),
    ("active", "deprecated"),
    ("archived", "deprecated"),
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


async def _every_transition_through_set_state(tools: Tools, store: Path) -> None:
    failures = []
    for n, (start, target) in enumerate((a, b) for a in STATES for b in STATES):
        made = await _memory_in(tools, start, f"s{n}-{start}-{target}")
        path = store / made["path"]
        before = path.read_bytes()
        reason = "no longer true" if target == "deprecated" else None
        r = await tools.raw("memory_update", op="set_state", id=made["id"], state=target, reason=reason)
        if (start, target) in ALLOWED:
            if r.is_error:
                failures.append(f"{start}->{target} refused: {r.content}")
                continue
            answer = r.structured_content
            fm = frontmatter(path)
            if answer["state"] != target or fm["state"] != target:
                failures.append(f"{start}->{target}: answer {answer['state']}, file {fm['state']}")
            if target == "deprecated" and fm.get("deprecated_reason") != reason:
                failures.append(f"{start}->deprecated did not record the reason: {fm}")
            indexed = (await tools.read(id=made["id"]))["frontmatter"]["state"]
            if indexed != target:
                failures.append(f"{start}->{target}: read says {indexed}")
        else:
            if not r.is_error:
                failures.append(f"{start}->{target} was allowed")
                continue
            text = " ".join(c.text for c in r.content)
            expected = "already" if start == target else "not allowed"
            if expected not in text:
                failures.append(f"{start}->{target}: unclear message {text!r}")
            if path.read_bytes() != before:
                failures.append(f"{start}->{target}: refused but the file changed")
    assert not failures, "\n".join(failures)


async def _forget_modes_follow_the_same_rules(tools: Tools, store: Path) -> None:
    failures = []
    cases = [(s, mode) for s in STATES for mode in ("archive", "deprecate")]
    for n, (start, mode) in enumerate(cases):
        made = await _memory_in(tools, start, f"f{n}-{start}-{mode}")
        target = "archived" if mode == "archive" else "deprecated"
        reason = "superseded by reality" if mode == "deprecate" else None
        r = await tools.raw("memory_forget", id=made["id"], mode=mode, reason=reason)
        if (start, target) in ALLOWED:
            if r.is_error:
                failures.append(f"forget {mode} from {start} refused: {r.content}")
            elif frontmatter(store / made["path"])["state"] != target:
                failures.append(f"forget {mode} from {start}: file not {target}")
        elif not r.is_error:
            failures.append(f"forget {mode} from {start} was allowed")
    assert not failures, "\n".join(failures)


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


async def _deprecated_is_terminal_and_hidden_from_recall(tools: Tools, store: Path) -> None:
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
    assert frontmatter(store / made["path"])["state"] == "deprecated"


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


async def _purge_needs_confirm_from_every_state(tools: Tools, store: Path) -> None:
    for start in STATES:
        made = await _memory_in(tools, start, f"purge-{start}")
        path = store / made["path"]
        for args in ({}, {"confirm": False}):
            message = await tools.err("memory_forget", id=made["id"], mode="purge", **args)
            assert "confirm" in message
            assert path.is_file(), "a refused purge deleted the file"
        assert made["id"] in await tools.recall_ids(f"purge-{start}", include_deprecated=True)
        answer = await tools.ok("memory_forget", id=made["id"], mode="purge", confirm=True)
        assert answer["state"] is None
        assert not path.exists()
        assert made["id"] not in await tools.recall_ids(f"purge-{start}", include_deprecated=True)
        message = await tools.err("memory_read", id=made["id"])
        assert "no memory" in message


# One server per test is the slow part (~1.5 s): each test runs several scenarios on its own server.


async def test_transitions(tools: Tools, store: Path) -> None:
    await _every_transition_through_set_state(tools, store)
    await _forget_modes_follow_the_same_rules(tools, store)
    await _deprecating_requires_a_reason(tools, store)


async def test_deprecate_supersede_purge(tools: Tools, store: Path) -> None:
    await _deprecated_is_terminal_and_hidden_from_recall(tools, store)
    await _supersede_archives_the_old_memory_both_ways(tools, store)
    await _purge_needs_confirm_from_every_state(tools, store)
