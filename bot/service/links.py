"""Links to a debate's transcript page, as every surface gives them out (Slack summaries,
digests, API responses). Signed when the service is token-protected, so a link opens exactly
one transcript without the token."""

from __future__ import annotations

import hashlib
import hmac

from bot.service.settings import ServiceSettings


def transcript_signature(secret: str, debate_id: str) -> str:
    return hmac.new(secret.encode(), debate_id.encode(), hashlib.sha256).hexdigest()[:24]


def transcript_url(settings: ServiceSettings, debate_id: str) -> str:
    """A link to the transcript page; signed when the API is token-protected."""
    base = settings.public_url.rstrip("/") + f"/debates/{debate_id}"
    token = settings.api_token
    if token is None:
        return base
    return f"{base}?sig={transcript_signature(token.get_secret_value(), debate_id)}"
