"""The workspace's settings on App Home (read by everyone, an Edit button for its admins) and
the modal its admins change them in. A blank field is "the operator's default"; the block ids
are what the submission listener reads and puts its one-line errors beside."""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ActionsBlock, ButtonElement
from slack_sdk.models.views import View

from bot.service.workspace_settings import (
    BUDGET,
    CHANNEL,
    REVIEWERS,
    THRESHOLDS,
    Effective,
)
from bot.slack.mrkdwn import channel, escape, user
from bot.slack.views.common import Block, context, divider, header, section, text_input, usd

SETTINGS_EDIT = "workspace_settings_edit"
SETTINGS_MODAL = "workspace_settings"
#: field -> (block id, action id) of its input in the modal
FIELDS = {BUDGET: ("ws_budget", "ws_budget_input"),
          REVIEWERS: ("ws_reviewers", "ws_reviewers_input"),
          CHANNEL: ("ws_channel", "ws_channel_input"),
          THRESHOLDS: ("ws_thresholds", "ws_thresholds_input")}
BLOCK_OF = {field: block for field, (block, _) in FIELDS.items()}


def _who(entry: str) -> str:
    return f"<!subteam^{entry}>" if entry.startswith("S") else user(entry)


def settings_blocks(found: Effective, *, admin: bool) -> list[Block]:
    """The Settings section of App Home: what is in force, whose each value is."""
    def whose(field: str) -> str:
        return "this workspace's" if field in found.own else "the operator's default"

    people = ", ".join(_who(r) for r in found.reviewers[:20]) or "nobody"
    where = channel(found.review_channel) if found.review_channel else "none"
    cutoffs = escape(found.thresholds_text()) or "the presets' own"
    lines = [f"*Daily budget:* {usd(found.daily_budget_usd)} ({whose(BUDGET)}; the operator's "
             f"{usd(found.operator_cap_usd)} over every workspace holds too)",
             f"*Reviewers:* {people} ({whose(REVIEWERS)})",
             f"*Review channel:* {where} ({whose(CHANNEL)})",
             f"*Alpha cut-offs:* {cutoffs} ({whose(THRESHOLDS)})"]
    blocks = [divider(), header("Settings"), section("\n".join(lines))]
    if admin:
        button = ButtonElement(text="Edit settings", action_id=SETTINGS_EDIT,
                               value=found.team_id[:64])
        blocks.append(ActionsBlock(elements=[button]).to_dict())
    else:
        blocks.append(context(["Only this workspace's admins and owners can change these."]))
    return blocks


def _input(field: str, label: str, initial: str, hint: str, placeholder: str, *,
           multiline: bool = False) -> Block:
    return text_input(FIELDS[field], label, initial, hint, placeholder, multiline=multiline,
                      optional=True)


def settings_modal(found: Effective) -> dict[str, Any]:
    """The form, filled with the workspace's own values (blank: the operator's default)."""
    budget = f"{found.daily_budget_usd:g}" if BUDGET in found.own else ""
    reviewers = " ".join(found.reviewers) if REVIEWERS in found.own else ""
    blocks = [
        _input(BUDGET, "Daily budget (USD)", budget,
               f"Blank: the operator's. At most {usd(found.operator_cap_usd)}, the operator's "
               "cap over every workspace.", "5.00"),
        _input(REVIEWERS, "Reviewers", reviewers,
               "User ids (U…) or user-group ids (S…), or paste mentions. Blank: the operator's.",
               "U0123ABC S0456DEF"),
        _input(CHANNEL, "Review channel",
               (found.review_channel or "") if CHANNEL in found.own else "",
               "A channel id (C…) or a #channel mention. Blank: the operator's.", "C0123ABC"),
        _input(THRESHOLDS, "Alpha cut-offs per preset", found.thresholds_text(),
               "One preset a line: its name, then high=, tentative=, escalate= (0 to 1). "
               "Blank: the presets' own.", "decision high=0.9 escalate=0.6", multiline=True),
    ]
    view = View(type="modal", callback_id=SETTINGS_MODAL, title="Workspace settings",
                submit="Save", close="Cancel", private_metadata=found.team_id[:64],
                blocks=blocks)
    return view.to_dict()


__all__ = ["BLOCK_OF", "FIELDS", "SETTINGS_EDIT", "SETTINGS_MODAL", "settings_blocks",
           "settings_modal"]
