"""A workspace's own daily budget and the operator's over everything, through the one admission
rule (service.submit -> storage/budget.py under the day's lock), on SQLite and PostgreSQL: a
workspace at its cap is refused, naming its cap and what is left, while another is admitted;
the operator's cap refuses both; every change of a setting is audited with before and after."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.service import workspace_settings as ws
from bot.service.debates import DebateService
from engine.core.debate import prepare
from engine.domain import DebateRequest, utcnow
from engine.errors import BudgetExceeded, InvalidRequest
from storage import audit, budget
from storage.db import Database
from storage.records import Origin
from storage.tenancy import Workspace
from tests.support.service_fixtures import priced, service
from tests.support.storage_fixtures import BACKENDS, migrated_database

A, B = "T0AAAAAA", "T0BBBBBB"


def _origin(team: str | None) -> Origin:
    return Origin(surface="slack", team_id=team, channel_id="C0CHAN", user_id="U0ADMIN")


@pytest.fixture(params=BACKENDS)
async def db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Database]:
    async with migrated_database(request.param, tmp_path) as database:
        yield database


async def _high(svc: DebateService) -> float:
    return (await svc.estimate(DebateRequest(topic="Q?", mode="simple"))).usd_high


async def _submit(svc: DebateService, team: str | None, n: int) -> float:
    sub = await svc.submit(DebateRequest(topic=f"Should we do thing {n}?", mode="simple"),
                           origin=_origin(team))
    return sub.record.reserved_usd


async def _cap(db: Database, team: str, usd: float | None) -> None:
    await ws.save(db, team, {"daily_budget_usd": usd}, by="U0ADMIN", admin=True, now=utcnow())


async def test_a_workspace_at_its_cap_is_refused_while_another_is_admitted(db: Database) -> None:
    svc = service(db, priced(daily_budget_usd=100.0))
    one = await _high(svc)
    await _cap(db, A, one * 1.5)          # room for one debate of A, not two
    await _cap(db, B, one * 2.5)          # room for two of B
    await _submit(svc, A, 1)
    with pytest.raises(BudgetExceeded) as refused:
        await _submit(svc, A, 2)
    assert str(refused.value).startswith("this workspace's daily budget has $")
    assert "this debate needs about" in str(refused.value)
    await _submit(svc, B, 3)              # the other workspace is admitted
    await _submit(svc, B, 4)
    with pytest.raises(BudgetExceeded, match=r"^this workspace's daily budget"):
        await _submit(svc, B, 5)
    await _submit(svc, None, 6)           # the operator's own debates: the global cap only
    # the estimate says the same before anything is held
    quote = await svc.estimate(DebateRequest(topic="Q?", mode="simple"), team_id=A)
    assert not quote.admitted and "this workspace's daily budget" in str(quote.admission)
    assert (await svc.estimate(DebateRequest(topic="Q?", mode="simple"))).admitted
    # raising A's cap lets it in again; unsetting it leaves only the operator's cap
    await _cap(db, A, None)
    await _submit(svc, A, 7)


async def test_the_operators_cap_refuses_every_workspace(db: Database) -> None:
    probe = service(db, priced(daily_budget_usd=100.0))
    one = await _high(probe)
    svc = service(db, priced(daily_budget_usd=one * 2.5))   # two debates in all today
    await _cap(db, A, one * 2.2)
    await _cap(db, B, one * 2.2)
    held_a = await _submit(svc, A, 1)
    held_b = await _submit(svc, B, 2)
    for team, n in ((A, 3), (B, 4)):       # each has room under its own cap, not the total
        with pytest.raises(BudgetExceeded) as refused:
            await _submit(svc, team, n)
        assert str(refused.value).startswith("today's budget over all workspaces has $")
    with pytest.raises(BudgetExceeded, match=r"^today's budget has"):
        await _submit(svc, None, 5)
    async with db.transaction(readonly=True) as session:
        spend_a = await budget.workspace_spend(session, svc.clock().date(), Workspace(A))
        state = await budget.state(session, svc.clock().date())
    assert spend_a.reserved_usd == pytest.approx(held_a)
    assert state.reserved_usd == pytest.approx(held_a + held_b)


async def test_changes_are_audited_and_bad_values_change_nothing(db: Database) -> None:
    defaults = ws.Defaults(daily_budget_usd=20.0, reviewers=("U0OPER",), review_channel="C0OPS")
    for form, error in (({"daily_budget_usd": "-3"}, "daily budget: give a positive amount"),
                        ({"daily_budget_usd": "25"}, "at most the operator's daily budget"),
                        ({"daily_budget_usd": "ten"}, "is not an amount"),
                        ({"reviewers": "bob"}, "reviewers: 'bob' is no Slack user id"),
                        ({"review_channel": "#general"}, "is no Slack channel id")):
        with pytest.raises(InvalidRequest, match=error):
            ws.changes_from_form(form, operator_cap_usd=20.0)
    changes = ws.changes_from_form({"daily_budget_usd": "$5", "reviewers": "<@U0REV1>, S0GRP",
                                    "review_channel": "<#C0REVS|reviews>"},
                                   operator_cap_usd=20.0)
    with pytest.raises(ws.NotAdmin):
        await ws.save(db, A, changes, by="U0USER", admin=False, now=utcnow())
    assert (await ws.effective(db, A, defaults)).own == frozenset()
    await ws.save(db, A, changes, by="U0ADMIN", admin=True, now=utcnow())
    await ws.save(db, A, changes, by="U0ADMIN", admin=True, now=utcnow())   # no change
    found = await ws.effective(db, A, defaults)
    assert (found.daily_budget_usd, found.reviewers, found.review_channel) == (
        5.0, ("U0REV1", "S0GRP"), "C0REVS")
    other = await ws.effective(db, B, defaults)
    assert (other.daily_budget_usd, other.reviewers, other.review_channel) == (
        20.0, ("U0OPER",), "C0OPS")
    await ws.save(db, A, ws.changes_from_form({"reviewers": ""}, operator_cap_usd=20.0),
                  by="U0ADMIN", admin=True, now=utcnow())
    assert (await ws.effective(db, A, defaults)).reviewers == ("U0OPER",)
    async with db.transaction(readonly=True) as session:
        events = [e for e in await audit.events(session, None)
                  if e.kind == "workspace_settings_changed"]
        report = await audit.verify(session)
    assert [e.actor for e in events] == ["U0ADMIN", "U0ADMIN"]
    assert events[0].data["before"] == {"daily_budget_usd": None, "review_channel": None,
                                        "reviewers": None}
    assert events[0].data["after"]["reviewers"] == ["U0REV1", "S0GRP"]
    assert events[1].data == {"team_id": A, "changed": ["reviewers"],
                              "before": {"reviewers": ["U0REV1", "S0GRP"]},
                              "after": {"reviewers": None}}
    assert report.ok


async def test_a_workspaces_debates_route_by_its_own_cutoffs(db: Database) -> None:
    svc = service(db, priced(daily_budget_usd=100.0))
    presets = {n: f.thresholds for n, f in (await svc.oversight.in_force()).items()}
    for text, error in (("nosuch high=0.9", "no preset 'nosuch'"),
                        ("decision low=0.2", "write high=, tentative= or escalate="),
                        ("decision high=1.5", "a number from 0 to 1"),
                        ("decision", "name a cut-off"),
                        ("decision escalate=0.95", "thresholds: decision:")):
        with pytest.raises(ws.FieldError, match=error):
            ws.changes_from_form({"thresholds": text}, operator_cap_usd=100.0, presets=presets)
    changes = ws.changes_from_form({"thresholds": "decision high=0.95 tentative=0.9\n"
                                                  "market escalate=0.3"},
                                   operator_cap_usd=100.0, presets=presets)
    assert changes["thresholds"] == {"decision": {"high": 0.95, "tentative": 0.9},
                                     "market": {"escalate": 0.3}}
    await ws.save(db, A, changes, by="U0ADMIN", admin=True, now=utcnow())
    prepared = prepare(svc.engine, DebateRequest(topic="Q?", preset="decision"))
    own, _ = await svc.oversight.for_run(prepared, team_id=A)
    other, _ = await svc.oversight.for_run(prepared, team_id=B)
    operator, _ = await svc.oversight.for_run(prepared)
    assert (own.preset.thresholds.high, own.preset.thresholds.tentative) == (0.95, 0.9)
    assert own.preset.thresholds.escalate == presets["decision"].escalate
    assert other.preset.thresholds == operator.preset.thresholds == presets["decision"]


async def test_concurrent_submissions_never_pass_a_workspaces_cap(db: Database) -> None:
    """Eight at once against room for three: exactly three are admitted (the day's lock)."""
    svc = service(db, priced(daily_budget_usd=100.0))
    held = (await svc.estimate(DebateRequest(topic="Should we do thing 1?", mode="simple"))
            ).usd_high
    await _cap(db, A, held * 3.5)
    results = await asyncio.gather(*(_submit(svc, A, n) for n in range(1, 9)),
                                   return_exceptions=True)
    refused = [r for r in results if isinstance(r, BudgetExceeded)]
    assert len(refused) == 5 and len(results) - len(refused) == 3
    assert all(str(r).startswith("this workspace's daily budget") for r in refused)
    async with db.transaction(readonly=True) as session:
        spend = await budget.workspace_spend(session, svc.clock().date(), Workspace(A))
    assert spend.reserved_usd <= held * 3.5 + 1e-9


async def test_a_running_debates_top_ups_stay_within_its_workspaces_cap(db: Database) -> None:
    svc = service(db, priced(daily_budget_usd=100.0))
    one = await _high(svc)
    await _cap(db, A, one * 1.5)
    sub = await svc.submit(DebateRequest(topic="Should we do it?", mode="simple"),
                           origin=_origin(A))
    async with db.transaction() as session:
        granted = await budget.extend(session, day=svc.clock().date(), cap_usd=100.0,
                                      amount_usd=one * 10, debate_id=sub.record.id)
    assert granted == pytest.approx(one * 1.5 - sub.record.reserved_usd, abs=1e-6)
    async with db.transaction() as session:   # nothing left: nothing more
        assert await budget.extend(session, day=svc.clock().date(), cap_usd=100.0,
                                   amount_usd=1.0, debate_id=sub.record.id) == 0.0
    other = await svc.submit(DebateRequest(topic="Should we do it?", mode="simple"),
                             origin=_origin(B))
    async with db.transaction() as session:   # another workspace's top-up: the day's room
        assert await budget.extend(session, day=svc.clock().date(), cap_usd=100.0,
                                   amount_usd=one, debate_id=other.record.id) == (
            pytest.approx(one))


async def test_two_first_saves_at_once_both_take_effect(db: Database) -> None:
    await asyncio.gather(
        ws.save(db, "T0FRESH", {"daily_budget_usd": 3.0}, by="U0ONE", admin=True, now=utcnow()),
        ws.save(db, "T0FRESH", {"review_channel": "C0NEW"}, by="U0TWO", admin=True,
                now=utcnow()))
    found = await ws.overrides(db, "T0FRESH")
    assert (found.daily_budget_usd, found.review_channel) == (3.0, "C0NEW")
    async with db.transaction(readonly=True) as session:
        actors = sorted(e.actor for e in await audit.events(session, None)
                        if e.kind == "workspace_settings_changed")
    assert actors == ["U0ONE", "U0TWO"]
