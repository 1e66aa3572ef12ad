"""Who may decide reviews: user ids, and user-group members cached from usergroups.users.list."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.reviewers import ReviewerDirectory, split_reviewers
from tests.fakes.slack_server import FakeSlack


def test_split_reviewers_ignores_what_is_not_an_id() -> None:
    users, groups = split_reviewers(["U1", " W2 ", "S3", "@alice", "", "C4"])
    assert users == {"U1", "W2"} and groups == ("S3",)


async def test_group_members_are_cached_and_survive_a_failing_lookup() -> None:
    now = [0.0]
    async with FakeSlack() as fake:
        fake.set_usergroup("S1", ["UCAROL"])
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        directory = ReviewerDirectory(client, ["U1", "S1"], ttl=60, clock=lambda: now[0])
        assert await directory.is_reviewer("U1") and await directory.is_reviewer("UCAROL")
        assert not await directory.is_reviewer("UMALLORY")
        assert len(fake.calls_to("usergroups.users.list")) == 1  # cached
        now[0] = 61.0
        fake.fail("usergroups.users.list", "ratelimited")
        assert await directory.is_reviewer("UCAROL")  # last known members
        fake.set_usergroup("S1", ["UDAVE"])
        now[0] = 200.0
        assert await directory.is_reviewer("UDAVE") and not await directory.is_reviewer("UCAROL")
        empty = ReviewerDirectory(client, [])
        assert not empty.configured and not await empty.is_reviewer("U1")
