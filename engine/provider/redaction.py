"""Credentials inside URLs (`http://user:password@host/...`): the form any URL is shown in, and
the secrets to strip from text. A URL setting may carry them (OPENAI_BASE_URL, DATABASE_URL, a
schedule's source); logs, errors, events, the API, the console and Slack see only the redacted
form."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

MASK = "***"
#: user info in any URL written in text: `scheme://user:password@` or `scheme://token@`.
USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@]+@")


def public_url(url: str) -> str:
    """`url` without its credentials (`http://***@host/v1`); URLs without any are unchanged."""
    return USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", url)


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The secrets `url` carries (its password and user info, raw and decoded), to redact."""
    if not url:
        return ()
    try:
        parts = urlsplit(url)
        password, username = parts.password, parts.username
    except ValueError:
        return ()
    found = {password, unquote(password) if password else None}
    if password and username:
        found.add(f"{username}:{password}")
    return tuple(sorted(s for s in found if s))


def redact_urls(text: str) -> str:
    """`text` with the user info of every URL in it masked."""
    return public_url(text)
