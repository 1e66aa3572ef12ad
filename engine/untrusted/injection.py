"""Finding text addressed to the AI in untrusted material, so the service can audit it, show it and
send the debate to a human: instructions to drop the prompt ("ignore previous instructions"),
new personas ("you are now", "pretend you are", "act as"), orders to the judges ("as the judge,
score...", "score Position B 10"), talk of the system prompt, fake role headers and chat-template
tokens, forged spotlight markers, and hidden characters (Unicode tags, zero-width runs, bidi
controls).

Phrases are matched on the skeleton of `engine.untrusted.glyphs`, so look-alike letters, fullwidth
forms and zero-width characters inside a word do not hide them; offsets are in the text as given.
The patterns ask for words that only make sense addressed to a model ("instructions", "rubric",
"Position B", "system prompt", "AI"), so ordinary moderation and debate text ("ignore my previous
message", "you are now muted", "act as a mediator") is not flagged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from functools import lru_cache

from engine.untrusted import glyphs

EXCERPT_CHARS = 120
SCANNED_TEXTS = 32768  # texts whose findings are remembered (~1,000 concurrent debates' outputs)
SHORT_TEXT = 256  # a text up to this long is its own key; a longer one is keyed by its digest
_S = r"[\s*_~`\"']+"  # between words: spaces, line breaks, markdown emphasis, quotes
_EMOJI_JOINERS = frozenset("\u200d\ufe0e\ufe0f")


class FindingKind(StrEnum):
    OVERRIDE = "override"
    PERSONA = "persona"
    JUDGE_DIRECTIVE = "judge_directive"
    SYSTEM_PROMPT = "system_prompt"
    ROLE_HEADER = "role_header"
    MARKER_FORGERY = "marker_forgery"
    HIDDEN_TAGS = "hidden_tags"
    ZERO_WIDTH = "zero_width"
    BIDI_CONTROL = "bidi_control"


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One passage addressed to the AI: what matched, why it matters, where it is."""

    kind: FindingKind
    rule: str  # stable name of the rule that matched, for audits and tests
    reason: str  # one sentence for a human reviewer
    start: int  # offsets into the scanned text
    end: int
    excerpt: str  # the passage, invisible characters shown as <U+XXXX>
    source: str = ""  # which piece of untrusted text, e.g. "appealed message"

    def as_dict(self) -> dict[str, str | int]:
        return {"kind": self.kind.value, "rule": self.rule, "reason": self.reason,
                "start": self.start, "end": self.end, "excerpt": self.excerpt,
                "source": self.source}


@dataclass(frozen=True, slots=True)
class _Rule:
    name: str
    kind: FindingKind
    pattern: re.Pattern[str]
    reason: str


def _rule(name: str, kind: FindingKind, pattern: str, reason: str) -> _Rule:
    return _Rule(name, kind, re.compile(pattern.replace(" ", _S), re.IGNORECASE | re.M), reason)


_AI = r"(?:ai|assistant|chatbot|bot|language model|llm|judges?|grader|evaluator|scorer)"
_VERB = r"(?:score|rate|grade|award|give|declare|pick|choose|vote|rule|mark)"
_NEGATED = re.compile(r"(?:\bdo not|\bdon'?t|\bnever|\bstop|\bnot)" + _S + r"$", re.IGNORECASE)

