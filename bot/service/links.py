"""Links to a debate's transcript page, as every surface gives them out (Slack summaries,
digests, API responses). Signed when the service is token-protected: a link opens exactly one
transcript, without the token, until it expires; it is an HMAC keyed by the API token with a
purpose of its own, so it is not the token and opens nothing else. (The console's session and
reviewer links are bot/service/grants.py's.)"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from bot.service.settings import ServiceSettings

SIGNATURE_CHARS = 32


def _mac(secret: str, purpose: str, *parts: str) -> str:
    message = "\n".join((purpose, *parts)).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:SIGNATURE_CHARS]


def _same(given: str, expected: str) -> bool:
    """Constant-time, and as bytes: any text a browser sends compares without an error."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode())


def _expired(expires: str, now: datetime) -> bool:
    return not (expires.isascii() and expires.isdigit() and len(expires) <= 12
                and int(expires) > now.timestamp())


def transcript_signature(secret: str, debate_id: str, expires: int) -> str:
    return _mac(secret, "transcript", debate_id, str(expires))


def transcript_url(settings: ServiceSettings, debate_id: str, *, now: datetime) -> str:
    """A link to the transcript page; signed, and expiring, when the API is token-protected."""
    base = settings.public_url.rstrip("/") + f"/debates/{debate_id}"
    token = settings.api_token
    if token is None:
        return base
    expires = int((now + timedelta(days=settings.link_ttl_days)).timestamp())
    signature = transcript_signature(token.get_secret_value(), debate_id, expires)
    return f"{base}?exp={expires}&sig={signature}"


def transcript_link_valid(secret: str, debate_id: str, *, expires: str, signature: str,
                          now: datetime) -> bool:
    if _expired(expires, now):
        return False
    return _same(signature, transcript_signature(secret, debate_id, int(expires)))


def same_secret(given: str, secret: str) -> bool:
    """Whether a token sent by a client is the secret (constant time, any text)."""
    return _same(given, secret)


def debate_id_of(settings: ServiceSettings, url: str) -> str | None:
    """The debate a transcript link points at (signed or not), if it is one of this service's:
    `DIALECTIC_PUBLIC_URL/debates/<id>`; None for any other link."""
    parts = urlsplit(url.strip())
    home = urlsplit(settings.public_url.rstrip("/"))
    if (parts.scheme, parts.netloc.lower()) != (home.scheme, home.netloc.lower()):
        return None
    prefix = home.path.rstrip("/") + "/debates/"
    if not parts.path.startswith(prefix):
        return None
    debate_id = parts.path[len(prefix):].strip("/")
    return debate_id if debate_id and "/" not in debate_id and len(debate_id) <= 64 else None
