"""Who may decide reviews (the service's rule, the same for every surface): user ids, and
members of user groups, which Slack's directory caches from usergroups.users.list."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from bot.service.reviews import Reviewers, split_reviewers
from bot.slack.usergroups import SlackUserGroups
from tests.fakes.slack_server import FakeSlack


def test_split_reviewers_ignores_what_is_not_an_id() -> None:
    users, groups = split_reviewers(["U1", " W2 ", "S3", "@alice", "", "C4"])
    assert users == {"U1", "W2"} and groups == ("S3",)


async def test_group_members_are_cached_and_survive_a_failing_lookup() -> None:
    now = [0.0]
    async with FakeSlack() as fake:
        fake.set_usergroup("S1", ["UCAROL"])
        client = AsyncWebClient(token="xoxb-test", base_url=fake.base_url)
        groups = SlackUserGroups(client, ttl=60, clock=lambda: now[0])
        reviewers = Reviewers(["U1", "S1"], groups)
        assert await reviewers.is_reviewer("U1") and await reviewers.is_reviewer("UCAROL")
        assert not await reviewers.is_reviewer("UMALLORY")
        assert len(fake.calls_to("usergroups.users.list")) == 1  # cached
        now[0] = 61.0
        fake.fail("usergroups.users.list", "ratelimited")
        assert await reviewers.is_reviewer("UCAROL")  # last known members
        fake.set_usergroup("S1", ["UDAVE"])
        now[0] = 200.0
        assert await reviewers.is_reviewer("UDAVE") and not await reviewers.is_reviewer("UCAROL")
        empty = Reviewers([], groups)
        assert not empty.configured and not await empty.is_reviewer("U1")


async def test_without_a_group_directory_only_listed_users_review() -> None:
    reviewers = Reviewers(["U1", "S1"])
    assert await reviewers.is_reviewer("U1")
    assert not await reviewers.is_reviewer("UCAROL")   # nobody can say who is in S1
