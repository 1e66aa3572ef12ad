"""`/metrics`: this process's Prometheus metrics (bot/service/telemetry.py) in text format."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.http.routes import Reply, route
from bot.service.telemetry import REGISTRY


async def serve_metrics(request: web.Request) -> web.Response:
    """Counters and histograms of this process, for Prometheus to scrape."""
    body = generate_latest(REGISTRY)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


ROUTE = route("GET", "/metrics", serve_metrics, summary="Prometheus metrics", tag="operations",
              replies={200: Reply(description="the Prometheus text format",
                                  content_type="text/plain")})
