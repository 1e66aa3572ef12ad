"""Issue 34, requirement 3, the doors of a workspace's sign-in: Sign in with Slack in
multi-workspace mode (the id_token's team and Enterprise Grid claims; an admin of the workspace
who reviews nothing gets in, and edits that workspace's settings alone), every sign-in and
refusal audited in one line, and `dialectic reviewers link --team` (required when the service
serves many workspaces; the user must review that workspace, which must be installed)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from bot.service.grants import Purpose, key_of, unseal
from bot.service.sessions import SIGN_IN_REFUSED, SIGNED_IN
from storage import audit
from storage.db import Database
from tests.support.cli_fixtures import Cli, clean_env, cli
from tests.support.workspace_world import (
    CLIENT_ID,
    CLIENT_SECRET,
    KEY,
    T1,
    T2,
    T3,
    TOKEN,
    World,
    workspace_world,
)

__all__ = ["clean_env", "cli"]  # fixtures

pytestmark = pytest.mark.integration


@pytest.fixture
async def world(tmp_path: Path, db: Database) -> World:
    async with workspace_world(tmp_path, db) as w:
        yield w   # type: ignore[misc]


async def sign_in_events(w: World) -> list[tuple[str, str, dict[str, object]]]:
    async with w.h.rt.db.transaction(readonly=True) as session:
        return [(e.kind, e.actor, e.data) for e in await audit.events(session, None)
                if e.kind in (SIGNED_IN, SIGN_IN_REFUSED)]


async def test_a_workspace_admin_edits_that_workspaces_settings_and_no_others(
        world: World) -> None:
    w = world
    w.h.fake.add_user("UADMIN2", team_id=T2, is_admin=True)
    w.h.fake.add_user("UREV2", team_id=T2)
    async with w.browser() as s:
        status, page = await w.sign_in_with_slack(s, "UADMIN2", T2)   # an admin, no reviewer
        assert status == 200, page
        asked = [c.team for c in w.h.fake.calls_to("users.info")]
        assert asked and set(asked) == {T2}   # with T2's own token
        page_url = f"{w.base}/workspaces/{T2}/settings"
        async with s.get(page_url) as shown:
            assert shown.status == 200 and 'name="daily_budget_usd"' in await shown.text()
        async with s.post(page_url, headers={"Origin": w.base},
                          data={"daily_budget_usd": "3", "reviewers": "UREV2",
                                "review_channel": "", "thresholds": ""}) as saved:
            assert saved.status == 200 and "Saved." in await saved.text()
        for team in (T1, T3):
            async with s.get(f"{w.base}/workspaces/{team}/settings") as other:
                assert other.status == 403
            async with s.post(f"{w.base}/workspaces/{team}/settings", headers={"Origin": w.base},
                              data={"daily_budget_usd": "1"}) as other:
                assert other.status == 403
    async with w.h.rt.db.transaction(readonly=True) as session:
        changes = [(e.actor, e.data["team_id"], e.data["changed"])
                   for e in await audit.events(session, None)
                   if e.kind == "workspace_settings_changed" and e.actor != "operator"]
    assert changes == [("UADMIN2", T2, ["daily_budget_usd"])]
    # a reviewer of T2 who administers nothing, and a link's reviewer, read no settings page
    async with w.browser() as s:
        assert (await w.sign_in_with_slack(s, "UREV2", T2))[0] == 200
        async with s.get(f"{w.base}/workspaces/{T2}/settings") as refused:
            assert refused.status == 403 and "admins and owners, signed in with Slack" in (
                await refused.text())
        async with s.post(f"{w.base}/workspaces/{T2}/settings", headers={"Origin": w.base},
                          data={"daily_budget_usd": "1"}) as refused:
            assert refused.status == 403
        async with s.post(f"{w.base}/api/workspaces/{T2}/settings",
                          json={"daily_budget_usd": "9"}) as refused:
            assert refused.status == 403
    async with w.browser() as s:
        assert (await w.sign_in_by_link(s, w.links[T1]))[0] == 200
        async with s.get(f"{w.base}/workspaces/{T1}/settings") as refused:
            assert refused.status == 403
    async with w.h.rt.db.transaction(readonly=True) as session:
        refusals = [(e.actor, e.data["team_id"]) for e in await audit.events(session, None)
                    if e.kind == "workspace_settings_refused"]
    assert ("UREV2", T2) in refusals
    assert (await w.h.rt.service.budget_today())["cap_usd"] > 3   # T2's cap is T2's alone


async def test_sign_ins_and_refusals_are_audited_with_their_workspace(
        world: World, caplog: pytest.LogCaptureFixture) -> None:
    w = world
    caplog.set_level(logging.INFO, logger="dialectic")
    async with w.browser() as s:
        assert (await w.sign_in_with_slack(s, "UREV1", T1))[0] == 200
    async with w.browser() as s:
        assert (await w.sign_in_with_slack(s, "UNOBODY", T2))[0] == 403
    async with w.browser() as s:
        assert (await w.sign_in_with_slack(s, "UOPER", T3))[0] == 403
    events = await sign_in_events(w)
    assert [(k, a, d["via"], d["team_id"]) for k, a, d in events][-3:] == [
        (SIGNED_IN, "UREV1", "slack", T1), (SIGN_IN_REFUSED, "UNOBODY", "slack", T2),
        (SIGN_IN_REFUSED, "UOPER", "slack", T3)]
    assert "not have Dialectic installed" in str(events[-1][2]["reason"])
    refusals = [r for r in caplog.records if "console sign-in of" in r.getMessage()]
    assert len(refusals) == 2 and not [r for r in refusals if r.exc_info]
    assert not [r for r in caplog.records if "xoxb-" in r.getMessage()]   # no token logged


async def test_an_enterprise_grid_workspace_signs_in_as_its_organisation_installed_it(
        tmp_path: Path, db: Database) -> None:
    """An org-wide install covers its organisation's workspaces: Slack's id_token names the
    workspace and the organisation; the session carries both, and opens that workspace's."""
    from tests.fakes.slack_installs import Install
    from tests.integration.test_slack_install import install

    async with workspace_world(tmp_path, db) as w:
        assert (await install(w.h, Install(None, enterprise_id="E1ORG", org_wide=True))
                ).status == 200
        async with w.browser() as s:
            status, page = await w.sign_in_with_slack(s, "UOPER", "T5INORG", "E1ORG")
            assert status == 200, page
            cookie = next(c.value for c in s.cookie_jar if c.key == "dialectic_session")
            async with s.get(f"{w.base}/api/debates") as listed:
                assert (await listed.json())["debates"] == []   # none of its own yet
        async with w.browser() as s:   # the same workspace claimed outside the organisation
            assert (await w.sign_in_with_slack(s, "UOPER", "T5INORG"))[0] == 403
    key = key_of(w.h.rt.settings)   # the API token's: every replica signs sessions with it
    assert key is not None
    found = unseal(key, Purpose.SESSION, cookie)
    assert found is not None and (found.team_id, found.enterprise_id) == ("T5INORG", "E1ORG")


