"""How the HTTP surface says no: one JSON shape, the exception -> status mapping at one border,
and the replies the API document lists for them.

    InvalidRequest -> 400    NotFound -> 404    IllegalTransition -> 409
    BudgetExceeded -> 402    a body over the size cap -> 413    KeyReused -> 409
    NotReviewer -> 403       AlreadyDecided -> 409
    DatabaseUnavailable -> 503 with Retry-After (the database is down, read-only or full)

Under /api/ every error is that JSON shape, aiohttp's own too (no such route, a method the route
does not take, with its Allow header): a client parses one shape, whatever went wrong.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, Field

from bot.http.routes import Handler, Reply, dumps
from bot.service.reviews import AlreadyDecided, NotReviewer
from engine.errors import BudgetExceeded, InvalidRequest
from storage.errors import DatabaseUnavailable, IllegalTransition, KeyReused, NotFound

RETRY_AFTER_S = 5  # what a 503 asks the client to wait before trying again


class ErrorOut(BaseModel):
    """Every 4xx and 503 body: a sentence saying what went wrong (and, over budget, the figures)."""

    error: str = Field(description="what went wrong and what to do")
    estimate_usd: float | None = Field(default=None, description="402: the debate's estimate")
    remaining_usd: float | None = Field(default=None, description="402: what today has left")
    debate_id: str | None = Field(default=None, description="409: the debate an idempotency "
                                                            "key already belongs to")


BAD_INPUT = Reply(description="the input is wrong; `error` says how", schema=ErrorOut)
UNAUTHORIZED = Reply(description="missing or wrong bearer token", schema=ErrorOut)
OVER_BUDGET = Reply(description="today's budget has no room for it", schema=ErrorOut)
NOT_FOUND = Reply(description="no such debate", schema=ErrorOut)
CONFLICT = Reply(description="the debate is not in a state that allows this", schema=ErrorOut)
KEY_REUSED = Reply(description="the idempotency key belongs to a debate submitted with another "
                               "request (`debate_id`)", schema=ErrorOut)
TOO_LARGE = Reply(description="the body is over the size cap", schema=ErrorOut)
NOT_REVIEWER = Reply(description="no reviewer signed in, or not a configured reviewer",
                     schema=ErrorOut)
NO_REVIEW = Reply(description="no such review", schema=ErrorOut)
DECIDED = Reply(description="someone decided it first; `error` says how", schema=ErrorOut)
UNAVAILABLE = Reply(description="the database cannot be used right now; retry after "
                                "Retry-After seconds", schema=ErrorOut)


def error(status: int, message: str, *, estimate_usd: float | None = None,
          remaining_usd: float | None = None, debate_id: str | None = None,
          headers: dict[str, str] | None = None) -> web.Response:
    body = ErrorOut(error=message, estimate_usd=estimate_usd, remaining_usd=remaining_usd,
                    debate_id=debate_id)
    return web.json_response(body.model_dump(exclude_none=True), status=status,
                             headers=headers, dumps=dumps)


def _as_json(request: web.Request, exc: web.HTTPException) -> web.Response:
    """aiohttp's plain-text "404: Not Found" (and any other) as the API's error shape, keeping
    the headers that matter to a client (Allow, Retry-After, WWW-Authenticate)."""
    if exc.status == 404:
        message = (f"no such API route: {request.method} {request.path} (the routes are listed "
                   "in /api/openapi.json)")
    elif isinstance(exc, web.HTTPMethodNotAllowed):
        message = (f"{request.method} is not allowed on {request.path}; use "
                   f"{', '.join(sorted(exc.allowed_methods))}")
    else:
        message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}: ") \
            else (exc.reason or "error").lower()
    kept = {k: v for k, v in exc.headers.items()
            if k.lower() in ("allow", "retry-after", "www-authenticate")}
    return error(exc.status, message, headers=kept or None)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status == 413:
            return error(413, "request body too large")
        if request.path.startswith("/api/") and exc.status >= 400 \
                and exc.content_type != "application/json":
            return _as_json(request, exc)
        raise
    except InvalidRequest as exc:
        return error(400, str(exc))
    except NotFound as exc:
        return error(404, str(exc))
    except (IllegalTransition, AlreadyDecided) as exc:
        return error(409, str(exc))
    except KeyReused as exc:
        return error(409, str(exc), debate_id=exc.existing_id)
    except NotReviewer as exc:
        return error(403, str(exc))
    except BudgetExceeded as exc:
        return error(402, str(exc), estimate_usd=exc.estimate_usd,
                     remaining_usd=exc.remaining_usd)
    except DatabaseUnavailable as exc:
        return error(503, str(exc), headers={"Retry-After": str(RETRY_AFTER_S)})
