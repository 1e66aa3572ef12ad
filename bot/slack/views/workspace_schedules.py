"""The workspace's schedules on App Home (read by everyone; Add, Edit, Pause/Resume and Remove
buttons for its admins) and the modal its admins define one in. The block ids are what the
submission listener reads and puts its one-line errors beside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ConfirmObject,
    InputBlock,
    Option,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from bot.scheduling.workspace import (
    CHANNEL,
    CRON,
    MAX_PER_WORKSPACE,
    NAME,
    PRESET,
    TIMEZONE,
    TOPICS,
    Listed,
)
from bot.slack.mrkdwn import channel, date_fmt, escape, truncate
from bot.slack.views.common import Block, context, divider, header, section, text_input
from storage.workspace_schedules import WorkspaceSchedule

SCHEDULE_ADD = "workspace_schedule_add"
SCHEDULE_EDIT = "workspace_schedule_edit"
SCHEDULE_PAUSE = "workspace_schedule_pause"
SCHEDULE_RESUME = "workspace_schedule_resume"
SCHEDULE_REMOVE = "workspace_schedule_remove"
SCHEDULE_MODAL = "workspace_schedule"
NOTICE_MODAL = "workspace_schedule_notice"
#: field -> (block id, action id) of its input in the modal
FIELDS = {NAME: ("wss_name", "wss_name_input"), PRESET: ("wss_preset", "wss_preset_input"),
          TOPICS: ("wss_topics", "wss_topics_input"), CRON: ("wss_cron", "wss_cron_input"),
          TIMEZONE: ("wss_timezone", "wss_timezone_input"),
          CHANNEL: ("wss_channel", "wss_channel_input")}
BLOCK_OF = {field: block for field, (block, _) in FIELDS.items()}


def _line(found: Listed) -> str:
    s = found.schedule
    when = (f"next run {date_fmt(found.next_run)}" if found.next_run is not None
            else "⏸ paused" if not s.enabled else "no run ahead")
    topics = "; ".join(escape(t) for t in s.topics[:3]) + ("; …" if len(s.topics) > 3 else "")
    return truncate(f"*{escape(s.name)}* · `{escape(s.cron)}` ({escape(s.timezone)}) · "
                    f"{escape(s.preset)} in {channel(s.channel)} · {when}\n{topics}", 2900)


def _buttons(s: WorkspaceSchedule) -> Block:
    pause = (ButtonElement(text="Pause", action_id=SCHEDULE_PAUSE, value=s.id) if s.enabled
             else ButtonElement(text="Resume", action_id=SCHEDULE_RESUME, value=s.id))
    remove = ButtonElement(
        text="Remove", action_id=SCHEDULE_REMOVE, value=s.id, style="danger",
        confirm=ConfirmObject(title="Remove the schedule?", confirm="Remove", deny="Keep",
                              text=f"{truncate(s.name, 60)} stops running; its past runs stay "
                                   "recorded."))
    return ActionsBlock(block_id=f"wss_{s.id}", elements=[
        ButtonElement(text="Edit", action_id=SCHEDULE_EDIT, value=s.id), pause, remove]
    ).to_dict()


def schedules_blocks(listed: Sequence[Listed], *, admin: bool) -> list[Block]:
    """The Schedules section of App Home: each schedule with its next run."""
    blocks = [divider(), header("Schedules")]
    for found in listed:
        blocks.append(section(_line(found)))
        if admin:
            blocks.append(_buttons(found.schedule))
    if not listed:
        blocks.append(context(["No schedules: a schedule debates its topics on a cron slot and "
                               "posts one digest in its channel."]))
    if admin and len(listed) < MAX_PER_WORKSPACE:
        blocks.append(ActionsBlock(elements=[ButtonElement(
            text="Add schedule", action_id=SCHEDULE_ADD, value="add")]).to_dict())
    elif admin:
        blocks.append(context([f"At most {MAX_PER_WORKSPACE} schedules: remove one to add "
                               "another."]))
    else:
        blocks.append(context(["Only this workspace's admins and owners can change these."]))
    return blocks


def _input(field: str, label: str, initial: str, hint: str, placeholder: str, *,
           multiline: bool = False) -> Block:
    return text_input(FIELDS[field], label, initial, hint, placeholder, multiline=multiline,
                      max_length=3000 if multiline else 200)


def _preset(presets: Sequence[str], initial: str) -> Block:
    block_id, action_id = FIELDS[PRESET]
    options = [Option(value=p, text=p) for p in presets[:100]]
    chosen = next((o for o in options if o.value == initial), options[0] if options else None)
    element = StaticSelectElement(action_id=action_id, options=options, initial_option=chosen)
    return InputBlock(block_id=block_id, label="Preset", element=element).to_dict()


def schedule_modal(presets: Sequence[str], schedule: WorkspaceSchedule | None = None, *,
                   timezone: str = "UTC") -> dict[str, Any]:
    """The form for a new schedule, or filled with `schedule` to edit it."""
    s = schedule
    blocks = [
        _input(NAME, "Name", s.name if s else "", "Lowercase letters, digits, - and _.",
               "morning-markets"),
        _preset(presets, s.preset if s else "market"),
        _input(TOPICS, "Topics", "\n".join(s.topics) if s else "",
               "One topic a line; each is debated, and one digest lists them all.",
               "Brent crude breaks $90", multiline=True),
        _input(CRON, "When (cron)", s.cron if s else "",
               "Five fields: minute hour day month weekday. At most hourly (one minute).",
               "0 8 * * 1-5"),
        _input(TIMEZONE, "Time zone", s.timezone if s else timezone,
               "An IANA name.", "Europe/Paris"),
        _input(CHANNEL, "Channel", s.channel if s else "",
               "A channel id (C…) or a #channel mention; invite me to a private one first.",
               "C0123ABC"),
    ]
    view = View(type="modal", callback_id=SCHEDULE_MODAL,
                title="Edit schedule" if s else "New schedule", submit="Save", close="Cancel",
                private_metadata=s.id if s else "", blocks=blocks)
    return view.to_dict()


def notice_modal(text: str) -> dict[str, Any]:
    """A few words for the person who pressed, and no one else (a refusal, a schedule gone)."""
    return View(type="modal", callback_id=NOTICE_MODAL, title="Schedules", close="OK",
                blocks=[section(escape(text))]).to_dict()


__all__ = ["BLOCK_OF", "FIELDS", "NOTICE_MODAL", "SCHEDULE_ADD", "SCHEDULE_EDIT",
           "SCHEDULE_MODAL", "SCHEDULE_PAUSE", "SCHEDULE_REMOVE", "SCHEDULE_RESUME",
           "notice_modal", "schedule_modal", "schedules_blocks"]
