"""The `/debate` modal: topic, mode, preset and panel size; the channel rides in
`private_metadata`. Its limits come from the engine's vocabulary, as the parser's do.

The block and action ids here are what the submission listener reads (`TOPIC_BLOCK`, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import InputBlock, Option, PlainTextInputElement, StaticSelectElement
from slack_sdk.models.views import View

from bot.slack.mrkdwn import truncate
from bot.slack.views.common import OPTIONS_MAX, Block
from engine.vocabulary import MAX_JUDGES, MAX_TOPIC_CHARS, Mode

DEBATE_MODAL = "debate_modal"
TOPIC_BLOCK, TOPIC_ACTION = "topic", "topic_input"
MODE_BLOCK, MODE_ACTION = "mode", "mode_select"
PRESET_BLOCK, PRESET_ACTION = "preset", "preset_select"
JUDGES_BLOCK, JUDGES_ACTION = "judges", "judges_select"
JUDGE_CHOICES = tuple(range(2, MAX_JUDGES + 1))  # one judge cannot disagree with anyone
DEFAULT_JUDGES = 3
#: what the submission listener passes to `parsing.parse_modal`
MODAL_IDS = {"topic": (TOPIC_BLOCK, TOPIC_ACTION), "mode": (MODE_BLOCK, MODE_ACTION),
             "preset": (PRESET_BLOCK, PRESET_ACTION), "judges": (JUDGES_BLOCK, JUDGES_ACTION)}


def _options(values: Sequence[str]) -> list[Option]:
    return [Option(value=v[:150], label=truncate(v, 75)) for v in values[:OPTIONS_MAX]]


def _select(block_id: str, action_id: str, label: str, values: Sequence[str],
            initial: str | None, *, optional: bool = False, hint: str | None = None) -> Block:
    options = _options(values)
    chosen = next((o for o in options if o.value == initial), options[0])
    element = StaticSelectElement(action_id=action_id, options=options, initial_option=chosen)
    return InputBlock(block_id=block_id, label=label, element=element, optional=optional,
                      hint=hint).to_dict()


def debate_modal(presets: list[str], modes: list[str], channel_id: str) -> dict[str, Any]:
    """The `/debate` modal: topic, mode, preset, judges; the channel rides in private_metadata."""
    topic = PlainTextInputElement(action_id=TOPIC_ACTION, multiline=True,
                                  max_length=MAX_TOPIC_CHARS,
                                  placeholder="Should we move the monolith to services?")
    blocks: list[Block] = [InputBlock(block_id=TOPIC_BLOCK, label="Topic", element=topic,
                                      hint="A proposition two sides can argue.").to_dict()]
    if modes:
        blocks.append(_select(MODE_BLOCK, MODE_ACTION, "Mode", modes, Mode.CONSENSUS))
    if presets:
        blocks.append(_select(PRESET_BLOCK, PRESET_ACTION, "Preset", presets, "default"))
    blocks.append(_select(JUDGES_BLOCK, JUDGES_ACTION, "Judges", [str(n) for n in JUDGE_CHOICES],
                          str(DEFAULT_JUDGES), optional=True,
                          hint="Panel size, for modes with a judge panel."))
    view = View(type="modal", callback_id=DEBATE_MODAL, title="Start a debate", submit="Start",
                close="Cancel", private_metadata=channel_id, blocks=blocks)
    return view.to_dict()


__all__ = [
    "DEBATE_MODAL",
    "JUDGES_ACTION",
    "JUDGES_BLOCK",
    "JUDGE_CHOICES",
    "MODAL_IDS",
    "MODE_ACTION",
    "MODE_BLOCK",
    "PRESET_ACTION",
    "PRESET_BLOCK",
    "TOPIC_ACTION",
    "TOPIC_BLOCK",
    "debate_modal",
]
