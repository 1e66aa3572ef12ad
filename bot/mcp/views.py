"""What the MCP tools answer, as typed models (their JSON Schemas are the tools' output schemas),
and the functions that fill them from the service's records. Every figure and every word comes
from the same service functions the API, console, CLI and Slack use (bot/service/results.py,
progress.py, engine/money/cost.py); nothing is derived again here."""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.service.progress import Progress
from bot.service.results import (
    FLAG_MEANING,
    flag_headline,
    marks,
    point_figures,
    review_reason,
    routed_by,
    settled,
    status_words,
    to_reviewers,
)
from engine.domain import DebateResult, DivergencePoint, Estimate
from engine.money.cost import estimate_range
from engine.reading.headline import alpha_text
from engine.settings import EngineSettings
from storage.records import DebateRecord, DebateStatus

#: the URIs of a debate's resources (bot/mcp/server.py serves them)
RESULT_URI = "dialectic://debates/{debate_id}"
TRANSCRIPT_URI = "dialectic://debates/{debate_id}/transcript"
POINTS_SHOWN = 5   # divergence points of each kind, as the summaries show them


class EstimateOut(BaseModel):
    mode: str = Field(description="the mode the estimate is for (the preset's when not given)")
    cost_range: str = Field(description="short to verbose replies, as every surface shows it")
    usd_low: float
    usd: float = Field(description="typical replies")
    usd_high: float = Field(description="verbose replies: what submitting holds of the budget")
    ceiling_usd: float = Field(description="the most the debate may hold as it learns its size")
    calls: int = Field(description="model calls planned")
    depth: int = Field(description="dependent rounds of calls (the critical path)")
    rehearsal: bool = Field(description="no model is configured: placeholder arguments")
    reused: int = Field(default=0, description="steps read instead of called: free")
    cached_from: str | None = Field(default=None, description="the finished debate whose "
                                    "result answers it (no calls, $0), if any")


class EstimateReply(EstimateOut):
    admitted: bool = Field(description="today's budget and the per-debate ceiling admit it now")
    refusal: str | None = Field(description="why not, as submitting would say it; a preset "
                                            "that allows it may run a cheaper mode instead")
    remaining_today_usd: float


class DebateLinks(BaseModel):
    result: str = Field(description="the result JSON (an MCP resource)")
    transcript: str = Field(description="the transcript as text (an MCP resource)")
    console: str = Field(description="the console page, when `dialectic serve` runs")


class StartedOut(BaseModel):
    id: str
    status: DebateStatus
    mode: str
    estimate: EstimateOut
    cached: bool = Field(description="an earlier debate's result, reused")
    downgraded_from: str | None = Field(description="the mode asked for, when the budget ran "
                                                    "a cheaper one")
    flagged: bool = Field(description="its text addresses the AI: seen only as quoted "
                                      "material, and a person reviews the result")
    links: DebateLinks


class PhaseOut(BaseModel):
    name: str
    state: str = Field(description="pending, running, done, partial or failed")
    detail: str = Field(description="what is missing, when anything is")


class PointOut(BaseModel):
    item: str
    label: str
    mean: float = Field(description="on the judges' 1-10 scale")
    spread: float


class ResultOut(BaseModel):
    headline: str = Field(description="the verdict as every surface shows it")
    winner: str | None
    rationale: str
    alpha: str | None = Field(description="Krippendorff's alpha as printed beside its band")
    band: str | None
    routing: str
    review_reason: str | None = Field(description="why it waits for a person, when it does")
    agreements: list[PointOut]
    disagreements: list[PointOut]
    missing: list[str] = Field(description="parts missing and why (a partial result)")
    cost_usd: float


class DebateOut(BaseModel):
    id: str
    topic: str
    mode: str
    preset: str
    status: DebateStatus
    status_text: str = Field(description="the status as lists say it")
    settled: bool = Field(description="finished, or waiting for a person: it moves no more "
                                      "on its own")
    marks: list[str] = Field(description="what to know before trusting it")
    flag: str | None = Field(description="when its text addresses the AI, what that means")
    phases: list[PhaseOut]
    phases_done: int = Field(description="phases finished, of those listed")
    calls: str
    estimate_usd: float
    cost_usd: float
    result: ResultOut | None
    error: str
    links: DebateLinks


