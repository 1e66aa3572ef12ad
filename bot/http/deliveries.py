"""What finished debates owe Slack and have not received: `GET /api/deliveries`, the console's
Deliveries page (each obligation, its attempts and the last error, as the dispatcher recorded
them) and `POST /api/deliveries/{id}/retry` (due now: one given up is tried again from the start,
one waiting out its backoff at once)."""

from __future__ import annotations

from datetime import datetime

from aiohttp import web
from pydantic import BaseModel, Field

from bot.http import errors as err
from bot.http import session
from bot.http.auth import console_allowed
from bot.http.console import PAGE, locked_page
from bot.http.pages import html, render
from bot.http.routes import Reply, Route, json_reply, route
from bot.http.state import RUNTIME
from bot.service.delivery import delivery_problem
from storage import outbox

WHAT = {"thread_result": "the result, in the debate's thread",
        "review_request": "the review request, in the review channel"}


class DeliveryOut(BaseModel):
    id: int
    debate_id: str
    kind: str = Field(description="thread_result or review_request")
    what: str = Field(description="the same, in words")
    status: str = Field(description="pending (retried with backoff) or failed (given up)")
    attempts: int
    last_error: str = Field(description="why the last attempt failed (empty before one did)")
    next_attempt_at: datetime | None = Field(description="when it is tried next (pending)")
    created_at: datetime


class DeliveriesOut(BaseModel):
    pending: int
    failed: int
    problem: str | None = Field(description="why deliveries are late or failing, if they are")
    deliveries: list[DeliveryOut]


async def _deliveries(request: web.Request) -> DeliveriesOut:
    rt = request.app[RUNTIME]
    async with rt.db.transaction(readonly=True) as session_:
        backlog = await outbox.backlog(session_)
        owed = await outbox.undelivered(session_)
    return DeliveriesOut(
        pending=backlog.pending, failed=backlog.failed,
        problem=delivery_problem(backlog, now=rt.service.clock()),
        deliveries=[DeliveryOut(id=d.id, debate_id=d.debate_id, kind=d.kind,
                                what=WHAT.get(d.kind, d.kind), status=d.status,
                                attempts=d.attempts, last_error=d.last_error,
                                next_attempt_at=d.due_at if d.status == "pending" else None,
                                created_at=d.created_at) for d in owed])


async def list_deliveries(request: web.Request) -> web.Response:
    """Everything owed to Slack and not yet delivered, oldest first."""
    return json_reply(await _deliveries(request))


async def retry_delivery(request: web.Request) -> web.Response:
    """Try one again now (a given-up one from its first attempt)."""
    rt = request.app[RUNTIME]
    try:
        delivery_id = int(request.match_info["id"])
    except ValueError:
        return err.error(404, "no such delivery")
    async with rt.db.transaction() as session_:
        done = await outbox.retry_now(session_, delivery_id, now=rt.service.clock())
    if not done:
        return err.error(404, f"no delivery {delivery_id} waits to be sent (it was delivered, "
                              "is being sent now, or does not exist)")
    rt.notify_deliveries()
    return json_reply(await _deliveries(request))


async def deliveries_page(request: web.Request) -> web.Response:
    if not console_allowed(request):
        return html(locked_page())
    found = await _deliveries(request)
    return html(render("deliveries.html", found=found, viewer=session.current(request),
                       nav="deliveries"))


ROUTES: tuple[Route, ...] = (
    route("GET", "/api/deliveries", list_deliveries, summary="Undelivered Slack posts",
          replies={200: Reply(description="what is owed to Slack", schema=DeliveriesOut)}),
    route("POST", "/api/deliveries/{id}/retry", retry_delivery,
          summary="Send an undelivered Slack post now",
          replies={200: Reply(description="due now; what is owed", schema=DeliveriesOut),
                   404: Reply(description="nothing to retry", schema=err.ErrorOut)}),
    route("GET", "/deliveries", deliveries_page, summary="Undelivered Slack posts",
          tag="console", replies={200: PAGE}),
)
