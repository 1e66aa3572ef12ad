"""The HTTP surface's settings: where the server listens, the names it answers to besides its
public URL's host and loopback names, the Prometheus port of worker-only processes, and the
limits that keep one client from holding the server: read timeouts and live-stream caps."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

HOUR = 3600.0


class HttpSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = Field(default=3000, ge=0, le=65535)
    metrics_port: int | None = Field(default=None, ge=1, le=65535)  # worker-only processes
    allowed_hosts: tuple[str, ...] = ()  # more Host names to answer (a second DNS name)
    #: a connection that has not sent a whole request's headers this long after connecting
    #: (or after its last response) is closed: idle keep-alive and trickled headers alike
    idle_timeout_seconds: float = Field(default=30.0, gt=0, le=HOUR)
    #: a request body that has not fully arrived this long after its headers is a 408
    body_timeout_seconds: float = Field(default=30.0, gt=0, le=HOUR)
    #: live event streams (`/api/debates/{id}/events`) one client may hold at once
    sse_per_client: int = Field(default=8, ge=1, le=10_000)
    #: live event streams the whole process holds at once
    sse_global: int = Field(default=200, ge=1, le=100_000)
    #: a comment line on a quiet stream this often, so proxies and clients see it alive
    sse_heartbeat_seconds: float = Field(default=15.0, gt=0, le=HOUR)
    #: a stream ends after this long; the browser reconnects with its Last-Event-ID
    sse_max_seconds: float = Field(default=600.0, gt=0, le=24 * HOUR)
