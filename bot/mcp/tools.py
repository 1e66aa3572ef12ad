"""The MCP tools: estimate, start, read, list and wait for debates, each one call into the service
(bot/service) that every other door makes, answered with bot/mcp/views.py's models.

A debate an assistant starts enters at `DebateService.submit` with `Origin(surface="mcp")`, so
the same admission, budget, per-debate ceiling, untrusted-text screening and audit apply; the audit
names the assistant (`mcp:<client name>`, from the client's `initialize`). Errors are tool errors
of one line: the sentence the API would put in its error body (402's for a refused budget)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from typing import Annotated, Any, TypeAlias

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, ValidationError

from bot.mcp.views import (
    DebateList,
    DebateOut,
    EstimateReply,
    StartedOut,
    debate_line,
    debate_out,
    estimate_out,
    estimate_reply,
    links_for,
)
from bot.service.admission import refusal
from bot.service.runtime import Runtime
from bot.service.timeline import load_timeline
from engine.domain import DebateRequest
from engine.errors import DialecticError, InvalidRequest, validation_message
from engine.vocabulary import MAX_CONTEXT_CHARS, MAX_LISTED, Mode
from storage.lifecycle import DebateStatus
from storage.records import DebateRecord, Origin

Ctx: TypeAlias = Context  # the SDK injects the context by this bare class
POLL_SECONDS = 0.5          # how often wait_for_debate reads the debate
MAX_WAIT_SECONDS = 3600
MAX_CLIENT_NAME = 100
_UNPRINTABLE = re.compile(r"[^\w .@/+:-]")

Topic = Annotated[str, Field(min_length=1, description="the proposition or question to debate")]
ModeIn = Annotated[Mode | None, Field(description="the debate pattern; the preset's when "
                                                  "omitted (usually consensus)")]
PresetIn = Annotated[str | None, Field(description="a named preset, e.g. decision, market, "
                                                   "compliance; the default when omitted")]
ContextIn = Annotated[str, Field(description=f"background the debaters see (at most "
                                             f"{MAX_CONTEXT_CHARS:,} characters)")]
DebateId = Annotated[str, Field(min_length=1, max_length=64, description="the debate's id")]


@contextlib.contextmanager
def one_line() -> Iterator[None]:
    """The border: what the service refuses becomes a tool error saying so in one line."""
    try:
        yield
    except ValidationError as exc:
        raise ToolError(validation_message(exc)) from exc
    except DialecticError as exc:   # budget, bad input, not found, database: said plainly
        raise ToolError(str(exc)) from exc


def client_actor(ctx: Ctx | None) -> str:
    """`mcp:<client name>` for the audit, from the client's `initialize` (`mcp` without it);
    the name is the client's own word, so it is kept short and printable."""
    name = ""
    if ctx is not None:
        params = ctx.session.client_params
        if params is not None and params.client_info is not None:
            name = _UNPRINTABLE.sub("", params.client_info.name)[:MAX_CLIENT_NAME].strip()
    return f"mcp:{name}" if name else "mcp"


class DebateTools:
    """The tools, bound to one process's runtime."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def _request(self, topic: str, mode: Mode | None, preset: str | None, context: str,
                 requested_by: str) -> DebateRequest:
        if len(context) > MAX_CONTEXT_CHARS:
            raise InvalidRequest(f"the context is {len(context):,} characters; the limit is "
                                 f"{MAX_CONTEXT_CHARS:,}")
        fields: dict[str, Any] = {"topic": topic, "context": context,
                                  "requested_by": requested_by}
        if mode is not None:
            fields["mode"] = mode
        if preset:
            fields["preset"] = preset
        return DebateRequest.model_validate(fields)

    async def estimate_debate(self, topic: Topic, mode: ModeIn = None, preset: PresetIn = None,
                              context: ContextIn = "") -> EstimateReply:
        """What a debate would cost (short to verbose replies) and whether today's budget admits
        it now. Nothing is run or reserved."""
        with one_line():
            estimate = await self.rt.service.estimate(
                self._request(topic, mode, preset, context, "mcp"))
            budget = await self.rt.service.budget_today()
            remaining, cap = float(budget["remaining_usd"]), float(budget["cap_usd"])
            return estimate_reply(estimate, remaining_usd=remaining, refusal=refusal(
                estimate, remaining_usd=remaining, cap_usd=cap))

    async def start_debate(self, ctx: Ctx, topic: Topic, mode: ModeIn = None,
                           preset: PresetIn = None, context: ContextIn = "") -> StartedOut:
        """Start a debate: estimated, reserved against today's budget and queued, like a debate
        started from Slack or the API. Returns its id at once; follow it with wait_for_debate
        or get_debate. A debate whose text addresses the AI is flagged for a person."""
        with one_line():
            request = self._request(topic, mode, preset, context, client_actor(ctx))
            sub = await self.rt.service.submit(request, origin=Origin(surface="mcp"))
        self.rt.notify_workers()
        record = sub.record
        return StartedOut(id=record.id, status=record.status, mode=record.mode,
                          estimate=estimate_out(sub.estimate), cached=sub.cached,
                          downgraded_from=sub.downgraded_from, flagged=record.flagged,
                          links=links_for(record.id, self.rt.url(record.id)))

    async def get_debate(self, debate_id: DebateId) -> DebateOut:
        """A debate's status, phases and, once finished, its result: the headline, alpha and
        its band, where the judges agree and disagree, and what is missing."""
        with one_line():
            return await self.debate(await self.rt.service.get(debate_id))

    async def list_debates(
            self, status: Annotated[DebateStatus | None, Field(
                description="only debates in this state")] = None,
            limit: Annotated[int, Field(ge=1, le=MAX_LISTED)] = 20) -> DebateList:
        """Recent debates, newest first, with their status and headline."""
        with one_line():
            records = await self.rt.service.recent(
                status=status.value if status else None, limit=limit)
        rehearsal = self.rt.is_rehearsal
        return DebateList(debates=[debate_line(r, rehearsal=rehearsal) for r in records])

    async def wait_for_debate(
            self, ctx: Ctx, debate_id: DebateId,
            timeout_seconds: Annotated[float, Field(gt=0, le=MAX_WAIT_SECONDS, description=(
                "give up waiting after this long (the debate goes on)"))] = 300.0,
    ) -> DebateOut:
        """Wait until the debate is settled (finished, or waiting for a person) or the timeout
        passes, reporting progress (phases finished of planned) while it runs; returns the
        debate as get_debate does (`settled` false on a timeout). Cancelling the wait cancels
        nothing: the debate runs on."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_seconds
        said: tuple[int, int, str] | None = None
        while True:
            with one_line():
                out = await self.debate(await self.rt.service.get(debate_id))
            news = (out.phases_done, len(out.phases), out.status_text)
            if news != said:
                said = news
                await ctx.report_progress(out.phases_done, len(out.phases) or None,
                                          f"{out.status_text}: {out.calls}")
            if out.settled or loop.time() >= deadline:
                return out
            await asyncio.sleep(min(POLL_SECONDS, max(deadline - loop.time(), 0.0)))

    async def debate(self, record: DebateRecord) -> DebateOut:
        timeline = await load_timeline(self.rt.engine, self.rt.db, record)
        return debate_out(self.rt.engine, record, timeline.progress,
                          links_for(record.id, self.rt.url(record.id)))


__all__ = ["DebateTools", "client_actor", "one_line"]