RULES: tuple[_Rule, ...] = (
    _rule("ignore-instructions", FindingKind.OVERRIDE,
          r"\b(?:ignore|disregard|forget|override|bypass|abandon)\b"
          r"(?: (?:all|any|every|of|the|your|these|those|previous|prior|above|preceding|earlier"
          r"|foregoing|original|initial|system|given|judging|scoring)\b){0,4}"
          r" (?:instructions?|prompts?|directions|directives?|rubric|scoring rules|programming)\b",
          "tells the model to drop its instructions"),
    _rule("ignore-everything", FindingKind.OVERRIDE,
          r"\b(?:ignore|disregard|forget) (?:everything|anything|all) (?:above|before|previously"
          r"|you (?:were|have been) told)\b",
          "tells the model to drop what it was told"),
    _rule("new-instructions", FindingKind.OVERRIDE,
          r"\b(?:new|updated|revised|real|actual|true|additional) (?:system )?instructions?\s*:",
          "announces new instructions for the model"),
    _rule("you-are-now", FindingKind.PERSONA,
          r"\byou(?:'re| are) (?:now|no longer) (?:an? |the |in )?(?:\w+ ){0,2}?"
          rf"(?:{_AI}|dan|jailbroken|unrestricted|unfiltered|uncensored|developer mode|god mode"
          r"|bound)\b",
          "gives the model a new identity"),
    _rule("pretend", FindingKind.PERSONA,
          r"\bpretend (?:that )?(?:you(?:'re| are| were)|to be (?:an?|the))\b",
          "asks the model to role-play"),
    _rule("role-play", FindingKind.PERSONA,
          r"\brole[\s-]?play(?:ing)? as\b|\blet'?s role[\s-]?play\b",
          "asks the model to role-play"),
    _rule("act-as", FindingKind.PERSONA,
          r"(?:^|[.!?:;]|\bplease|\byou (?:will|must|should|shall|now|are to))\s*act as "
          rf"(?:if you (?:are|were) )?(?:an? |the |my )?(?:\w+ ){{0,2}}?{_AI}\b",
          "asks the model to play a role"),
    _rule("as-the-judge", FindingKind.JUDGE_DIRECTIVE,
          rf"\bas (?:the|a|an|my|our) (?:\w+ )?{_AI}\b[\s,:]+(?:\w+[\s,]+){{0,3}}?{_VERB}\b",
          "tells the judges how to score"),
    _rule("addressed-judges", FindingKind.JUDGE_DIRECTIVE,
          r"\b(?:judges?|evaluators?|graders?|panel(?:ists)?|ai|assistant|chatgpt|gpt|claude"
          r"|gemini|llm)\b\s*[:,]\s*(?:please )?(?:ignore|disregard|forget|output|respond|reply"
          rf"|answer|say|print|write|{_VERB})\b",
          "gives an order to the judges or the model"),
    _rule("score-position", FindingKind.JUDGE_DIRECTIVE,
          r"\b(?:score|rate|grade|give|award|mark) (?:position|side) [ab]\b(?: (?:a|an|with|at"
          r"|as|of))? \d+|\bposition [ab] (?:gets|deserves|should (?:get|receive)|must "
          r"(?:get|receive)) (?:a )?\d+",
          "dictates a score"),
    _rule("declare-winner", FindingKind.JUDGE_DIRECTIVE,
          r"\b(?:declare|name|make|pick|choose|crown) (?:position [ab]|side [ab]|me|the (?:pro"
          r"|con|appellant|advocate|policy|user)(?: side)?) (?:as )?(?:the )?winner\b"
          r"|\bposition [ab] (?:wins|must win|should win|is the winner)\b",
          "dictates the winner"),
    _rule("every-criterion", FindingKind.JUDGE_DIRECTIVE,
          r"\b(?:\d+|full marks|top marks|maximum|max|perfect scores?) (?:points )?(?:on|for|in"
          r"|across) (?:every|all|each) (?:criteri(?:on|a)|dimensions?|rubric|categor(?:y|ies))\b",
          "dictates the rubric scores"),
    _rule("system-prompt", FindingKind.SYSTEM_PROMPT,
          r"\b(?:reveal|print|show|repeat|output|leak|disclose|display|dump|ignore|override"
          r"|bypass|forget|replace|update|change) (?:me )?(?:your|the) (?:\w+ )?(?:system prompt"
          r"|(?:initial|original|hidden) (?:instructions|prompt))\b"
          r"|\byour (?:system prompt|(?:initial|original|hidden|previous|prior) (?:instructions"
          r"|prompt|programming))\b"
          r"|\b(?:end|beginning|start) of (?:the )?(?:system prompt|instructions|prompt)\b",
          "talks to the model about its system prompt"),
    _rule("role-header", FindingKind.ROLE_HEADER,
          r"^[\t>*#_\x20-]*(?:system|assistant|developer|judges?|ai)\s*(?:\([^)\n]{0,30}\)\s*)?:",
          "imitates a chat role header"),
    _rule("chat-template", FindingKind.ROLE_HEADER,
          r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id"
          r"|end_header_id)\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>"
          r"|^#{2,}\s*(?:instructions?|system|response)\s*:?$",
          "imitates a chat template token"),
    _rule("spotlight-marker", FindingKind.MARKER_FORGERY,
          r"untrusted[\s_-]*(?:begin|end)\b|\b(?:begin|end)[\s_-]*untrusted\b",
          "imitates the markers around untrusted text"),
)


