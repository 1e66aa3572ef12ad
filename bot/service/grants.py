"""Signed, expiring values that say who someone is: the console's session cookie and the reviewer
links and tokens an operator issues (`dialectic reviewers link U123`).

Each is `itsdangerous`'s URL-safe, timestamped signature over `{"u": user, "exp": epoch, "s":
scope, "g": generation}` (and, in multi-workspace mode, `"t": team, "e": enterprise`: the Slack
workspace it belongs to, whose records alone it opens) with a salt per purpose, so a reviewer
link cannot be replayed as a session and neither as anything else signed with the same key.
The scope says what it opens: everything (the operator, signed in with the API token) or a
reviewer's part (reading debates, deciding reviews; bot/service/sessions.py checks the person
is still a reviewer at each use).
The key comes from `DIALECTIC_API_TOKEN` (every replica and the CLI share it); without a token
a process signs its sessions with a key of its own (it serves loopback only then) and cannot
issue reviewer links.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from itsdangerous import BadData, URLSafeTimedSerializer

from bot.service.settings import ServiceSettings
from engine.errors import ConfigurationError, DialecticError, InvalidRequest
from engine.vocabulary import MAX_LINK_DAYS
from storage.tenancy import Workspace

MAX_GRANT_SECONDS = MAX_LINK_DAYS * 24 * 3600   # nothing signed here lives longer than 30 days
SESSION_SECONDS = 12 * 3600
LINK_SECONDS = 7 * 24 * 3600


class Purpose(StrEnum):
    """What a signed value is for; each is signed with its own salt."""

    SESSION = "console-session"
    REVIEWER = "reviewer-grant"
    SIGN_IN = "sign-in-state"      # an identity provider's round trip: `user` is its state


class Scope(StrEnum):
    """What a signed value opens."""

    FULL = "full"       # the operator's (the API token's sessions): everything
    REVIEW = "review"   # a reviewer's: reading the debates and deciding reviews, nothing else


class SignInFailed(DialecticError):
    """The identity provider did not vouch for anyone (a refused, expired or forged answer)."""


@dataclass(frozen=True, slots=True)
class Person:
    """Whom an identity provider vouched for: a Slack user id, and the workspace (team id, and
    its Enterprise Grid organisation's id) they signed in with."""

    user: str
    team_id: str = ""
    enterprise_id: str = ""


class IdentityProvider(Protocol):
    """Who someone is, by OpenID Connect (Slack's "Sign in with Slack" when configured)."""

    label: str

    def authorize_url(self, *, state: str, nonce: str, redirect_uri: str) -> str:
        """Where to send the browser to sign in; it comes back to `redirect_uri`."""
        ...

    async def identify(self, *, code: str, redirect_uri: str, nonce: str) -> Person:
        """Whom the provider's `code` stands for; SignInFailed otherwise."""
        ...


class WorkspaceDirectory(Protocol):
    """Multi-workspace mode's answers about a Slack workspace (bot/slack/directory.py): whether
    it is installed now, and whether someone administers it (Slack's `users.info`, asked with
    that workspace's own token)."""

    async def installed(self, *, team_id: str, enterprise_id: str | None) -> Workspace | None:
        """The workspace while the app is installed in it (or org-wide in its organisation)."""
        ...

    async def is_admin(self, user: str, workspace: Workspace) -> bool:
        """Whether `user` is an admin or owner of `workspace` (False when Slack cannot say)."""
        ...


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a signed value names: a Slack user id (a reviewer), or "" for the console's operator
    (signed in with the API token); until when; how they signed in; what it opens; for a
    session, the sign-out generation it began in (bot/service/sessions.py); and, in
    multi-workspace mode, the workspace it belongs to (`team_id`, and `enterprise_id` for an
    org-wide install): it opens that workspace's records only."""

    user: str
    expires_at: float
    via: str
    scope: Scope = Scope.REVIEW
    generation: int = 0
    team_id: str = ""
    enterprise_id: str = ""

    @property
    def workspace(self) -> Workspace | None:
        """The workspace whose records alone it opens; None: not scoped to one."""
        return Workspace(self.team_id, self.enterprise_id or None) if self.team_id else None


@dataclass(frozen=True, slots=True)
class BearerRefusal:
    """Why an identity provider's access token was refused: the HTTP status (401, or 403 for a
    valid token without the scope), RFC 6750's error code, and one line for a person."""

    status: int
    error: str
    description: str


class ResourceGuard(Protocol):
    """An OAuth resource server's side of a path (`/mcp`, bot/mcp/authorization.py): what a
    refusal says in `WWW-Authenticate`, and who an identity provider's access token names."""

    def challenge(self, refusal: BearerRefusal | None = None) -> str: ...

    async def verify(self, token: str) -> Identity | BearerRefusal: ...


def key_of(settings: ServiceSettings) -> bytes | None:
    """The signing key shared by every process of the service; None without an API token."""
    token = settings.api_token
    if token is None:
        return None
    return hashlib.sha256(b"dialectic grants v1\0" + token.get_secret_value().encode()).digest()


def seal(key: bytes, purpose: Purpose, identity: Identity) -> str:
    """The signed value for `identity`."""
    serializer = URLSafeTimedSerializer(key, salt=purpose.value)
    data: dict[str, str | int] = {"u": identity.user, "exp": int(identity.expires_at),
                                  "via": identity.via, "s": identity.scope.value,
                                  "g": identity.generation}
    if identity.team_id:
        data.update(t=identity.team_id, e=identity.enterprise_id)
    return str(serializer.dumps(data))


def unseal(key: bytes, purpose: Purpose, value: str, *,
           clock: Callable[[], float] = time.time) -> Identity | None:
    """The identity `value` names, if it is signed with `key` for `purpose` and not expired."""
    if not value:
        return None
    serializer = URLSafeTimedSerializer(key, salt=purpose.value)
    try:
        data = serializer.loads(value, max_age=MAX_GRANT_SECONDS)
    except BadData:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("u"), str):
        return None
    expires, generation = data.get("exp"), data.get("g", 0)
    if not isinstance(expires, int) or expires <= clock() or not isinstance(generation, int):
        return None
    team, enterprise = data.get("t") or "", data.get("e") or ""
    if not isinstance(team, str) or not isinstance(enterprise, str):
        return None
    # anything not signed as the operator's (who names no workspace) opens a reviewer's part
    scope = Scope.FULL if data.get("s") == Scope.FULL.value and not team else Scope.REVIEW
    return Identity(data["u"], float(expires), str(data.get("via") or ""), scope, generation,
                    team, enterprise)


