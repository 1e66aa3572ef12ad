"""The HTTP surface: the REST API (with its SSE stream and OpenAPI document), the web console,
`/healthz` and `/metrics`, on aiohttp. One route table drives the router, the input parsing and
the OpenAPI document, so they cannot disagree.

    server.py    build_app: the route table registered, middlewares; check_exposure
    routes.py    Route, Reply and the parsing of each route's query or body model
    api.py       the REST API's handlers, models and routes
    sse.py       the live event stream of one debate
    console.py   the web console's handlers and pages; pages.py renders them (Jinja2
                 templates/ with autoescape, static/ for the stylesheet)
    openapi.py   the OpenAPI document, generated from the route table
    auth.py      the token: bearer for the API, cookie or signed link for the console
    errors.py    the JSON error shape and the exception -> status mapping
    state.py     what the app holds: runtime, scheduler, Slack on/off, the route table
    metrics.py   Prometheus text format
    settings.py  HttpSettings: where to listen
"""
