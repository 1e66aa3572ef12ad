"""mrkdwn helpers and the Block Kit pieces every view shares: escaping of hostile text,
safe truncation and splitting, figures, help and errors, and fitting a message to Slack's limits."""

from __future__ import annotations

import json
import re

import pytest

from bot.slack.mrkdwn import channel, chunk, date_fmt, escape, link, safe_cut, truncate, user
from bot.slack.views import common as B
from bot.slack.views import notices
from bot.slack.views import review as R
from tests.support.slack_view_fixtures import (
    TRANSCRIPT,
    WHEN,
    assert_message_valid,
    text_of,
)

# --------------------------------------------------------------------------------------------
# mrkdwn helpers


@pytest.mark.parametrize(("text", "expected"), [
    ("plain", "plain"),
    ("a & b", "a &amp; b"),
    ("<!channel>", "&lt;!channel&gt;"),
    ("<@U123>", "&lt;@U123&gt;"),
    ("<https://x|y>", "&lt;https://x|y&gt;"),
    ("&lt;", "&amp;lt;"),
    ("*bold* _it_ `code`", "*bold* _it_ `code`"),
    ("", ""),
])
def test_escape(text: str, expected: str) -> None:
    assert escape(text) == expected


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("short", 10, "short"),
    ("exactly10!", 10, "exactly10!"),
    ("hello world", 6, "hello…"),
    ("a &amp; b", 5, "a…"),           # would cut "&amp;" after "&a": backs off to before it
    ("a &amp; b", 8, "a &amp;…"),
    ("x &lt;y&gt;", 6, "x…"),
    ("see <https://a.b|link> now", 10, "see…"),
    ("abc", 0, ""),
    ("abcdef", 1, "…"),
])
def test_truncate(text: str, limit: int, expected: str) -> None:
    assert truncate(text, limit) == expected


def test_truncate_custom_suffix() -> None:
    assert truncate("hello world", 8, suffix=" [...]") == "he [...]"


@pytest.mark.parametrize("limit", range(1, 40))
def test_truncate_never_splits_an_entity(limit: int) -> None:
    text = escape("a&b<c>d & e < f > g &&& h")
    out = truncate(text, limit)
    assert len(out) <= limit
    body = out.removesuffix("…")
    assert re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", body), body


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("", 10, []),
    ("short", 10, ["short"]),
    ("para one\n\npara two", 12, ["para one", "para two"]),
    ("line one\nline two\nline three", 18, ["line one\nline two", "line three"]),
    ("word " * 6, 12, ["word word", "word word", "word word"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
    ("aaa &amp; bbb", 6, ["aaa", "&amp;", "bbb"]),
    ("xx&amp;yy", 4, ["xx", "&amp", ";yy"]),  # an entity longer than the limit: no choice
])
def test_chunk(text: str, limit: int, expected: list[str]) -> None:
    assert chunk(text, limit) == expected


def test_chunk_respects_limit_and_keeps_entities() -> None:
    text = escape(("Claim & evidence <here>. " * 40 + "\n\n") * 10)
    pieces = chunk(text, 500)
    assert all(0 < len(p) <= 500 for p in pieces)
    assert all(re.fullmatch(r"(?:[^&]|&(?:amp|lt|gt);)*", p) for p in pieces)
    assert "".join(pieces).replace(" ", "").replace("\n", "") == \
        text.replace(" ", "").replace("\n", "")


def test_chunk_rejects_non_positive_limit() -> None:
    with pytest.raises(ValueError, match="positive"):
        chunk("x", 0)


@pytest.mark.parametrize(("user_id", "expected"), [
    ("U0123ABC", "<@U0123ABC>"),
    ("W0123ABC", "<@W0123ABC>"),
    ("u0123", "u0123"),
    ("U123>|<!channel", "U123&gt;|&lt;!channel"),
    ("cli", "cli"),
    ("", ""),
])
def test_user(user_id: str, expected: str) -> None:
    assert user(user_id) == expected


@pytest.mark.parametrize(("channel_id", "expected"), [
    ("C0123", "<#C0123>"), ("G77", "<#G77>"), ("#general", "#general"), ("C1>", "C1&gt;"),
])
def test_channel(channel_id: str, expected: str) -> None:
    assert channel(channel_id) == expected


@pytest.mark.parametrize(("url", "label", "expected"), [
    ("https://x.io/a", "A & B", "<https://x.io/a|A &amp; B>"),
    ("http://x.io/?a=1&b=2", "q", "<http://x.io/?a=1&amp;b=2|q>"),
    ("javascript:alert(1)", "x", "x"),
    ("https://x.io/a|<!channel>", "lbl", "lbl"),
    ("https://x.io/a b", "<b>", "&lt;b&gt;"),
    ("ftp://x.io/", "f", "f"),
    ("https://", "n", "n"),
])
def test_link(url: str, label: str, expected: str) -> None:
    assert link(url, label) == expected


def test_date_fmt() -> None:
    assert date_fmt(WHEN) == (
        "<!date^1714566600^{date_short_pretty} {time}|2024-05-01 12:30 UTC>")
    assert date_fmt(WHEN.replace(tzinfo=None)) == date_fmt(WHEN)


def test_safe_cut_backs_off_inside_a_link() -> None:
    text = "ab <https://x.io|label> cd"
    assert safe_cut(text, 10) == 3
    assert safe_cut(text, 3) == 3


@pytest.mark.parametrize(("done", "total", "expected"), [
    (3, 5, "▰▰▰▱▱ 3/5"), (0, 4, "▱▱▱▱ 0/4"), (4, 4, "▰▰▰▰ 4/4"), (0, 0, "▱ 0/0"),
    (20, 40, "▰" * 10 + "▱" * 10 + " 20/40"),
])
def test_progress_bar(done: int, total: int, expected: str) -> None:
    assert B.progress_bar(done, total) == expected


@pytest.mark.parametrize(("amount", "expected"), [
    (0, "$0.00"), (0.0012, "$0.0012"), (0.0734, "$0.0734"), (0.5, "$0.50"), (0.081, "$0.081"),
    (1234.5, "$1,234.50")])
def test_usd(amount: float, expected: str) -> None:
    assert B.usd(amount) == expected



# --------------------------------------------------------------------------------------------
# help, errors, fitting


def test_help_and_error() -> None:
    usage = "`/debate <topic>` starts a debate; `/debate budget` shows spend & cap."
    help_message = notices.help_text(usage)
    assert_message_valid(help_message)
    assert "&lt;topic&gt;" in text_of(help_message) and "&amp; cap" in help_message.text
    failure = notices.error("I am not in <#C1|general> & cannot post", usage)
    assert_message_valid(failure)
    assert failure.text == "I am not in &lt;#C1|general&gt; &amp; cannot post"
    assert "*Usage*" in text_of(failure)
    assert len(notices.error("no usage").blocks) == 1




def test_fit_keeps_head_and_tail_and_notes_the_cut() -> None:
    head, tail = [B.header("h")], [R.review_buttons("r")]
    body = [B.section("x" * 2900) for _ in range(60)]
    out = B.fit(head, body, tail, transcript_url=None)
    assert out[0] == head[0] and out[-1] == tail[0]
    assert "truncated — the full transcript is in the web console" in json.dumps(
        out[-2], ensure_ascii=False)
    assert len(json.dumps(out)) <= 12_000 and len(out) <= 50
    small = [B.section("y")] * 60
    out = B.fit(head, small, tail, transcript_url=TRANSCRIPT)
    assert len(out) == 50 and "truncated" in json.dumps(out[-2])
