"""Logging for the service: one line per record, secrets redacted before anything is written."""

from __future__ import annotations

import logging
import re

# Tokens that look like credentials: OpenAI keys, Slack tokens and secrets, bearer headers.
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|xox[abposr]-[A-Za-z0-9\-]{8,}|xapp-[A-Za-z0-9\-]{8,}"
    r"|Bearer\s+[A-Za-z0-9._\-]{8,})"
)


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    text = _SECRET.sub("[redacted]", text)
    for secret in extra:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[redacted]")
    return text


class RedactingFilter(logging.Filter):
    """Rewrites every record's message (and exception text) with secrets removed."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage(), self.secrets)
        record.args = ()
        if record.exc_info:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(formatted, self.secrets)
            record.exc_info = None
        return True


def setup_logging(level: str = "INFO", secrets: tuple[str, ...] = ()) -> None:
    level = level.upper()
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("aiohttp.access", "httpx", "httpx2", "openai", "apscheduler", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
