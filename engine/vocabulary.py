"""The words of the domain, defined once: modes, sides, step and result statuses, agreement bands,
routings, and the request limits. Every other module (and every surface) derives from these, so a
new mode or band is one line here, not a search through the code base.

StrEnums compare equal to their string values, serialise as those strings in JSON and the
database, and list themselves for help texts and validation messages (`choices(Mode)`).
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """Debate patterns (protocols); see engine/protocols/."""

    SIMPLE = "simple"
    STRUCTURED = "structured"
    CONSENSUS = "consensus"
    PANEL = "panel"
    CRITIQUE = "critique"
    REDTEAM = "redteam"


class Side(StrEnum):
    """The two sides of a pro/con debate, and the verdict that neither won."""

    PRO = "pro"
    CON = "con"
    TIE = "tie"


class StepStatus(StrEnum):
    """How one LLM call ended: a usable output, withheld by the content filter, declined by the
    model in its own words (a refusal), or none."""

    OK = "ok"
    FILTERED = "filtered"
    REFUSED = "refused"
    DEGRADED = "degraded"


class ResultStatus(StrEnum):
    """How a debate run ended (the lifecycle around it lives in storage.records.DebateStatus)."""

    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"


class Band(StrEnum):
    """How far the judges agree (Krippendorff's alpha against the preset's thresholds)."""

    HIGH = "high"
    TENTATIVE = "tentative"
    REVIEW = "review"
    CONTENTIOUS = "contentious"


class Routing(StrEnum):
    """Where a result goes: published, published as tentative, to a reviewer, escalated; or
    nowhere (modes without a judge panel)."""

    AUTO_APPROVE = "auto_approve"
    TENTATIVE = "tentative"
    HUMAN_REVIEW = "human_review"
    ESCALATE = "escalate"
    NONE = "none"


#: Routings that put a result in front of a human before it counts.
ROUTED_TO_HUMANS = frozenset({Routing.HUMAN_REVIEW, Routing.ESCALATE})
#: The routing each band implies when nothing else (a split panel, a gap) makes it stricter.
ROUTING_FOR_BAND: dict[Band, Routing] = {
    Band.HIGH: Routing.AUTO_APPROVE,
    Band.TENTATIVE: Routing.TENTATIVE,
    Band.REVIEW: Routing.HUMAN_REVIEW,
    Band.CONTENTIOUS: Routing.ESCALATE,
}

# --- request limits (the REST body, the Slack parser and the CLI derive theirs from these) ---
MAX_ROUNDS = 5            # rebuttal / reflection / critique rounds of one debate
MAX_JUDGES = 8            # judges on one panel
#: the model family of a name no rule knows (engine/provider/families.py)
UNKNOWN_FAMILY = "unknown"
MAX_REPLAY_ROUNDS = 3     # rounds a replay may add
MAX_TOPIC_CHARS = 4000    # default; `max_topic_chars` in the settings may lower it
MAX_CONTEXT_CHARS = 20_000    # background a caller hands the debaters (REST, schedules)
MAX_POLICY_CHARS = 20_000     # a request's policy text (options.policy)
MAX_OPTION_TEXT_CHARS = 4000  # any other text option (a ground truth, a panelist's context)
MAX_MODEL_NAME_CHARS = 100    # a model named in options
MAX_ROLE_MODELS = 32          # entries of options.role_models
MAX_WINDOW_DAYS = 3650        # days an audit, a routing report or a suggestion reads back
MAX_LISTED = 500              # debates one listing returns
MAX_LINK_DAYS = 30            # a signed reviewer link or session lives at most this long
MAX_WORKERS = 1024            # debates one worker process runs at once (the bench runs 1,000)


def choices(enum: type[StrEnum]) -> tuple[str, ...]:
    """The values of a vocabulary, in declaration order (for help texts and messages)."""
    return tuple(member.value for member in enum)
