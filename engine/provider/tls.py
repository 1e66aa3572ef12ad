"""The TLS context the provider's HTTP client verifies servers with, built early, in a thread.

The SDK's transport builds its context when the client is made (httpx's `create_ssl_context`:
SSL_CERT_FILE or SSL_CERT_DIR, else the platform's trust store), and loading the CA bundle takes
about 0.03 s of a run's start. `prepare()` builds that very context in a thread as soon as a
process knows it will call a provider: OpenSSL reads the bundle without holding the GIL, so the
load overlaps what the process does meanwhile (its database work, importing the SDK).
`context()` hands it to the transport (engine/provider/gateway/requests.py); without `prepare()`
the SDK builds its own, as before.
"""

from __future__ import annotations

import ssl
import threading
from concurrent.futures import Future

_lock = threading.Lock()
_built: list[Future[ssl.SSLContext]] = []


def prepare() -> None:
    """Start building the context (once per process). The libraries are imported here, in the
    caller's thread, so that the thread imports nothing while the caller may be importing."""
    with _lock:
        if _built:
            return
        import httpcore2  # noqa: F401  # what create_ssl_context imports when it runs
        import httpx2

        built: Future[ssl.SSLContext] = Future()

        def build() -> None:
            try:
                built.set_result(httpx2.create_ssl_context())
            except BaseException as exc:   # handed to whoever asks for the context
                built.set_exception(exc)

        _built.append(built)
        threading.Thread(target=build, name="dialectic-tls", daemon=True).start()


def context() -> ssl.SSLContext | None:
    """The prepared context (waiting while it loads; raising what building it raised), or None
    when none was prepared."""
    return _built[0].result() if _built else None
