"""The engine's domain types: what a debate is asked, what each step produced, how it ended.

Pydantic models so they serialise to JSON for storage, the API and the CLI without glue.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engine.options import DebateOptions
from engine.reading.figures import points_as_scored
from engine.reading.outcomes import ModeOutcome, legacy_outcome
from engine.settings import ThresholdSpec
from engine.untrusted.injection import Finding
from engine.vocabulary import (
    MAX_JUDGES,
    MAX_ROUNDS,
    Band,
    Mode,
    ResultStatus,
    Routing,
    Side,
    StepStatus,
    choices,
)

MODES: tuple[str, ...] = choices(Mode)


def utcnow() -> datetime:
    return datetime.now(UTC)


def canonical_json(value: Any) -> str:
    """Stable JSON: sorted keys, no spaces; the form hashes and audit links are computed over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class DebateRequest(BaseModel):
    """What someone asked for. Validated at the border; the engine trusts it."""

    model_config = ConfigDict(frozen=True)
    topic: str = Field(min_length=1)
    mode: Mode = Mode.CONSENSUS
    preset: str | None = None
    rounds: int | None = Field(default=None, ge=0, le=MAX_ROUNDS)
    judges: int | None = Field(default=None, ge=1, le=MAX_JUDGES)
    context: str = ""                      # e.g. the Slack thread being debated
    options: DebateOptions = Field(default_factory=DebateOptions)
    requested_by: str = "cli"
    no_cache: bool = False
    # the secret the debate's spotlight boundary is derived from
    # (engine.untrusted.material.spotlight_for); set once at submit, kept by replays, so every
    # prompt of the debate is rebuilt identically
    spotlight_nonce: str = Field(default="", pattern=r"^(?:[0-9a-f]{32})?$")

    @classmethod
    def stored(cls, data: dict[str, Any]) -> DebateRequest:
        """A request as stored, also one from before options were typed and bounded: reading
        history never fails on it (see DebateOptions.stored)."""
        try:
            return cls.model_validate(data)
        except ValidationError:
            options = DebateOptions.stored(data.get("options"))
            request = cls.model_validate({**data, "options": {}})
            return request.model_copy(update={"options": options})


class Usage(BaseModel):
    """Tokens as the provider reports them. `cached_tokens` are part of `prompt_tokens` (read
    from the provider's prompt cache, billed at a discount); `reasoning_tokens` are part of
    `completion_tokens` (a reasoning model's hidden thinking, billed as output)."""

    model_config = ConfigDict(frozen=True)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    #: what the provider said these tokens cost (a gateway's `usage.cost`), when it said
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        costs = [c for c in (self.cost_usd, other.cost_usd) if c is not None]
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost_usd=sum(costs) if costs else None,
        )


class StepRecord(BaseModel):
    """One LLM call's outcome, as checkpointed: reading it back replaces calling again."""

    model_config = ConfigDict(frozen=True)
    key: str
    role: str
    phase: str
    model: str
    status: StepStatus = StepStatus.OK
    output: dict[str, Any] | None = None
    prompt_hash: str = ""
    usage: Usage = Usage()
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1                 # requests sent, refused ones (a 429) too
    calls: int = 1                    # replies the provider billed, invalid or filtered too
    error: str = ""
    rehearsal: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class Evidence(BaseModel):
    """Something a human added while the debate ran (a thread reply); the next phases see it."""

    model_config = ConfigDict(frozen=True)
    author: str
    text: str
    at: datetime = Field(default_factory=utcnow)
    source_id: str = ""


class EventKind(StrEnum):
    DEBATE_STARTED = "debate_started"
    PHASE_STARTED = "phase_started"
    PHASE_FINISHED = "phase_finished"
    STEP_FINISHED = "step_finished"
    STEP_REUSED = "step_reused"
    STEP_DEGRADED = "step_degraded"
    STEP_FILTERED = "step_filtered"
    STEP_REFUSED = "step_refused"
    STEP_RETRY = "step_retry"
    EVIDENCE_ADDED = "evidence_added"
    JUDGE_SCORED = "judge_scored"
    CONSENSUS_COMPUTED = "consensus_computed"
    ROUND_FINISHED = "round_finished"
    DEBATE_FINISHED = "debate_finished"
    BUDGET_ALERT = "budget_alert"
    BUDGET_EXHAUSTED = "budget_exhausted"


class Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: EventKind
    debate_id: str
    data: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=utcnow)
    rehearsal: bool = False


class PlannedCall(BaseModel):
    model_config = ConfigDict(frozen=True)
    key: str
    role: str
    phase: str
    depth: int                        # 1-based dependent round this call sits in
    prompt_tokens: int                # estimate: the request's own text and what came before
    completion_tokens: int            # estimate
    model: str | None = None          # the model the protocol names (a judge's, a panelist's)


