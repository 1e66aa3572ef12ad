"""The HTTP surface: the REST API (with its SSE stream and OpenAPI document), the web console,
`/healthz` and `/metrics`, on aiohttp. One route table drives the router, the input parsing and
the OpenAPI document, so they cannot disagree.

    server.py    build_app: the route table registered, middlewares; check_exposure
    routes.py    Route, Reply and the parsing of each route's query or body model
    api.py       the REST API's handlers, models and routes
    sse.py       the live event stream of one debate
    reviews.py   the review queue and decisions over the API (the console's buttons call it)
    console.py   the web console's handlers and pages (the debate page live over SSE, the
                 review queue); pages.py renders them (Jinja2 templates/ with autoescape,
                 static/ for the stylesheet and the one script); views.py and charts.py (the
                 heatmap and band scale as SVG) compute what the templates show
    oversight.py the judge audit and routing against the reviewers: /api/judges, /api/routing
                 and the console's Judges page
    signin.py    reviewer sign-in: Sign in with Slack (OpenID Connect, this workspace's
                 reviewers; in multi-workspace mode, the workspace signed in with) or a
                 reviewer link (its page's button POSTs it); signing out
    openapi.py   the OpenAPI document, generated from the route table
    auth.py      who may, and what: the token (everything), a reviewer token or session (the
                 reviewer's part, while a reviewer; one workspace's part in multi-workspace
                 mode), a signed link (one transcript); the
                 browser guard (JSON bodies, same origin by scheme, host and port, Host)
    session.py   the console's signed, expiring session cookie, ended by signing out
    scoping.py   what a workspace's sign-in reads: its debates, reviews and spend only
    errors.py    the JSON error shape and the exception -> status mapping
    state.py     what the app holds: runtime, scheduler, Slack on/off, the route table; and
                 per request, who it is
    metrics.py   Prometheus text format
    settings.py  HttpSettings: where to listen
"""
