"""Logging for the service: one line per record, secrets redacted before anything is written.

A log line cannot be forged: newlines and every other control character in a record (its
message, its arguments, a traceback) are written escaped (`\\n`, `\\x1b`), so text a user sent
cannot start a line of its own. A request that failed Slack's signature check is logged without
its body: nobody verified it, and a 200 KB unsigned body would otherwise grow the log by as much.
"""

from __future__ import annotations

import logging
import re

from engine.provider.redaction import redact_urls

# Tokens that look like credentials: OpenAI keys, Slack tokens and secrets, bearer headers.
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|xox[abposr]-[A-Za-z0-9\-]{8,}|xapp-[A-Za-z0-9\-]{8,}"
    r"|Bearer\s+[A-Za-z0-9._\-]{8,})"
)
# C0 controls, DEL, C1 controls and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: What Bolt logs, with the whole raw body, when a request's signature does not verify.
UNVERIFIED = "Invalid request signature detected"


def redact(text: str, extra: tuple[str, ...] = ()) -> str:
    text = redact_urls(_SECRET.sub("[redacted]", text))
    for secret in extra:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[redacted]")
    return text


def one_line(text: str) -> str:
    """`text` with every control character escaped: it stays one line, whatever it holds."""
    return _CONTROL.sub(lambda m: _NAMED.get(m[0], f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                                             else f"\\u{ord(m[0]):04x}"), text)


class RedactingFilter(logging.Filter):
    """Rewrites every record's message (and exception text) with secrets removed, and drops
    the body of a request nobody verified."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(UNVERIFIED):
            message = (f"{UNVERIFIED}: a request to the Slack endpoint failed the signature "
                       "check and was refused (its body is not logged)")
        record.msg = redact(message, self.secrets)
        record.args = ()
        if record.exc_info:
            formatted = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(formatted, self.secrets)
            record.exc_info = None
        return True


class OneLineFormatter(logging.Formatter):
    """A record as exactly one line (see the module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        return one_line(super().format(record))


def setup_logging(level: str = "INFO", secrets: tuple[str, ...] = ()) -> None:
    level = level.upper()
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("aiohttp.access", "httpx", "httpx2", "openai", "apscheduler", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
