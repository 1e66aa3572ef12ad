"""Today's budget: spend and reservations against the daily cap, for `/debate budget` and the
Home tab. The state is the service's `budget_today()` mapping; in Slack, the workspace's own
figures (bot/service/workspaces.py: `scope` "workspace", no cap, nothing of anyone else's)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.service.workspaces import SCOPE_WORKSPACE
from bot.slack.views.common import Block, Message, fields, header, message, section, usd

WARN_SHARE = 0.8


def _money(state: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = state.get(key)
        if value is not None:
            try:
                return float(value)
            except (TypeError, ValueError):
                return None
    return None


def _figures(state: Mapping[str, Any]) -> dict[str, float | None]:
    spent = _money(state, "spent_usd", "spent") or 0.0
    cap = _money(state, "cap_usd", "daily_budget_usd", "cap")
    reserved = _money(state, "reserved_usd", "reserved") or 0.0
    remaining = _money(state, "remaining_usd", "remaining")
    if remaining is None and cap is not None:
        remaining = max(0.0, cap - spent - reserved)
    return {"spent": spent, "cap": cap, "reserved": reserved, "remaining": remaining}


def _own(state: Mapping[str, Any]) -> bool:
    return state.get("scope") == SCOPE_WORKSPACE


def _own_blocks(f: Mapping[str, float | None], state: Mapping[str, Any]) -> list[Block]:
    """A workspace's own spend, and its own cap if it set one; the operator's cap over every
    workspace, and what remains of it, are not shown."""
    pairs = [("Spent today by this workspace", usd(f["spent"] or 0.0)),
             ("Reserved by its running debates", usd(f["reserved"] or 0.0))]
    cap, left = _money(state, "own_cap_usd"), _money(state, "own_remaining_usd")
    if cap is not None:
        pairs += [("This workspace's daily cap", usd(cap)), ("Left of it", usd(left or 0.0))]
    return [fields(pairs)]


def budget_blocks(state: Mapping[str, Any]) -> list[Block]:
    """Today's spend against the cap, what running debates reserve, and what is left."""
    f = _figures(state)
    if _own(state):
        return _own_blocks(f, state)
    spent, cap = f["spent"] or 0.0, f["cap"]
    lines = []
    if cap:
        share = (spent + (f["reserved"] or 0.0)) / cap
        cells = min(10, round(share * 10))
        lines.append("▰" * cells + "▱" * (10 - cells) + f" {share:.0%} of today's cap")
        if share >= 1:
            lines.append("⛔ The cap is reached: new debates wait until tomorrow (UTC).")
        elif share >= WARN_SHARE:
            lines.append(f"⚠ Over {WARN_SHARE:.0%} of today's cap is spent or reserved.")
    pairs = [("Spent today", usd(spent)), ("Daily cap", "none" if cap is None else usd(cap)),
             ("Reserved by running debates", usd(f["reserved"] or 0.0)),
             ("Remaining", "n/a" if f["remaining"] is None else usd(f["remaining"]))]
    blocks = [fields(pairs)]
    if lines:
        blocks.append(section("\n".join(lines)))
    return blocks


def budget(state: Mapping[str, Any]) -> Message:
    """Today's budget: keys `spent_usd`, `cap_usd`, `reserved_usd`, optional `remaining_usd`."""
    f = _figures(state)
    cap = "no cap" if f["cap"] is None else f"{usd(f['cap'])} cap"
    text = (f"Today's spend in this workspace: {usd(f['spent'] or 0.0)}" if _own(state)
            else f"Today's spend: {usd(f['spent'] or 0.0)} of {cap}")
    return message(text, [header("Today's budget")], budget_blocks(state), [])


__all__ = ["budget", "budget_blocks"]
