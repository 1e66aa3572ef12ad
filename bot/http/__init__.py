"""The HTTP surface: the REST API (with its SSE stream and OpenAPI document), the web console,
`/healthz` and `/metrics`, on aiohttp.

    server.py    build_app (routes and middlewares), check_exposure
    api.py       the REST API
    console.py   the web console
    metrics.py   Prometheus text format
    settings.py  HttpSettings: where to listen
"""
