"""Pure parsers for what Slack sends: `/debate` text, bot mentions, modal values, thread context.

No I/O here, so every rule is table-tested. A parse error is a `CommandError` whose message is
written for the person who typed the command (the listener adds the usage).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple

from engine.characters import unstorable
from engine.domain import DebateRequest
from engine.vocabulary import MAX_TOPIC_CHARS, Mode, choices

Action = Literal["start", "modal", "help", "status", "estimate", "budget", "brief",
                 "schedules"]


def _bounds(name: str) -> tuple[int, int]:
    """A numeric field's (ge, le) as DebateRequest, the REST body, validates it."""
    meta = DebateRequest.model_fields[name].metadata
    low = next(int(m.ge) for m in meta if getattr(m, "ge", None) is not None)
    high = next(int(m.le) for m in meta if getattr(m, "le", None) is not None)
    return low, high


MODES = choices(Mode)
ROUNDS_RANGE = _bounds("rounds")
JUDGES_RANGE = _bounds("judges")
TOPIC_MAX = MAX_TOPIC_CHARS  # the settings may lower it; the service says so if they do

USAGE = f"""\
/debate TOPIC [--mode M] [--preset P] [--rounds N] [--judges N]   start a debate
/debate                          open a form to start one
/debate help                     this help
/debate status [ID]              this channel's latest debates, or one debate
/debate estimate TOPIC [flags]   what a debate would cost, without starting it
/debate budget                   today's spend against the daily cap
/debate brief TOPIC at 09:30 [in #channel]   a decision brief posted before the meeting
/debate schedules [pause|resume ID]          scheduled digests (pausing: reviewers only)
Modes: {", ".join(MODES)}.
Rounds {ROUNDS_RANGE[0]}-{ROUNDS_RANGE[1]}, judges {JUDGES_RANGE[0]}-{JUDGES_RANGE[1]}, \
topics up to {TOPIC_MAX:,} characters.
Quote a topic that starts with a subcommand or contains --: /debate "status quo or change?"
In a thread: @Dialectic debate [question] debates the thread."""

QUOTES = {'"': '"', "“": "”", "„": "“", "”": "”"}  # opening -> usual closing
CLOSING = frozenset('"”“')
_QUOTE_CHARS = frozenset(QUOTES) | CLOSING
DASHES = ("—", "–")  # clients turn "--" into an em or en dash
_DASH_STARTS = ("-", *DASHES)
CONTEXT_CHARS = 12_000
_MENTION = re.compile(r"<@[UW][A-Z0-9]+(?:\|[^>]*)?>")
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class CommandError(ValueError):
    """The input cannot be understood; the message says what is wrong."""