def reviewer_grant(settings: ServiceSettings, user: str, *, seconds: float = LINK_SECONDS,
                   clock: Callable[[], float] = time.time,
                   workspace: Workspace | None = None) -> str:
    """A reviewer token for `user` (review scope; of `workspace` only, when given), valid for
    `seconds`; ConfigurationError without a token to sign it with (the server could not check
    it), InvalidRequest for no user. Whether `user` is a reviewer (of that workspace) is
    sessions.issue_reviewer_grant's question."""
    if not user.strip():
        raise InvalidRequest("a reviewer link names a reviewer: give their Slack user id "
                             "(e.g. U0123ABC)")
    key = key_of(settings)
    if key is None:
        raise ConfigurationError("reviewer links are signed with DIALECTIC_API_TOKEN: set it "
                                 "(the same value as the server's), then issue the link again")
    if not 0 < seconds <= MAX_GRANT_SECONDS:
        raise ConfigurationError(f"a reviewer link lives at most {MAX_GRANT_SECONDS // 86400} "
                                 "days")
    team, enterprise = (workspace.team_id, workspace.enterprise_id or "") if workspace else ("", "")
    return seal(key, Purpose.REVIEWER, Identity(user.strip(), clock() + seconds, "link",
                                                team_id=team, enterprise_id=enterprise))


def reviewer_link(settings: ServiceSettings, grant: str) -> str:
    """The console URL that signs the grant's reviewer in."""
    return settings.public_url.rstrip("/") + f"/signin/link?grant={grant}"


__all__ = ["LINK_SECONDS", "SESSION_SECONDS", "Identity", "IdentityProvider", "Person",
           "Purpose", "Scope", "SignInFailed", "WorkspaceDirectory", "key_of", "reviewer_grant",
           "reviewer_link", "seal", "unseal"]