class Plan(BaseModel):
    """The calls a protocol will make and its critical path: what estimates are made from."""

    model_config = ConfigDict(frozen=True)
    mode: Mode
    calls: tuple[PlannedCall, ...]

    @property
    def depth(self) -> int:
        return max((c.depth for c in self.calls), default=0)

    def calls_per_role(self, skip: frozenset[str] = frozenset()) -> dict[str, int]:
        """Calls by role family ("pro", "judge", "panelist"), but the `skip` keys (a replay's
        reused steps, which make no call)."""
        out: dict[str, int] = {}
        for call in self.calls:
            if call.key in skip:
                continue
            family = call.role.split("/", 1)[0]
            out[family] = out.get(family, 0) + 1
        return out


class CostBreakdown(BaseModel):
    """What a debate's calls cost and used, in total and per model (`by_model[model]` has the
    same figures). Cached tokens are part of prompt tokens, reasoning part of completion."""

    usd: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    calls: int = 0
    reused_calls: int = 0
    by_model: dict[str, dict[str, float]] = Field(default_factory=dict)


class Estimate(BaseModel):
    """What a debate will cost: only the calls it will make. `reused` steps are read instead of
    called (a replay's unchanged steps; all of them when `cached_from`, a finished debate's
    result, answers the request), `depth` the dependent rounds of the calls it makes."""

    model_config = ConfigDict(frozen=True)
    mode: Mode
    calls: int
    depth: int
    prompt_tokens: int                 # typical
    completion_tokens: int             # typical
    usd: float                         # typical replies
    calls_per_role: dict[str, int]
    rehearsal: bool = False
    completion_tokens_high: int = 0
    usd_high: float = 0.0              # verbose replies (p90): what is held at submission
    usd_low: float = 0.0               # short replies (p10): the range's low end
    ceiling_usd: float = 0.0           # the most the debate may hold as it learns its size
    ceiling_configured: bool = False   # DIALECTIC_MAX_DEBATE_USD set (else a multiple of high)
    #: names no endpoint has answered for and no price catalogue knows, priced pessimistically
    #: as `stand_in` (engine/money/answering.py)
    stand_ins: list[str] = Field(default_factory=list)
    stand_in: str = ""
    #: whether the service would admit the debate now (today's budget, the per-debate ceiling),
    #: and the sentence saying so; None and "" when nobody asked the service
    admitted: bool | None = None
    admission: str = ""
    reused: int = 0
    cached_from: str | None = None


class ConsensusSummary(BaseModel):
    alpha: float | None = None
    alpha_interval: tuple[float, float] | None = None
    kappa: float | None = None
    band: Band = Band.REVIEW
    routing: Routing = Routing.HUMAN_REVIEW
    irreconcilable: bool = False
    judges: list[str] = Field(default_factory=list)
    items: list[str] = Field(default_factory=list)
    ratings: dict[str, list[float | None]] = Field(  # judge -> row
        default_factory=dict, description="each judge's scores per item, as it gave them (1-10)")
    # the same rows on the panel's scale (what alpha was computed over); {}: stored before
    calibrated: dict[str, list[float | None]] = Field(
        default_factory=dict, description="the same rows calibrated for each judge's habits: "
        "what alpha is computed over, not ratings (calibration can stretch past 1-10)")
    calls: dict[str, list[Side | None]] = Field(default_factory=dict)     # judge -> winner per dim
    weighted_scores: dict[str, float | None] = Field(
        default_factory=dict, description="per item, the judges' calibrated scores weighted by "
        "their vote weights (not ratings: they may fall outside 1-10)")
    weights: dict[str, float] = Field(default_factory=dict)   # the vote weights used
    # What the judge audit reads (engine/oversight/panel_records.py); {} / None: stored before it
    # was kept.
    winners: dict[str, Side | None] = Field(default_factory=dict)  # judge -> the side it named
    shown_first: dict[str, Side] = Field(default_factory=dict)  # judge -> its "Position A"
    models: dict[str, str] = Field(default_factory=dict)   # judge -> the model that answered
    lengths: dict[str, int] = Field(default_factory=dict)  # side -> characters it argued
    thresholds: ThresholdSpec | None = None                # the alpha cut-offs routed by
    # {}: stored before it was kept
    means: dict[Side, float] = Field(
        default_factory=dict, description="each side's rubric mean as the judges scored (1-10), "
        "weighted by their vote weights: what the headline states")
    # Mixed-family panels (engine/protocols/self_vote.py); {} / []: stored before they were kept
    families: dict[str, str] = Field(default_factory=dict,
                                     description="judge -> the family of the model that answered")
    side_models: dict[str, list[str]] = Field(
        default_factory=dict, description="side -> the models that argued it")
    side_families: dict[str, list[str]] = Field(default_factory=dict)
    excluded: dict[str, list[Side]] = Field(
        default_factory=dict, description="judge -> the sides it did not score (self-vote "
        "exclusion: argued by its own family while another family sat on the panel)")
    exclusion_notes: list[str] = Field(
        default_factory=list, description="which judges did not score what, and why; or that "
        "a side was scored by its own family for want of another")


