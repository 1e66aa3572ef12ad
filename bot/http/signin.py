"""Signing in to the console as a reviewer: "Sign in with Slack" (OpenID Connect, where Slack is
configured with a client id and secret) or an operator-issued reviewer link
(`dialectic reviewers link U123`); signing out. Each begins the signed session (session.py) with
a reviewer's scope, for a configured reviewer only; who may decide is still the review desk's
rule, checked at every decision.

A link is not a sign-in by itself: opening it (GET) shows a page whose button POSTs the grant
from this origin, so a cross-site page cannot sign a browser in as someone else (login CSRF).
A session begun from a link ends when the link does, if that is sooner.

In multi-workspace mode each sign-in is one workspace's: a link carries the workspace it was
issued for, and Slack's answer names the workspace the person signed in with. The session is
that workspace's, begun only while it is installed and the person reviews it (its own reviewers,
else the operator's) or, signed in with Slack, administers it (bot/service/sessions.py); a
refusal is one line on the page, in the log and in the audit chain, and begins nothing."""

from __future__ import annotations

import secrets
import time

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.http import session
from bot.http.pages import html, render
from bot.http.redirects import same_origin_path
from bot.http.routes import Reply, Route, route, route_with_query
from bot.http.state import RUNTIME, SESSION_KEY
from bot.service import sessions
from bot.service.grants import Identity, Purpose, Scope, SignInFailed, key_of, seal, unseal
from bot.service.sessions import VIA_SLACK

STATE_COOKIE = "dialectic_signin"
STATE_SECONDS = 600
CALLBACK = "/signin/slack/callback"
FORM = "application/x-www-form-urlencoded"


def local_path(request: web.Request, to: str) -> str:
    """`to` if a browser would read it as a place on this site, else "/" (redirects.py)."""
    return same_origin_path(to, request.url.origin())


class SignInQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    to: str = Field(default="/reviews", max_length=500, description="where to go after")


class LinkQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    grant: str = Field(default="", max_length=2000, description="the reviewer token")
    to: str = Field(default="/reviews", max_length=500, description="where to go after")


class CallbackQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str = Field(default="", max_length=2000, description="the provider's code")
    state: str = Field(default="", max_length=200, description="the round trip's state")
    error: str = Field(default="", max_length=200, description="the provider's refusal")


def _signin_page(request: web.Request, *, to: str, error: str = "", status: int = 200
                 ) -> web.Response:
    rt = request.app[RUNTIME]
    page = render("signin.html", slack=rt.sign_in is not None, to=local_path(request, to),
                  error=error, viewer=session.current(request))
    return html(page, status=status)


async def signin(request: web.Request, query: SignInQuery) -> web.Response:
    """How to sign in as a reviewer: with Slack where configured, or a reviewer link."""
    return _signin_page(request, to=query.to)


async def _grant_refusal(request: web.Request, grant: Identity | None, *, key: bool
                         ) -> str | None:
    """Why a reviewer link signs nobody in (None: it may)."""
    if grant is None:
        return ("this server has no DIALECTIC_API_TOKEN, so it issues no reviewer links"
                if not key else "that reviewer link is not valid or has expired: ask your "
                "operator for a new one")
    rt = request.app[RUNTIME]
    return await sessions.refusal(grant, desk=rt.reviews, db=None, workspaces=rt.workspaces)


async def _refused(request: web.Request, who: Identity, why: str, *, to: str
                   ) -> web.Response:
    """A sign-in refused: audited and logged in one line; the page says why; nothing begun."""
    rt = request.app[RUNTIME]
    await sessions.audit_sign_in(rt.db, who, refused=why, now=rt.service.clock())
    return _signin_page(request, to=to, error=why, status=403)


def _read_grant(request: web.Request, value: str) -> tuple[Identity | None, bool]:
    """(the reviewer grant `value` is, if genuine and unexpired; whether links can be read)."""
    key = key_of(request.app[RUNTIME].settings)
    if key is None:
        return None, False
    now = request.app[RUNTIME].service.clock().timestamp()
    return unseal(key, Purpose.REVIEWER, value.strip(), clock=lambda: now), True


async def signin_link(request: web.Request, query: LinkQuery) -> web.Response:
    """A reviewer link: a page whose button signs its reviewer in, when it is genuine."""
    grant, key = _read_grant(request, query.grant)
    why = await _grant_refusal(request, grant, key=key)
    if why is not None or grant is None:
        return _signin_page(request, to=query.to, error=why or "", status=403)
    page = render("signin_link.html", user=grant.user, grant=query.grant.strip(),
                  to=local_path(request, query.to), viewer=session.current(request))
    return html(page)


async def _link_form(request: web.Request) -> LinkQuery | None:
    """The link page's form (urlencoded, as browsers send it), or None for anything else."""
    if request.content_type != FORM:
        return None
    try:
        form = await request.post()
        return LinkQuery.model_validate({k: v for k, v in form.items() if isinstance(v, str)})
    except (ValueError, ValidationError):   # undecodable text, or not the fields we send
        return None


