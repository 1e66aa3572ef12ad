"""A provider URL as people type it: checked at start, in one line with the fix (a mistyped
scheme, a missing host), not found at the first debate after 35 s of retries."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from engine.provider.redaction import public_url

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):/*(.*)", re.DOTALL)
_LOCAL = ("127.", "localhost", "[::1]", "0.0.0.0")


def _scheme_advice(url: str) -> str:
    """`htp:/localhost is no http(s) URL (its scheme is 'htp'); did you mean http://localhost?`:
    a mistyped scheme is dropped (with any slashes), never kept in the suggestion; a bare
    `host:port/v1` gets one. http for this machine, https for the rest."""
    found = _SCHEME.fullmatch(url)
    typed = found is not None and not found.group(2)[:1].isdigit()   # not `localhost:8080`
    rest = found.group(2) if found is not None and typed else url
    scheme = "http" if rest.startswith(_LOCAL) else "https"
    why = f" (its scheme is {found.group(1)!r})" if found is not None and typed else ""
    return (f"{public_url(url)} is no http(s) URL{why}; did you mean "
            f"{public_url(f'{scheme}://{rest}')}?")


def http_url(value: str | None) -> str | None:
    """A provider URL the client can call: http(s), a host. Said at start, in one line with
    the fix, not found at the first debate after 35 s of retries."""
    if value is None:
        return None
    url = value.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(_scheme_advice(url))
    if not parts.hostname:
        raise ValueError(f"{public_url(url)} names no host")
    return url



__all__ = ["http_url"]