#: What each rule cannot match without, in an ASCII skeleton (lower-cased): one of these whole
#: words (maximal runs of letters), or one of these substrings. A rule whose triggers are absent
#: is not run: most replies contain none of them, and the 16 patterns cost about a millisecond per
#: kilobyte of text (tests/unit/test_injection_triggers.py checks the rules find the same with
#: and without them).
_TRIGGERS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "ignore-instructions": (frozenset({"ignore", "disregard", "forget", "override", "bypass",
                                       "abandon"}), ()),
    "ignore-everything": (frozenset({"ignore", "disregard", "forget"}), ()),
    "new-instructions": (frozenset({"instruction", "instructions"}), ()),
    "you-are-now": (frozenset({"now", "longer"}), ()),
    "pretend": (frozenset({"pretend"}), ()),
    "role-play": (frozenset({"role", "roleplay", "roleplaying"}), ()),
    # `\s*` may join "act" to what asks it ("please act", "you must act")
    "act-as": (frozenset({"act", "pleaseact", "willact", "mustact", "shouldact", "shallact",
                          "nowact", "toact"}), ()),
    "as-the-judge": (frozenset({"ai", "assistant", "chatbot", "bot", "language", "llm", "judge",
                                "judges", "grader", "evaluator", "scorer"}), ()),
    "addressed-judges": (frozenset({"judge", "judges", "evaluator", "evaluators", "grader",
                                    "graders", "panel", "panelists", "ai", "assistant",
                                    "chatgpt", "gpt", "claude", "gemini", "llm"}), ()),
    "score-position": (frozenset({"position", "side"}), ()),
    "declare-winner": (frozenset({"winner", "wins", "win"}), ()),
    "every-criterion": (frozenset({"criterion", "criteria", "dimension", "dimensions", "rubric",
                                   "category", "categories"}), ()),
    "system-prompt": (frozenset({"prompt", "instructions", "programming"}), ()),
    "role-header": (frozenset({"system", "assistant", "developer", "judge", "judges", "ai"}),
                    ()),
    "chat-template": (frozenset(), ("<|", "inst]", "<<", "_of_turn>", "##")),
    "spotlight-marker": (frozenset(), ("untrusted",)),
}
#: every ASCII character but a-z to a space: an ASCII text's words are then its split()
_LETTERS_ONLY = str.maketrans({c: " " for c in range(128) if not ord("a") <= c <= ord("z")})


def _rules_for(skeleton: str) -> Iterable[_Rule]:
    """The rules that could match `skeleton`: those whose triggers it has (every rule when it
    is not ASCII, where case folding reaches past the ASCII letters)."""
    if not skeleton.isascii():
        return RULES
    lowered = skeleton.lower()
    wanted = 0   # a bit per rule, in RULES' order
    # its words: the runs of letters (what `[a-z]+` finds, a third faster on a reply)
    for word in _TRIGGER_WORDS.keys() & set(lowered.translate(_LETTERS_ONLY).split()):
        wanted |= _TRIGGER_WORDS[word]
    for mark, rules in _TRIGGER_MARKS:
        if mark in lowered:
            wanted |= rules
    return [rule for bit, rule in enumerate(RULES) if wanted >> bit & 1]


def _trigger_index() -> tuple[dict[str, int], tuple[tuple[str, int], ...]]:
    """`_TRIGGERS` turned around: each trigger word, and each substring, with the rules it
    triggers as bits (1 << the rule's place in RULES), so a text's words are looked up once
    rather than set against every rule's."""
    words: dict[str, int] = {}
    marks: dict[str, int] = {}
    for bit, rule in enumerate(RULES):
        rule_words, rule_marks = _TRIGGERS[rule.name]
        for word in rule_words:
            words[word] = words.get(word, 0) | 1 << bit
        for mark in rule_marks:
            marks[mark] = marks.get(mark, 0) | 1 << bit
    return words, tuple(marks.items())


_TRIGGER_WORDS, _TRIGGER_MARKS = _trigger_index()


def _shown(text: str) -> str:
    """`text` for an excerpt: invisible characters written as <U+XXXX>, cut to a readable size."""
    shown = "".join(f"<U+{ord(ch):04X}>" if glyphs.is_invisible(ch) and ch != "\t" else ch
                    for ch in text)
    return shown if len(shown) <= EXCERPT_CHARS else shown[: EXCERPT_CHARS - 1] + "…"


def _phrases(text: str, source: str) -> Iterator[Finding]:
    skeleton = glyphs.fold(text)
    for rule in _rules_for(skeleton.text):
        for match in rule.pattern.finditer(skeleton.text):
            before = skeleton.text[max(0, match.start() - 12):match.start()]
            if rule.kind is FindingKind.PERSONA and _NEGATED.search(before):
                continue  # "don't pretend you are" is talk about someone, not to the model
            start, end = skeleton.source_span(*match.span())
            yield Finding(kind=rule.kind, rule=rule.name, reason=rule.reason, start=start,
                          end=end, excerpt=_shown(text[start:end]), source=source)