class DebateLine(BaseModel):
    id: str
    topic: str
    mode: str
    status: DebateStatus
    status_text: str
    cost_usd: float
    headline: str | None
    marks: list[str]


class DebateList(BaseModel):
    debates: list[DebateLine]


def estimate_out(estimate: Estimate) -> EstimateOut:
    return EstimateOut(mode=str(estimate.mode), cost_range=estimate_range(estimate),
                       usd_low=estimate.usd_low or estimate.usd, usd=estimate.usd,
                       usd_high=estimate.usd_high, ceiling_usd=estimate.ceiling_usd,
                       calls=estimate.calls, depth=estimate.depth, rehearsal=estimate.rehearsal,
                       reused=estimate.reused, cached_from=estimate.cached_from)


def estimate_reply(estimate: Estimate, *, refusal: str | None,
                   remaining_usd: float) -> EstimateReply:
    return EstimateReply(**estimate_out(estimate).model_dump(), admitted=refusal is None,
                         refusal=refusal, remaining_today_usd=remaining_usd)


def links_for(debate_id: str, console: str) -> DebateLinks:
    return DebateLinks(result=RESULT_URI.format(debate_id=debate_id),
                       transcript=TRANSCRIPT_URI.format(debate_id=debate_id), console=console)


def debate_out(engine: EngineSettings, record: DebateRecord, progress: Progress,
               links: DebateLinks) -> DebateOut:
    """A debate as `get_debate` and `wait_for_debate` answer it."""
    rehearsal = engine.is_rehearsal
    return DebateOut(
        id=record.id, topic=record.request.topic, mode=record.mode, preset=record.preset,
        status=record.status, status_text=status_words(record.status, record.result),
        settled=settled(record), marks=[m.text for m in marks(record, rehearsal=rehearsal)],
        flag=f"{flag_headline(record.preset)} {FLAG_MEANING}" if record.flagged else None,
        phases=[PhaseOut(name=p.name, state=p.state.value, detail=p.detail)
                for p in progress.phases()],
        phases_done=progress.finished_phases, calls=progress.calls_text(),
        estimate_usd=record.estimate_usd, cost_usd=record.cost_usd,
        result=result_out(engine, record) if record.result is not None else None,
        error=record.error, links=links)


def result_out(engine: EngineSettings, record: DebateRecord) -> ResultOut:
    result = record.result
    assert result is not None
    thresholds = routed_by(engine, result)
    c = result.consensus
    waits = to_reviewers(result, record.origin) or record.flagged
    return ResultOut(
        headline=result.verdict, winner=str(result.winner) if result.winner else None,
        rationale=result.rationale,
        alpha=alpha_text(c.alpha, thresholds) if c is not None else None,
        band=str(c.band) if c is not None else None, routing=str(result.routing),
        review_reason=review_reason(result, thresholds) if waits else None,
        agreements=_points(result.divergence.agreements),
        disagreements=_points(result.divergence.disagreements),
        missing=list(result.missing), cost_usd=result.cost.usd)


def _points(points: list[DivergencePoint]) -> list[PointOut]:
    out = []
    for point in points[:POINTS_SHOWN]:
        figures = point_figures(point)
        out.append(PointOut(item=point.item, label=point.label or point.item,
                            mean=round(figures.mean, 2), spread=round(figures.spread, 2)))
    return out


def debate_line(record: DebateRecord, *, rehearsal: bool) -> DebateLine:
    result: DebateResult | None = record.result
    return DebateLine(id=record.id, topic=record.request.topic, mode=record.mode,
                      status=record.status, status_text=status_words(record.status, result),
                      cost_usd=record.cost_usd, headline=result.verdict if result else None,
                      marks=[m.text for m in marks(record, rehearsal=rehearsal)])


__all__ = [
    "RESULT_URI",
    "TRANSCRIPT_URI",
    "DebateLine",
    "DebateLinks",
    "DebateList",
    "DebateOut",
    "EstimateOut",
    "EstimateReply",
    "PhaseOut",
    "PointOut",
    "ResultOut",
    "StartedOut",
    "debate_line",
    "debate_out",
    "estimate_out",
    "estimate_reply",
    "links_for",
    "result_out",
]
