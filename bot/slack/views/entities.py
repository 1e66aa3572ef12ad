"""A debate as a Slack Work Object: the unfurl card of a transcript link (topic, status,
verdict, agreement band, cost) and the flexpane (the judges and the divergence points too).
Pure functions over values, validated with slack_sdk's Work Object models.

Model and user text is escaped as everywhere; a rehearsal says so, and so does a result that is
incomplete or a debate not finished yet (never shown as a complete result).
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.metadata import (
    EntityAttributes,
    EntityCustomField,
    EntityMetadata,
    EntityPayload,
    EntityTitle,
    ExternalRef,
)

from bot.service.results import is_incomplete
from bot.slack.mrkdwn import escape, truncate
from bot.slack.views.common import REHEARSAL_NOTE, STATUS_WORDS, usd
from bot.slack.views.debate import agreement, band_of, point_line, verdict_words
from engine.settings import ThresholdSpec
from storage.records import DebateRecord

ENTITY_TYPE = "slack#/entities/item"
REF_TYPE = "debate"
TITLE_MAX = 200
FIELD_MAX = 600
NOT_FINISHED = "Not finished yet: no result to read"
INCOMPLETE = "Incomplete: a partial result, do not read it as final"


def _field(key: str, label: str, value: str, *, long: bool = False,
           tag_color: str | None = None) -> EntityCustomField:
    return EntityCustomField(key=key, label=label, type="string",
                             value=truncate(value, FIELD_MAX), long=long or None,
                             tag_color=tag_color)


def _state(record: DebateRecord) -> str | None:
    """What keeps the card from reading as a finished result, if anything."""
    if record.result is None:
        return NOT_FINISHED
    return INCOMPLETE if is_incomplete(record.result) else None


def card_fields(record: DebateRecord, thresholds: ThresholdSpec | None, *,
                rehearsal: bool) -> list[EntityCustomField]:
    """Status, verdict, agreement (alpha and band), cost; rehearsal and incomplete flags."""
    emoji, word = STATUS_WORDS.get(record.status, ("⏳", escape(str(record.status))))
    fields = [_field("status", "Status", f"{emoji} {word}")]
    state = _state(record)
    if rehearsal:
        fields.append(_field("rehearsal", "Rehearsal", REHEARSAL_NOTE, tag_color="yellow"))
    if state is not None:
        fields.append(_field("state", "Result", state, tag_color="red"))
    result = record.result
    if result is not None:
        fields.append(_field("verdict", "Verdict", verdict_words(result), long=True))
        summary = result.consensus
        alpha = band_of(result) if summary is None else agreement(summary, thresholds)
        fields.append(_field("agreement", "Agreement (α)", alpha))
    fields.append(_field("cost", "Cost", usd(record.cost_usd)))
    return fields


def detail_fields(record: DebateRecord) -> list[EntityCustomField]:
    """The flexpane's extra: the judges, where they agree and where they split."""
    result = record.result
    if result is None or result.consensus is None:
        return [_field("judges", "Judges", "no judge panel" if result else "not judged yet")]
    judges = ", ".join(escape(j) for j in result.consensus.judges) or "none"
    fields = [_field("judges", "Judges", judges, long=True)]
    split = [point_line(p.label or p.item, p, with_ratings=True)
             for p in result.divergence.disagreements[:3]]
    agree = [point_line(p.label or p.item, p, with_ratings=False)
             for p in result.divergence.agreements[:3]]
    if split:
        fields.append(_field("disagree", "Where they disagree most", "\n".join(split),
                             long=True))
    if agree:
        fields.append(_field("agree", "Where the judges agree", "\n".join(agree), long=True))
    return fields


def debate_entity(record: DebateRecord, *, url: str, shared_url: str | None,
                  thresholds: ThresholdSpec | None, rehearsal: bool,
                  details: bool = False) -> dict[str, Any]:
    """The entity: the unfurl card (`shared_url`: the link as posted) or, with `details`, the
    flexpane's."""
    prefix = "[Rehearsal] " if rehearsal else ""
    title = EntityTitle(text=truncate(prefix + escape(record.request.topic), TITLE_MAX))
    fields = card_fields(record, thresholds, rehearsal=rehearsal)
    if details:
        fields += detail_fields(record)
    payload = EntityPayload(
        attributes=EntityAttributes(title=title, display_type="Debate",
                                    display_id=record.id[:12], product_name="Dialectic"),
        custom_fields=list[dict[str, Any] | EntityCustomField](fields),
        display_order=[f.key for f in fields])
    entity = EntityMetadata(entity_type=ENTITY_TYPE, entity_payload=payload,
                            external_ref=ExternalRef(id=record.id, type=REF_TYPE), url=url,
                            app_unfurl_url=shared_url)
    return entity.to_dict()


def not_found_error() -> dict[str, str]:
    """entity.presentDetails' error for a debate this person's workspace cannot see."""
    return {"status": "custom", "custom_title": "Debate not found",
            "custom_message": "This debate is not one this workspace can see."}


__all__ = ["ENTITY_TYPE", "debate_entity", "not_found_error"]
