"""Slack answering with something that is not Slack: a proxy's HTML error page, plain text, HTML
labelled as JSON, an empty body, a JSON array. Every such reply is one `SlackApiError`
(`not_json`) saying what came back; the error helpers never raise on any failure; and each path
that calls Slack goes on without it: the review request is posted without its thread link, the
debate completes, the person is told, nothing logs a traceback."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.reviews import Reviewers
from bot.slack.client import NOT_JSON, WebClient, error_code, slack_error
from bot.slack.usergroups import SlackUserGroups
from storage import reviews
from storage.records import DebateStatus
from tests.fakes.slack_server import FakeSlack
from tests.support.slack_fixtures import (
    CHANNEL,
    REVIEW_CHANNEL,
    STRICT,
    Harness,
    slack,
    slack_harness,
)

# (HTTP status, content type, body; None: the fake's canned page for that content type)
PROXY_REPLIES = [
    pytest.param(502, "text/html", None, id="html-502"),
    pytest.param(200, "text/html", "<html>Sign in to the guest Wi-Fi</html>", id="html-200"),
    pytest.param(503, "text/plain", None, id="text-503"),
    pytest.param(200, "text/plain", None, id="text-200"),
    pytest.param(200, "application/json", None, id="html-labelled-json-200"),
    pytest.param(503, "application/json", None, id="html-labelled-json-503"),
    pytest.param(500, "application/json", "", id="empty-json-500"),
    pytest.param(200, "application/json", "[1, 2]", id="json-array-200"),
]
slack = slack  # the fixture
FEW = [PROXY_REPLIES[0], PROXY_REPLIES[3], PROXY_REPLIES[4]]  # for the whole-stack paths


@pytest.mark.parametrize(("status", "content_type", "body"), PROXY_REPLIES)
async def test_a_reply_that_is_not_slack_is_one_clear_error(
        status: int, content_type: str, body: str | None) -> None:
    async with FakeSlack() as fake:
        client = WebClient(token="xoxb-test", base_url=fake.base_url)
        fake.not_json("chat.postMessage", status, content_type=content_type, body=body)
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel=CHANNEL, text="hi")
        assert error_code(caught.value) == NOT_JSON
        said = slack_error(caught.value)
        assert f"HTTP {status} {content_type}" in said and "xoxb" not in said
        assert (await client.chat_postMessage(channel=CHANNEL, text="hi"))["ok"]


@pytest.mark.parametrize(("status", "content_type", "body"), PROXY_REPLIES)
async def test_the_error_helpers_never_raise_on_what_the_plain_sdk_raises(
        status: int, content_type: str, body: str | None) -> None:
    """slack_sdk itself hands back a SlackApiError around a raw aiohttp response or a string
    (or raises AttributeError, which WebClient prevents): the helpers read any of them."""
    async with FakeSlack() as fake:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        fake.not_json("chat.getPermalink", status, content_type=content_type, body=body)
        try:
            await client.chat_getPermalink(channel=CHANNEL, message_ts="1.2")
        except SlackApiError as exc:
            assert error_code(exc) and slack_error(exc)
        except AttributeError:  # slack_sdk's own failure on a 200 that is not an object
            pass


async def test_a_lookup_of_reviewers_survives_a_proxy_page() -> None:
    async with FakeSlack() as fake:
        fake.set_usergroup("S1", ["UCAROL"])
        groups = SlackUserGroups(WebClient(token="xoxb-test", base_url=fake.base_url), ttl=0)
        reviewers = Reviewers(["U1", "S1"], groups)
        assert await reviewers.is_reviewer("UCAROL")
        fake.not_json("usergroups.users.list", 200, content_type="text/plain")
        assert await reviewers.is_reviewer("UCAROL")  # the last known members


async def _review_request(h: Harness) -> dict[str, object]:
    await h.command("Should we rewrite the scheduler in Rust? --preset strict")
    debate = await h.one_debate()
    assert (await h.wait_finished(debate.id)).status is DebateStatus.AWAITING_REVIEW
    call = await h.fake.wait_for("chat.postMessage",
                                 lambda c: c.args.get("channel") == REVIEW_CHANNEL)

    async def stored() -> bool:
        async with h.rt.db.transaction(readonly=True) as session:
            review = await reviews.get_by_debate(session, debate.id)
        return review is not None and bool(review.message_ts)

    await h.wait_until(stored, what="the review request's place to be stored")
    await h.wait_reply(CHANNEL, h.fake.messages(CHANNEL)[0]["ts"], "👀")
    return dict(call.args)


@pytest.mark.parametrize(("status", "content_type", "body"), [
    pytest.param(200, "", "slack-error", id="slack-error"), *FEW])
async def test_a_failing_permalink_never_drops_the_review_request(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int, content_type: str,
        body: str | None) -> None:
    async with slack_harness(tmp_path, presets=STRICT) as h:
        if body == "slack-error":
            h.fake.fail("chat.getPermalink", "internal_error", times=100)
        else:
            h.fake.not_json("chat.getPermalink", status, content_type=content_type, body=body,
                            times=100)
        posted = await _review_request(h)
        assert h.fake.calls_to("chat.getPermalink")
        text = str(posted["blocks"])
        assert "/debates/" in text and "fake.slack.com/archives" not in text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("status", "content_type", "body"), FEW)
async def test_a_debate_completes_when_every_post_meets_a_proxy_page(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, status: int, content_type: str,
        body: str | None) -> None:
    async with slack_harness(tmp_path) as h:
        await h.command("Should we adopt Bazel? --mode simple")
        root = await h.fake.wait_for("chat.postMessage")
        for method in ("chat.postMessage", "chat.update", "chat.getPermalink"):
            h.fake.not_json(method, status, content_type=content_type, body=body, times=1000)
        debate = await h.one_debate()
        done = await h.wait_finished(debate.id)
        await h.notifier.drain()
    assert done.status is DebateStatus.COMPLETED and root.ok
    assert any(c.response.get("not_json") is not None for c in h.fake.calls)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("status", "content_type", "body"), FEW)
async def test_a_command_whose_first_post_meets_a_proxy_page_says_so(
        slack: Harness, status: int, content_type: str, body: str | None) -> None:
    slack.fake.not_json("chat.postMessage", status, content_type=content_type, body=body)
    await slack.command("Should we adopt Bazel?")
    call = await slack.fake.wait_for("response_url")
    assert "nothing was started" in call.args["text"]
    assert f"HTTP {status}" in call.args["text"]
    assert await slack.debates() == []


async def test_a_form_that_meets_a_proxy_page_says_so(slack: Harness) -> None:
    slack.fake.not_json("views.open", 502)
    await slack.command("")
    call = await slack.fake.wait_for("response_url")
    assert "could not open the form" in call.args["text"] and "HTTP 502" in call.args["text"]


async def test_bolt_does_not_warn_that_the_token_in_the_environment_is_unused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """Bolt reads SLACK_BOT_TOKEN itself; the client we hand it is built from the same token."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    caplog.set_level(logging.DEBUG)
    async with slack_harness(tmp_path, workers=0) as h:
        assert (await h.command("help")).status == 200
    assert not [r for r in caplog.records if "will be unused" in r.getMessage()]
    assert [r for r in caplog.records if r.name == "dialectic.bolt"]  # Bolt did log, to us
