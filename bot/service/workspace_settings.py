"""Per-workspace settings: what a workspace's admins set over the operator's defaults, and the
rule of who may set them, the same for every surface (App Home, the console).

A Slack workspace may have its own daily budget (within the operator's: a debate of that
workspace must fit both, storage/budget.py under the day's lock), its own reviewers and review
channel (its reviews go there, and only its reviewers decide them). Anything it did not set is
the operator's (DIALECTIC_DAILY_BUDGET_USD, DIALECTIC_REVIEWERS, DIALECTIC_REVIEW_CHANNEL).
Who may change them: the workspace's admins and owners (Slack's `users.info` is_admin,
is_owner, is_primary_owner), and the operator. Every change is audited with before and after.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from bot.service.settings import parse_reviewers
from engine.errors import DialecticError, InvalidRequest, validation_message
from engine.money.cost import usd
from engine.settings import ThresholdSpec
from storage import audit
from storage import workspace_settings as store
from storage.db import Database
from storage.workspace_settings import Overrides

__all__ = ["Defaults", "Effective", "FieldError", "NotAdmin", "Overrides", "changes_from_form",
           "effective", "is_admin", "overrides", "refused", "review_channel_for", "save"]

REFUSED = "workspace_settings_refused"
BUDGET, REVIEWERS, CHANNEL = "daily_budget_usd", "reviewers", "review_channel"
THRESHOLDS = "thresholds"
CUTOFFS = ("high", "tentative", "escalate")
_CHANNEL = re.compile(r"[CG][A-Z0-9]{2,}")
_CHANNEL_MENTION = re.compile(r"<#([CG][A-Z0-9]+)(?:\|[^>]*)?>")


class FieldError(InvalidRequest):
    """A settings field's value is refused; `field` names it (forms show the line beside it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotAdmin(DialecticError):
    """The person is not an admin or owner of the workspace: they may read, not change."""


@dataclass(frozen=True, slots=True)
class Defaults:
    """The operator's values, which apply wherever a workspace set none."""

    daily_budget_usd: float
    reviewers: tuple[str, ...] = ()
    review_channel: str | None = None


@dataclass(frozen=True, slots=True)
class Effective:
    """The values in force for a workspace, and which of them are its own."""

    team_id: str
    daily_budget_usd: float
    reviewers: tuple[str, ...]
    review_channel: str | None
    own: frozenset[str]          # the fields the workspace set itself
    operator_cap_usd: float      # the cap over every workspace, which its own cannot pass
    thresholds: dict[str, dict[str, float]]   # its own cut-offs per preset (others: in force)

    def thresholds_text(self) -> str:
        """The workspace's cut-offs as the form takes them: `decision high=0.9; market ...`."""
        return "; ".join(f"{name} " + " ".join(f"{k}={v:g}" for k, v in cutoffs.items())
                         for name, cutoffs in sorted(self.thresholds.items()))


