"""`/metrics`: this process's Prometheus metrics (bot/service/telemetry.py) in text format."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.service.telemetry import REGISTRY


async def serve_metrics(request: web.Request) -> web.Response:
    body = generate_latest(REGISTRY)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
