"""Whose a debate is and who may see or review it (storage/tenancy.py), as a table."""

from __future__ import annotations

import pytest

from storage.records import Origin
from storage.tenancy import Workspace, may_review, may_see, owner_of

HOME = Workspace("T1", home=True)
GUEST = Workspace("T2")          # installed too (later, with OAuth), not the operator's home
SLACK_T1 = Origin(surface="slack", team_id="T1", channel_id="C1")
SLACK_T2 = Origin(surface="slack", team_id="T2", channel_id="C2")
API = Origin(surface="api")
DIGEST = Origin(surface="schedule", schedule_id="morning", channel_id="C1")
UNPOSTED = Origin(surface="schedule", schedule_id="nightly")
EVAL = Origin(surface="eval")


@pytest.mark.parametrize(("workspace", "origin", "sees", "reviews"), [
    (HOME, SLACK_T1, True, True),
    (HOME, SLACK_T2, False, False),        # another workspace's: never
    (HOME, API, False, True),              # the operator's: reviewed in the operator's channel
    (HOME, EVAL, False, True),
    (HOME, DIGEST, True, True),            # posted in the home workspace by its schedule
    (HOME, UNPOSTED, False, True),
    (GUEST, SLACK_T2, True, True),
    (GUEST, SLACK_T1, False, False),
    (GUEST, API, False, False),            # the operator's debates never reach a guest
    (GUEST, DIGEST, False, False),
    (None, SLACK_T1, False, False),        # no workspace: nothing
    (None, API, False, False),
    (Workspace(""), Origin(surface="slack", team_id=""), False, False),
])
def test_who_sees_and_reviews_what(workspace: Workspace | None, origin: Origin, sees: bool,
                                   reviews: bool) -> None:
    assert may_see(workspace, origin) is sees
    assert may_review(workspace, origin) is reviews


@pytest.mark.parametrize(("origin", "home", "owner"), [
    (SLACK_T2, "T1", "T2"), (API, "T1", None), (DIGEST, "T1", "T1"), (DIGEST, None, None),
    (UNPOSTED, "T1", None),
])
def test_a_debate_belongs_to_its_workspace_or_the_operator(origin: Origin, home: str | None,
                                                           owner: str | None) -> None:
    assert owner_of(origin, home=home) == owner