class Token(NamedTuple):   # a tuple: built for every word of every command
    text: str
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """A parsed `/debate`: what to do, and the debate's fields when it starts or estimates one."""

    action: Action
    topic: str = ""
    mode: str | None = None
    preset: str | None = None
    rounds: int | None = None
    judges: int | None = None
    debate_id: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def request(self, *, requested_by: str, context: str = "", no_cache: bool = False
                ) -> DebateRequest:
        """The DebateRequest; fields not given are left unset so the preset decides them."""
        fields: dict[str, Any] = {"topic": self.topic, "requested_by": requested_by,
                                  "context": context, "options": dict(self.options),
                                  "no_cache": no_cache}
        for name in ("mode", "preset", "rounds", "judges"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        return DebateRequest(**fields)


# --------------------------------------------------------------------------------------------
# /debate


def tokenize(text: str) -> list[Token]:
    """Split on whitespace; double quotes (straight or curly) group words. Apostrophes are text."""
    if _QUOTE_CHARS.isdisjoint(text):   # no quotes (most commands): str.split's whitespace is
        return [Token(word) for word in text.split()]   # str.isspace's, as below
    return tokens_by_char(text)


def tokens_by_char(text: str) -> list[Token]:
    """`tokenize`, a character at a time (what quotes need)."""
    tokens: list[Token] = []
    current: list[str] = []
    quoted = in_quote = False
    for char in text:
        if in_quote:
            if char in CLOSING:
                in_quote = False
            else:
                current.append(char)
        elif char in QUOTES:
            in_quote = quoted = True
        elif char.isspace():
            if current or quoted:
                tokens.append(Token("".join(current), quoted))
            current, quoted = [], False
        else:
            current.append(char)
    if in_quote:
        raise CommandError("a quote is not closed: end the topic with a closing \"")
    if current or quoted:
        tokens.append(Token("".join(current), quoted))
    return tokens


def _flag_name(token: Token) -> str | None:
    text = token.text
    if token.quoted or not text.startswith(_DASH_STARTS):   # most words: not a flag
        return None
    for dash in DASHES:
        if text.startswith(dash):
            text = "--" + text[len(dash):]
    return text[2:] if text.startswith("--") and len(text) > 2 else None


def _int_in(name: str, low: int, high: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise CommandError(f"--{name} takes a whole number, not {value!r}") from None
        if not low <= number <= high:
            raise CommandError(f"--{name} must be between {low} and {high}, not {number}")
        return number

    return parse


def _mode(value: str) -> str:
    mode = value.lower()
    if mode not in MODES:
        raise CommandError(f"unknown mode {value!r}; choose one of: {', '.join(MODES)}")
    return mode


def _preset(value: str) -> str:
    if not _ID.match(value):
        raise CommandError(f"{value!r} is not a preset name")
    return value.lower()


FLAGS: dict[str, Callable[[str], Any]] = {
    "mode": _mode,
    "preset": _preset,
    "rounds": _int_in("rounds", *ROUNDS_RANGE),
    "judges": _int_in("judges", *JUDGES_RANGE),
}


def _take_flag(tokens: Sequence[Token], i: int, flags: dict[str, Any]) -> int:
    """Parse the flag at `tokens[i]` into `flags`; the index of the next unread token."""
    raw = _flag_name(tokens[i]) or ""
    name, has_value, value = raw.partition("=")
    name = name.lower()
    if name not in FLAGS:
        raise CommandError(f"unknown option --{name}; options: "
                           + ", ".join(f"--{f}" for f in FLAGS))
    if name in flags:
        raise CommandError(f"--{name} is given twice")
    if not has_value:
        if i + 1 >= len(tokens) or _flag_name(tokens[i + 1]) is not None:
            raise CommandError(f"--{name} needs a value")
        value = tokens[i + 1].text
        i += 1
    flags[name] = FLAGS[name](value.strip())
    return i + 1


def parse_debate_args(tokens: Sequence[Token], action: Action = "start") -> Command:
    """A topic (all words that are not options, in order) and the options, anywhere."""
    words: list[str] = []
    flags: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        if _flag_name(tokens[i]) is not None:
            i = _take_flag(tokens, i, flags)
        else:
            words.append(tokens[i].text)
            i += 1
    topic = " ".join(w for w in words if w.strip()).strip()
    if not topic:
        raise CommandError("say what to debate: /debate Should we adopt X?")
    return Command(action=action, topic=_topic(topic), **flags)


def _topic(topic: str) -> str:
    if len(topic) > TOPIC_MAX:
        raise CommandError(f"the topic is {len(topic):,} characters; the limit is {TOPIC_MAX:,}"
                           " (link to a document instead)")
    return topic


def check_text(text: str) -> str:
    """`text`, unless it holds what nothing can store (a lone UTF-16 surrogate, NUL): then a
    CommandError saying so. Every text Slack sends in is checked before it is kept or used."""
    problem = unstorable(text)
    if problem is not None:
        raise CommandError(f"that text cannot be kept: {problem}")
    return text


def parse_command(text: str) -> Command:
    """`/debate` text -> Command. Raises CommandError with a message for the user."""
    tokens = tokenize(check_text(text).strip())
    if not tokens:
        return Command(action="modal")
    first = tokens[0]
    word = first.text.lower() if not first.quoted else ""
    rest = tokens[1:]
    if word in ("help", "-h", "--help", "?") and not rest:
        return Command(action="help")
    if word == "budget" and not rest:
        return Command(action="budget")
    if word == "status" and len(rest) <= 1:
        debate_id = rest[0].text.strip() if rest else None
        if debate_id is not None and not _ID.match(debate_id):
            raise CommandError(f"{debate_id!r} is not a debate id")
        return Command(action="status", debate_id=debate_id)
    if word == "estimate":
        if not rest:
            raise CommandError("say what to estimate: /debate estimate Should we adopt X?")
        return parse_debate_args(rest, "estimate")
    if word == "brief":
        # the scheduler parses "TOPIC at HH:MM [in #channel]" from the raw text
        return Command(action="brief", topic=text.strip()[len(first.text):].strip())
    if word == "schedules":
        return _schedules_command(rest)
    return parse_debate_args(tokens)


def _schedules_command(rest: Sequence[Token]) -> Command:
    """`/debate schedules` lists; `/debate schedules pause|resume ID` (reviewers only)."""
    if not rest:
        return Command(action="schedules")
    verb = rest[0].text.lower()
    if verb not in ("pause", "resume") or len(rest) != 2:
        raise CommandError("use /debate schedules, or /debate schedules pause|resume ID")
    return Command(action="schedules", topic=rest[1].text.strip(), options={"verb": verb})


# --------------------------------------------------------------------------------------------
# mentions and thread context


def strip_mentions(text: str) -> str:
    """The text without user mentions (`<@U123>`, `<@U123|name>`), whitespace collapsed."""
    return " ".join(_MENTION.sub(" ", text).split())


def parse_mention(text: str, bot_user_id: str | None = None) -> str | None:
    """For "@Dialectic debate [question]": the question ("" when none); None if not "debate".

    Only what follows the bot's mention counts ("hey @Dialectic debate X" works); other
    mentions in the question are kept, they are part of it."""
    mention = re.compile(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>") if bot_user_id else _MENTION
    found = mention.search(text)
    after = text[found.end():] if found else text
    after = " ".join(mention.sub(" ", after).split())
    match = re.match(r"^debate\b[\s:,.-]*(?P<rest>.*)$", after, re.IGNORECASE | re.DOTALL)
    if match is None:
        return None
    return match["rest"].strip()


@dataclass(frozen=True, slots=True)
class ThreadLine:
    ts: str
    user_id: str
    text: str


def thread_context(lines: Iterable[ThreadLine], *, skip_ts: Iterable[str] = (),
                   limit: int = CONTEXT_CHARS) -> str:
    """The thread as "<@U>: text" lines for the debaters, newest kept when it is too long."""
    skip = set(skip_ts)
    rendered = [f"<@{line.user_id}>: {line.text.strip()}" for line in lines
                if line.ts not in skip and line.text.strip()]
    kept: list[str] = []
    used = 0
    for line in reversed(rendered):
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join(reversed(kept))


# --------------------------------------------------------------------------------------------
# modal values


class ModalError(CommandError):
    """A modal field is invalid; `block_id` says which, for `response_action: errors`."""

    def __init__(self, block_id: str, message: str) -> None:
        super().__init__(message)
        self.block_id = block_id


def _selected(values: Mapping[str, Any], block_id: str, action_id: str) -> str | None:
    state = (values.get(block_id) or {}).get(action_id) or {}
    option = state.get("selected_option") or {}
    value = option.get("value")
    return str(value) if value else None


def parse_modal(values: Mapping[str, Any], *, ids: Mapping[str, tuple[str, str]]) -> Command:
    """The debate modal's state -> Command. `ids` maps topic/mode/preset/judges to
    (block_id, action_id). Raises ModalError naming the block at fault."""
    topic_block, topic_action = ids["topic"]
    topic = str(((values.get(topic_block) or {}).get(topic_action) or {}).get("value") or "")
    if unstorable(topic) is not None:
        raise ModalError(topic_block, "This text holds a character that is not text; type it "
                                      "again as plain text.")
    if not topic.strip():
        raise ModalError(topic_block, "Say what to debate.")
    try:
        command = Command(action="start", topic=_topic(topic.strip()))
    except CommandError as exc:
        raise ModalError(topic_block, str(exc)) from None
    mode = _selected(values, *ids["mode"])
    if mode is not None:
        if mode not in MODES:
            raise ModalError(ids["mode"][0], f"Unknown mode {mode!r}.")
        command = replace(command, mode=mode)
    preset = _selected(values, *ids["preset"])
    judges = _selected(values, *ids["judges"])
    try:
        return replace(command, preset=preset,
                       judges=FLAGS["judges"](judges) if judges is not None else None)
    except CommandError as exc:
        raise ModalError(ids["judges"][0], str(exc)) from None


__all__ = [
    "USAGE",
    "Command",
    "CommandError",
    "ModalError",
    "ThreadLine",
    "Token",
    "check_text",
    "parse_command",
    "parse_debate_args",
    "parse_mention",
    "parse_modal",
    "strip_mentions",
    "thread_context",
    "tokenize",
]