def is_admin(user: Mapping[str, Any], team_id: str) -> bool:
    """Whether a Slack user (`users.info`'s `user`) administers workspace `team_id`: an admin
    or owner of it, not of another workspace (a Slack Connect guest's own is not this one)."""
    return user.get("team_id") == team_id and any(
        bool(user.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner"))


async def overrides(db: Database, team_id: str | None) -> Overrides:
    async with db.transaction(readonly=True) as session:
        return await store.get(session, team_id)


def resolve(own: Overrides, defaults: Defaults) -> Effective:
    set_here = frozenset(k for k, v in own.values().items() if v is not None)
    return Effective(
        team_id=own.team_id,
        daily_budget_usd=(defaults.daily_budget_usd if own.daily_budget_usd is None
                          else own.daily_budget_usd),
        reviewers=defaults.reviewers if own.reviewers is None else own.reviewers,
        review_channel=own.review_channel or defaults.review_channel,
        own=set_here, operator_cap_usd=defaults.daily_budget_usd,
        thresholds=dict(own.thresholds or {}))


async def effective(db: Database, team_id: str, defaults: Defaults) -> Effective:
    return resolve(await overrides(db, team_id), defaults)


async def review_channel_for(db: Database, team_id: str | None, default: str | None
                             ) -> str | None:
    """Where the review requests of workspace `team_id`'s debates go."""
    return (await overrides(db, team_id)).review_channel or default


def changes_from_form(form: Mapping[str, str], *, operator_cap_usd: float,
                      presets: Mapping[str, ThresholdSpec] | None = None) -> dict[str, Any]:
    """The changes a settings form asks for (a blank field: back to the operator's default);
    InvalidRequest with one line naming the field otherwise. Fields absent are left alone.
    `presets`: each preset's cut-offs in force (those a workspace may set its own of)."""
    changes: dict[str, Any] = {}
    if THRESHOLDS in form:
        changes[THRESHOLDS] = parse_thresholds(form[THRESHOLDS], presets or {})
    if "daily_budget_usd" in form:
        changes["daily_budget_usd"] = _amount(form["daily_budget_usd"], operator_cap_usd)
    if "reviewers" in form:
        text = form["reviewers"].strip()
        try:
            changes["reviewers"] = parse_reviewers([text]) if text else None
        except ValueError as exc:
            raise FieldError("reviewers", f"reviewers: {exc}") from None
    if "review_channel" in form:
        changes["review_channel"] = _channel(form["review_channel"])
    return changes


def parse_thresholds(text: str, presets: Mapping[str, ThresholdSpec]
                     ) -> dict[str, dict[str, float]] | None:
    """`decision high=0.9 escalate=0.6; market tentative=0.7` (lines or `;`): per preset, the
    alpha cut-offs the workspace sets over the preset's (those not named stay the preset's)."""
    found: dict[str, dict[str, float]] = {}
    for line in (p.strip() for p in re.split(r"[;\n]", text)):
        if not line:
            continue
        name, *pairs = line.split()
        if name not in presets:
            known = ", ".join(sorted(presets)) or "none"
            raise FieldError(THRESHOLDS, f"thresholds: no preset {name[:40]!r} (presets: {known})")
        cutoffs: dict[str, float] = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            try:
                if key not in CUTOFFS:
                    raise ValueError(key)
                cutoffs[key] = float(value)
            except ValueError:
                raise FieldError(THRESHOLDS, f"thresholds: {pair[:40]!r}: write high=, tentative= "
                                 "or escalate= with a number from 0 to 1") from None
        if not cutoffs:
            raise FieldError(THRESHOLDS, f"thresholds: {name}: name a cut-off, e.g. high=0.9")
        try:
            cutoffs_for(presets[name], cutoffs)
        except ValueError as exc:
            raise FieldError(THRESHOLDS, f"thresholds: {name}: {_first_line(exc)}") from None
        found[name] = cutoffs
    return found or None


def cutoffs_for(spec: ThresholdSpec, own: Mapping[str, float] | None) -> ThresholdSpec:
    """The preset's cut-offs with the workspace's over them (validated: ValueError)."""
    if not own:
        return spec
    return ThresholdSpec.model_validate({**spec.model_dump(), **own})


def _first_line(exc: ValueError) -> str:
    return validation_message(exc) if isinstance(exc, ValidationError) else str(exc)


def _amount(text: str, cap: float) -> float | None:
    text = text.strip().removeprefix("$").replace(",", "")
    if not text:
        return None
    try:
        amount = float(text)
    except ValueError:
        raise FieldError(BUDGET, f"daily budget: {text[:40]!r} is not an amount in dollars"
                         ) from None
    if not amount > 0 or amount != amount:
        raise FieldError(BUDGET, "daily budget: give a positive amount, or leave it blank for "
                                 "the operator's")
    if amount > cap + 1e-9:
        raise FieldError(BUDGET, f"daily budget: at most the operator's daily budget of "
                                 f"{usd(cap)}")
    return round(amount, 6)


def _channel(text: str) -> str | None:
    text = text.strip()
    found = _CHANNEL_MENTION.fullmatch(text)
    text = found.group(1) if found else text
    if not text:
        return None
    if not _CHANNEL.fullmatch(text):
        raise FieldError(CHANNEL, f"review channel: {text[:40]!r} is no Slack channel id (C…)")
    return text


async def save(db: Database, team_id: str, changes: dict[str, Any], *, by: str, admin: bool,
               now: datetime) -> Overrides:
    """Apply `changes` (from `changes_from_form`) for `by`, who must administer the workspace
    (or be the operator); audited with before and after. NotAdmin otherwise, changing
    nothing."""
    if not admin:
        await refused(db, team_id, by=by, now=now)
        raise NotAdmin("only the workspace's admins and owners can change its settings")
    if not team_id:
        raise InvalidRequest("no workspace named")
    async with db.transaction() as session:
        _, after = await store.update(session, team_id, changes, by=by, now=now)
    return after


async def refused(db: Database, team_id: str, *, by: str, now: datetime) -> None:
    """Audit that `by`, no admin of the workspace, tried to change its settings."""
    async with db.transaction() as session:
        await audit.append(session, debate_id=None, kind=REFUSED, actor=by, at=now,
                           data={"team_id": team_id, "reason": "not an admin or owner"})
