"""What the DM (AI-app) surface says: the suggested prompts, the thread's title, the status line
that follows a debate's progress, and the DM's own help.

Pure. A suggested prompt's message is sent as the user's own DM when clicked, so each is written
in the DM grammar (`/debate`'s: a question, then options such as `--preset decision`) and starts
the preset it names. Slack shows the status after the app's name ("Dialectic is …").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from bot.service.progress import PhaseState, Progress
from bot.slack.mrkdwn import escape, truncate
from bot.slack.views import common as B
from bot.slack.views.common import note

MAX_PROMPTS: Final = 4          # assistant.threads.setSuggestedPrompts takes up to four
TITLE_MAX: Final = 80
PROMPTS_TITLE: Final = "Start a debate"

#: The presets offered first, with a question each (a preset a DM cannot serve, `appeal`,
#: needs a flagged message and a policy: it is not offered).
EXAMPLES: Final[Mapping[str, tuple[str, str]]] = {
    "decision": ("Decision review", "Should we move billing to PostgreSQL?"),
    "default": ("Any question", "Should we adopt a four-day work week?"),
    "market": ("Bull vs bear", "NVDA closed above its 50-day average: buy?"),
    "compliance": ("Policy check", "Does logging full card numbers comply with our policy?"),
    "brief": ("Meeting brief", "Should we split the monolith this quarter?"),
}


def prompt_message(preset: str, question: str) -> str:
    """The DM that starts `question` under `preset` (the default preset needs no option)."""
    return question if preset == "default" else f"{question} --preset {preset}"


def suggested_prompts(presets: Iterable[str]) -> list[dict[str, str]]:
    """Up to four prompts, in EXAMPLES' order, for the presets that exist here."""
    available = set(presets)
    prompts = [{"title": title, "message": prompt_message(name, question)}
               for name, (title, question) in EXAMPLES.items() if name in available]
    return prompts[:MAX_PROMPTS]


def thread_title(topic: str) -> str:
    """The DM thread's title: the question (escaped like all user text), on one line, cut."""
    return truncate(escape(" ".join(topic.split())), TITLE_MAX) or "Debate"


def status_line(progress: Progress, *, rehearsal: bool) -> str:
    """What the debate is doing now, e.g. "is debating: cross-examination (2/4)…"."""
    phases = progress.phases()
    running = next((p for p in phases if p.state is PhaseState.RUNNING), None)
    done = sum(1 for p in phases if p.finished)
    total = len(phases)
    if running is not None and running.name in progress.judging:
        text = "is waiting on the judges: they are scoring…"
    elif running is not None:
        text = f"is debating: {running.name} ({phases.index(running) + 1}/{total})…"
    elif not phases or done == 0:
        text = "is preparing the arguments…"
    elif done < total:
        text = f"is moving on to {phases[done].name} ({done + 1}/{total})…"
    else:
        text = "is weighing the verdicts…"
    return f"{text} (rehearsal)" if rehearsal else text


def dm_help(problem: str | None = None) -> B.Message:
    """Said in the DM thread when the message cannot start a debate (nothing was started)."""
    how = ("Send me a question to debate, e.g. `Should we move billing to PostgreSQL?`, "
           "optionally with `/debate`'s options: `--preset decision`, `--mode structured`, "
           "`--rounds 2`, `--judges 3`. Reply in a debate's thread while it runs to add "
           "evidence.")
    head = f"⚠ {escape(problem)} " if problem else ""
    return note(f"{head}{how}")


def finished_thread() -> B.Message:
    """A reply in a DM thread whose debate has already ended."""
    return note("This debate has ended, so your reply was not added to it. To debate "
                "something else, send it as a new message (or in a new chat).")


__all__ = ["EXAMPLES", "MAX_PROMPTS", "PROMPTS_TITLE", "dm_help", "finished_thread",
           "prompt_message", "status_line", "suggested_prompts", "thread_title"]