class _Hidden(IntEnum):
    VISIBLE = 0
    TAG = 1
    ZERO_WIDTH = 2
    BIDI = 3


@lru_cache(maxsize=8192)
def _hidden_class(ch: str) -> _Hidden:
    if ch.isascii():
        return _Hidden.VISIBLE  # ASCII controls are cleaned away, not hidden text
    if glyphs.is_tag(ch):
        return _Hidden.TAG
    if ch in glyphs.BIDI_CONTROLS:
        return _Hidden.BIDI
    return _Hidden.ZERO_WIDTH if glyphs.is_invisible(ch) and ch != "\x85" else _Hidden.VISIBLE


def _hidden_runs(text: str) -> Iterator[tuple[_Hidden, int, int]]:
    """Maximal runs of hidden characters of one class, as (class, start, end)."""
    if text.isascii():
        return
    position = 0
    for hidden, run in itertools.groupby(map(_hidden_class, text)):
        length = sum(1 for _ in run)
        if hidden is not _Hidden.VISIBLE:
            yield hidden, position, position + length
        position += length


def _hidden_finding(hidden: _Hidden, run: str) -> tuple[str, FindingKind, str, str] | None:
    """(rule, kind, reason, excerpt) for a run of hidden characters, None when it is ordinary."""
    if hidden is _Hidden.TAG:
        decoded = "".join(chr(ord(ch) - glyphs.TAG_FIRST) for ch in run
                          if 0x20 <= ord(ch) - glyphs.TAG_FIRST < 0x7F)
        return ("unicode-tags", FindingKind.HIDDEN_TAGS,
                f"hides text in invisible Unicode tag characters: {decoded!r}",
                _shown(decoded or run))
    if hidden is _Hidden.BIDI:
        return ("bidi-control", FindingKind.BIDI_CONTROL,
                "reorders the text it shows with bidirectional controls", _shown(run))
    if len(run) < 2 or (len(run) == 2 and set(run) <= _EMOJI_JOINERS):
        return None  # one alone, or an emoji's joiner and selector (🏳️‍🌈), is ordinary
    return ("zero-width-run", FindingKind.ZERO_WIDTH,
            f"holds {len(run)} invisible characters in a row", _shown(run))


def _hidden(text: str, source: str) -> Iterator[Finding]:
    for hidden, start, end in _hidden_runs(text):
        found = _hidden_finding(hidden, text[start:end])
        if found is not None:
            rule, kind, reason, excerpt = found
            yield Finding(kind=kind, rule=rule, reason=reason, start=start, end=end,
                          excerpt=excerpt, source=source)


def scan(text: str, *, source: str = "") -> tuple[Finding, ...]:
    """Every passage of `text` addressed to the AI, in order of position."""
    found = _scan(text)
    if not source or not found:
        return found
    return tuple(dataclasses.replace(f, source=source) for f in found)


class _Remembered:
    """The findings of the last `size` texts screened. A long text is keyed by a 128-bit digest,
    so what is kept is a few dozen bytes however long the text was (a worker runs for weeks;
    model outputs and appealed messages can be tens of kilobytes); a short one is its own key."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.found: OrderedDict[str | bytes, tuple[Finding, ...]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str | bytes) -> tuple[Finding, ...] | None:
        with self.lock:
            found = self.found.get(key)
            if found is not None:
                self.found.move_to_end(key)
            return found

    def put(self, key: str | bytes, found: tuple[Finding, ...]) -> None:
        with self.lock:
            self.found[key] = found
            while len(self.found) > self.size:
                self.found.popitem(last=False)


_REMEMBERED = _Remembered(SCANNED_TEXTS)


def _scan(text: str) -> tuple[Finding, ...]:
    """`scan` without a source, remembered: a debate's transcript is rendered again for every
    step and every judge, so the same outputs are screened many times (16 patterns each)."""
    key = text if len(text) <= SHORT_TEXT else hashlib.blake2b(
        text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    remembered = _REMEMBERED.get(key)
    if remembered is not None:
        return remembered
    found = {(f.rule, f.start, f.end): f for f in (*_phrases(text, ""), *_hidden(text, ""))}
    result = tuple(sorted(found.values(), key=lambda f: (f.start, f.end, f.rule)))
    _REMEMBERED.put(key, result)
    return result


def summary(findings: Iterable[Finding]) -> str:
    """One line for a reviewer: what was found where, e.g. "appealed message: tells the model to
    drop its instructions ('ignore previous instructions')"."""
    parts = [f"{f.source + ': ' if f.source else ''}{f.reason} ({f.excerpt!r})" for f in findings]
    return "; ".join(parts)
