"""The HTTP surface's settings: where the server listens, the names it answers to besides its
public URL's host and loopback names, and the Prometheus port of worker-only processes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class HttpSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    host: str = "127.0.0.1"
    port: int = Field(default=3000, ge=0, le=65535)
    metrics_port: int | None = Field(default=None, ge=1, le=65535)  # worker-only processes
    allowed_hosts: tuple[str, ...] = ()  # more Host names to answer (a second DNS name)