class DivergencePoint(BaseModel):
    """One item's figures (engine/reading/figures.py): `ratings`, `mean`, `spread` as the judges
    scored it on the 1–10 scale; `calibrated*` the same calibrated for each judge's habits, kept
    inside the scale. A point stored before the split has only the first three, and they hold the
    calibrated figures (`calibrated_mean` is None): surfaces name them calibrated."""

    item: str
    label: str = ""
    mean: float = Field(description="the mean of `ratings` (1-10)")
    spread: float = Field(description="the widest gap between `ratings`")
    ratings: dict[str, float] = Field(default_factory=dict,
                                      description="each judge's score as it gave it (1-10)")
    calibrated: dict[str, float] = Field(
        default_factory=dict, description="each judge's score calibrated for its habits, kept "
        "inside 1-10")
    calibrated_mean: float | None = None
    calibrated_spread: float | None = None


class DivergenceSummary(BaseModel):
    agreements: list[DivergencePoint] = Field(default_factory=list)
    disagreements: list[DivergencePoint] = Field(default_factory=list)


class Discussion(BaseModel):
    """Whether a preset that flags it (`decision`) needs human discussion: alpha below the
    escalate cut-off it was routed by; why, in figures; the core divergence points
    (engine/reading/discussion.py)."""

    needed: bool
    reason: str                        # "alpha 0.31 < 0.50"
    alpha: float | None = None
    cutoff: float
    points: list[DivergencePoint] = Field(default_factory=list)


class TraceRow(BaseModel):
    id: str
    side: Side
    claim: str
    evidence: str = ""
    challenged_by: Side | None = None
    challenge: str = ""
    rebutted: bool | None = None
    response: str = ""
    standing: str = "unjudged"
    strength: float | None = None


class Brief(BaseModel):
    """A one-page pre-meeting brief (preset `brief`; engine/reading/discussion.py): the points to
    discuss (the widest splits, and whether the panel split on the winner), the agreements,
    and the arguments map (each side's strongest claims with their standing)."""

    points: list[DivergencePoint] = Field(default_factory=list)
    split_on_winner: bool = False
    agreements: list[DivergencePoint] = Field(default_factory=list)
    arguments: list[TraceRow] = Field(default_factory=list)


class PhaseSummary(BaseModel):
    name: str
    steps: list[str] = Field(default_factory=list)
    highlights: dict[str, str] = Field(default_factory=dict)  # side/role -> strongest point
    degraded: list[str] = Field(default_factory=list)
    filtered: list[str] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    elapsed_seconds: float = 0.0


class DebateResult(BaseModel):
    """Everything a debate ended with. `complete` is False whenever anything is missing."""

    id: str
    status: ResultStatus
    mode: Mode
    topic: str
    preset: str | None = None
    verdict: str = ""
    winner: Side | None = None          # None: modes without sides
    rationale: str = ""
    consensus: ConsensusSummary | None = None
    divergence: DivergenceSummary = DivergenceSummary()
    trace_table: list[TraceRow] = Field(default_factory=list)
    phases: list[PhaseSummary] = Field(default_factory=list)
    degraded: list[dict[str, str]] = Field(default_factory=list)
    filtered: list[str] = Field(default_factory=list)
    # steps the model declined, each with its own words: {"key", "role", "phase", "refusal"}
    refused: list[dict[str, str]] = Field(default_factory=list)
    outcome: ModeOutcome | None = None    # what the mode ended with; None: it ended with nothing
    cost: CostBreakdown = CostBreakdown()
    elapsed_seconds: float = 0.0
    rehearsal: bool = False
    complete: bool = True
    routing: Routing = Routing.NONE
    missing: list[str] = Field(default_factory=list)       # what is missing and why
    error: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    versions: dict[str, str] = Field(default_factory=dict)
    # text addressed to the AI found in its untrusted material, its evidence or its models'
    # outputs (engine.untrusted.injection); any finding flags the debate and sends it to a human
    injection: list[Finding] = Field(default_factory=list)
    # what the preset promises beyond the panel's figures: "needs human discussion" (decision)
    # and the one-page brief (brief); None for presets without them and results stored before
    discussion: Discussion | None = None
    brief: Brief | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.injection)

    @model_validator(mode="before")
    @classmethod
    def _untagged_outcome(cls, data: Any) -> Any:
        """Results stored before outcomes were typed: tag their outcome with the result's mode."""
        if isinstance(data, dict) and isinstance(data.get("outcome"), dict):
            data = {**data, "outcome": legacy_outcome(data["outcome"], str(data.get("mode")))}
        return data

    @model_validator(mode="before")
    @classmethod
    def _points_as_scored(cls, data: Any) -> Any:
        """Results stored when divergence points held calibrated figures only: rebuilt with the
        judges' own ratings beside the calibrated ones (engine/reading/figures.py)."""
        return points_as_scored(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _outcome_of_its_mode(self) -> DebateResult:
        if self.outcome is not None and self.outcome.mode != self.mode:
            raise ValueError(f"a {self.mode} result cannot hold a {self.outcome.mode} outcome")
        return self

    def outcome_details(self) -> dict[str, Any]:
        """The mode's outcome as JSON values by name ({} without one): what surfaces list."""
        return self.outcome.details() if self.outcome is not None else {}