async def test_reviewers_link_names_the_workspace_in_multi_workspace_mode(
        world: World, cli: Cli) -> None:
    w = world
    env = {"DIALECTIC_API_TOKEN": TOKEN,
           "DATABASE_URL": w.h.rt.db.url.render_as_string(hide_password=False),
           "SLACK_CLIENT_ID": CLIENT_ID, "SLACK_CLIENT_SECRET": CLIENT_SECRET,
           "SLACK_SIGNING_SECRET": "secret", "DIALECTIC_TOKEN_KEYS": KEY,
           "SLACK_API_URL": w.h.fake.base_url, "DIALECTIC_REVIEWERS": "UOPER",
           "DIALECTIC_PUBLIC_URL": w.base}

    def run(*args: str) -> tuple[int, str]:
        done = cli("reviewers", "link", *args, env=env)
        return done.returncode, done.stdout + done.stderr

    code, out = await asyncio.to_thread(run, "UREV1")
    assert code != 0 and "name the one the link opens with --team" in out and "grant=" not in out
    code, out = await asyncio.to_thread(run, "UREV2", "--team", T1)
    assert code != 0 and "UREV2 is neither a reviewer nor an admin of the Slack workspace" in out
    code, out = await asyncio.to_thread(run, "UOPER", "--team", T3)
    assert code != 0 and "T3GONE does not have Dialectic installed" in out
    assert "Traceback" not in out and len([ln for ln in out.splitlines() if ln.strip()]) == 1
    code, out = await asyncio.to_thread(run, "UREV1", "--team", T1)
    assert code == 0 and "of workspace T1ONE" in out, out
    grant = out.split("grant=", 1)[1].split()[0]
    async with w.browser() as s:
        assert (await w.sign_in_by_link(s, grant))[0] == 200
        async with s.get(f"{w.base}/api/debates") as listed:
            assert [d["id"] for d in (await listed.json())["debates"]] == [w.debates[T1]]
