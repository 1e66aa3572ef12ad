"""The budget alert: once a day, when what is held and spent passes the alert fraction of the
cap, an audit event, a warning in the log and an event to every sink (Slack's ops channel)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date

from bot.service.settings import ServiceSettings
from engine.domain import DebateRequest, Event, EventKind
from engine.ports import EventSink
from storage import audit, budget
from storage.db import Database
from storage.records import DebateRecord, DebateStatus

log = logging.getLogger("dialectic.service")


async def alert_if_due(db: Database, settings: ServiceSettings, day: date,
                       sink_factories: list[Callable[[DebateRecord], EventSink | None]]) -> None:
    async with db.transaction() as session:
        state = await budget.state(session, day, cap_usd=settings.daily_budget_usd,
                                   alert_fraction=settings.budget_alert_fraction)
        if not state.alert_due:
            return
        await budget.mark_alerted(session, day)
        await audit.append(session, debate_id=None, kind=EventKind.BUDGET_ALERT.value,
                           actor="budget", data={"day": day.isoformat(),
                                                 "spent_usd": state.spent_usd,
                                                 "reserved_usd": state.reserved_usd,
                                                 "cap_usd": state.cap_usd})
    log.warning("budget alert: %.0f%% of today's $%.2f cap used or reserved",
                100 * state.fraction, state.cap_usd)
    alert = Event(kind=EventKind.BUDGET_ALERT, debate_id="", data={
        "day": day.isoformat(), "fraction": state.fraction, "cap_usd": state.cap_usd})
    for factory in sink_factories:
        sink = factory(DebateRecord(id="", request=DebateRequest(topic="budget"), mode="",
                                    preset="", status=DebateStatus.CREATED))
        if sink is not None:
            await sink.emit(alert)