async def signin_link_post(request: web.Request) -> web.Response:
    """The reviewer link's button (or a pasted token): begins the reviewer's session, which ends
    no later than the link."""
    query = await _link_form(request)
    if query is None:
        return _signin_page(request, to="/reviews", status=400,
                            error="that sign-in form was not one this server sends")
    grant, key = _read_grant(request, query.grant)
    why = await _grant_refusal(request, grant, key=key)
    if grant is None:
        return _signin_page(request, to=query.to, error=why or "", status=403)
    if why is not None:
        return await _refused(request, grant, why, to=query.to)
    rt = request.app[RUNTIME]
    await sessions.audit_sign_in(rt.db, grant, refused=None, now=rt.service.clock())
    return await session.begin(request, grant.user, via="link", scope=Scope.REVIEW,
                               to=local_path(request, query.to), until=grant.expires_at,
                               workspace=grant.workspace)


def _redirect_uri(request: web.Request) -> str:
    return request.app[RUNTIME].settings.public_url.rstrip("/") + CALLBACK


async def signin_slack(request: web.Request, query: SignInQuery) -> web.Response:
    """To Slack's sign-in page, remembering (in a signed cookie) where to come back to."""
    provider = request.app[RUNTIME].sign_in
    if provider is None:
        return _signin_page(request, to=query.to, status=404,
                            error="Sign in with Slack is not configured on this server")
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    memo = seal(request.app[SESSION_KEY], Purpose.SIGN_IN,
                Identity(f"{state}.{nonce}", time.time() + STATE_SECONDS,
                         local_path(request, query.to)))
    found = web.HTTPFound(provider.authorize_url(state=state, nonce=nonce,
                                                 redirect_uri=_redirect_uri(request)))
    # Lax: the provider's redirect back is a cross-site navigation that must carry it
    found.set_cookie(STATE_COOKIE, memo, max_age=STATE_SECONDS, httponly=True, samesite="Lax",
                     secure=session.secure(request), path="/signin")
    raise found


async def signin_slack_callback(request: web.Request, query: CallbackQuery) -> web.Response:
    """Slack's answer: the code is exchanged for the person's user id; the session begins."""
    provider = request.app[RUNTIME].sign_in
    memo = unseal(request.app[SESSION_KEY], Purpose.SIGN_IN,
                  request.cookies.get(STATE_COOKIE, ""))
    state, _, nonce = memo.user.partition(".") if memo is not None else ("", "", "")
    if provider is None or memo is None or not query.state or \
            not secrets.compare_digest(query.state, state):
        return _signin_page(request, to="/reviews", status=400,
                            error="that sign-in could not be matched to this browser: try again")
    if query.error or not query.code:
        return _signin_page(request, to=memo.via, status=403,
                            error=f"Slack did not sign you in ({query.error or 'no code'})")
    try:
        person = await provider.identify(code=query.code, redirect_uri=_redirect_uri(request),
                                         nonce=nonce)
    except SignInFailed as exc:
        return _signin_page(request, to=memo.via, status=403, error=str(exc))
    rt = request.app[RUNTIME]
    scoped = rt.workspaces is not None   # many workspaces: the session is the person's one's
    who = Identity(person.user, 0.0, VIA_SLACK, Scope.REVIEW,
                   team_id=person.team_id if scoped else "",
                   enterprise_id=person.enterprise_id if scoped else "")
    why = await sessions.refusal(who, desk=rt.reviews, db=None, workspaces=rt.workspaces)
    if why is not None:
        return await _refused(request, who, why, to=memo.via)
    await sessions.audit_sign_in(rt.db, who, refused=None, now=rt.service.clock())
    response = await session.begin(request, person.user, via=VIA_SLACK, scope=Scope.REVIEW,
                                   to=memo.via, workspace=who.workspace)
    response.del_cookie(STATE_COOKIE, path="/signin")
    return response


async def signout(request: web.Request) -> web.StreamResponse:
    """Ends this browser's session, and every other one its person began (server-side)."""
    found = web.HTTPSeeOther("/")
    await session.end(request, found)
    raise found


PAGE = Reply(description="the page", content_type="text/html")
REFUSED = Reply(description="the page, saying why not", content_type="text/html")
MOVED = Reply(description="on to the next step", content_type="text/plain")

ROUTES: tuple[Route, ...] = (
    route_with_query("/signin", SignInQuery, signin, summary="Reviewer sign-in", tag="console",
                     replies={200: PAGE}),
    route_with_query("/signin/link", LinkQuery, signin_link,
                     summary="A reviewer link: the page to sign in with it", tag="console",
                     replies={200: PAGE, 403: REFUSED}),
    route("POST", "/signin/link", signin_link_post,
          summary="Sign in with a reviewer link (its page's button)", tag="console",
          replies={200: PAGE, 400: REFUSED, 403: REFUSED}),
    route_with_query("/signin/slack", SignInQuery, signin_slack,
                     summary="Sign in with Slack (to Slack)", tag="console",
                     replies={302: MOVED, 404: REFUSED}),
    route_with_query(CALLBACK, CallbackQuery, signin_slack_callback,
                     summary="Sign in with Slack (back from Slack)", tag="console",
                     replies={200: PAGE, 400: REFUSED, 403: REFUSED}),
    route("POST", "/signout", signout, summary="Sign out", tag="console",
          replies={303: MOVED}),
)
