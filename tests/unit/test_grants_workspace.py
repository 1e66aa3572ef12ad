"""A signed value's workspace (grants.py): sealed and read back with the rest, never read as
the operator's, and absent from values signed without one (an earlier version's)."""

from __future__ import annotations

import pytest
from itsdangerous import URLSafeTimedSerializer

from bot.service.grants import Identity, Purpose, Scope, seal, unseal
from storage.tenancy import Workspace

KEY = b"k" * 32
NOW = 1_000_000.0


@pytest.mark.parametrize(("team", "enterprise", "workspace"), [
    ("T1ONE", "", Workspace("T1ONE")),
    ("T5INORG", "E1ORG", Workspace("T5INORG", "E1ORG")),
    ("", "", None),
])
def test_the_workspace_is_sealed_and_read_back(team: str, enterprise: str,
                                               workspace: Workspace | None) -> None:
    sealed = seal(KEY, Purpose.SESSION, Identity("UREV", NOW + 60, "slack", Scope.REVIEW, 3,
                                                 team, enterprise))
    found = unseal(KEY, Purpose.SESSION, sealed, clock=lambda: NOW)
    assert found is not None
    assert (found.user, found.generation, found.team_id, found.enterprise_id) == (
        "UREV", 3, team, enterprise)
    assert found.workspace == workspace


def _signed(data: dict[str, object]) -> str:
    return str(URLSafeTimedSerializer(KEY, salt=Purpose.SESSION.value).dumps(data))


def test_a_value_naming_a_workspace_is_never_the_operators() -> None:
    forged_scope = _signed({"u": "", "exp": int(NOW + 60), "s": "full", "t": "T1ONE"})
    found = unseal(KEY, Purpose.SESSION, forged_scope, clock=lambda: NOW)
    assert found is not None and found.scope is Scope.REVIEW and found.team_id == "T1ONE"


def test_an_earlier_versions_value_names_no_workspace() -> None:
    before = _signed({"u": "UREV", "exp": int(NOW + 60), "via": "link", "s": "review", "g": 0})
    found = unseal(KEY, Purpose.SESSION, before, clock=lambda: NOW)
    assert found is not None and found.workspace is None and found.team_id == ""


@pytest.mark.parametrize("team", [7, ["T1"], {"t": 1}])
def test_a_workspace_that_is_not_text_opens_nothing(team: object) -> None:
    bad = _signed({"u": "UREV", "exp": int(NOW + 60), "s": "review", "t": team})
    assert unseal(KEY, Purpose.SESSION, bad, clock=lambda: NOW) is None
