"""The console's rendering: Jinja2 templates from bot/http/templates (autoescaped: every value is
HTML-escaped unless a template says otherwise) and the static files they link, served by the app
with a content hash in the URL so browsers may keep them for good."""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from importlib import resources
from typing import Any

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel, ConfigDict, Field

from bot.http.charts import alpha_scale_svg, heatmap_svg
from bot.http.views import mean_rubric, seconds, shorten, usd
from bot.service.results import (
    FLAG_MEANING,
    SCALE,
    alpha_text,
    band_rule,
    flag_headline,
    point_figures,
    rubric_means,
)
from bot.service.words import counted, interval_text
from engine.money.cost import token_details
from engine.reading.outcomes import CritiqueStop, PanelStop
from engine.schemas.procon import DIMENSIONS

FOREVER = "public, max-age=31536000, immutable"


@dataclass(frozen=True, slots=True)
class StaticFile:
    body: bytes
    content_type: str
    version: str    # the body's hash: a new body is a new URL


def _static_files() -> dict[str, StaticFile]:
    folder = resources.files("bot.http") / "static"
    files = {}
    for entry in folder.iterdir():
        if entry.is_file():
            body = entry.read_bytes()
            kind = mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
            files[entry.name] = StaticFile(body, kind, hashlib.sha256(body).hexdigest()[:12])
    return files


STATIC = _static_files()


def static_url(name: str) -> str:
    """The versioned URL of a static file; a KeyError for a file that is not there."""
    return f"/static/{name}?v={STATIC[name].version}"


def yes_no(value: bool | None) -> str:
    return "—" if value is None else ("yes" if value else "no")


STOP_WORDS = {PanelStop.ROUND_LIMIT.value: "it reached its round limit",
              PanelStop.ALL_APPROVED.value: "every panelist approved",
              PanelStop.NO_ANSWERS.value: "no panelist answered",
              CritiqueStop.CRITIC_SATISFIED.value: "the critic was satisfied",
              CritiqueStop.CONVERGED.value: "the judge saw the answers converge",
              CritiqueStop.ROUND_LIMIT.value: "it reached its round limit",
              CritiqueStop.NO_PROPOSAL.value: "the proposer never answered"}
STATE_MARK = {"pending": "○", "running": "◐", "done": "✓", "partial": "◑", "failed": "✗"}

TEMPLATES = Environment(loader=PackageLoader("bot.http", "templates"), autoescape=True,
                        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
TEMPLATES.filters.update(usd=usd, seconds=seconds, shorten=shorten, token_details=token_details)
TEMPLATES.globals.update(
    static_url=static_url, alpha_text=alpha_text, band_rule=band_rule, heatmap_svg=heatmap_svg,
    interval_text=interval_text, counted=counted,
    alpha_scale_svg=alpha_scale_svg, point_figures=point_figures, mean_rubric=mean_rubric,
    yes_no=yes_no, stop_words=STOP_WORDS, state_mark=STATE_MARK, rubric_dimensions=DIMENSIONS,
    flag_headline=flag_headline, flag_meaning=FLAG_MEANING, rubric_means=rubric_means,
    score_scale=SCALE)


def render(template: str, **context: Any) -> str:
    """The template filled with `context`; `viewer` (who is signed in) and `nav` default to
    nobody and no section."""
    context.setdefault("viewer", None)
    context.setdefault("nav", "")
    return TEMPLATES.get_template(template).render(**context)


def html(page: str, *, status: int = 200) -> web.Response:
    return web.Response(text=page, content_type="text/html", status=status)


class StaticQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")
    v: str | None = Field(default=None, description="the file's version (static_url sets it)")


async def static_file(request: web.Request, query: StaticQuery) -> web.Response:
    """A file the console links (its stylesheet and script); cached for good when the version
    matches."""
    found = STATIC.get(request.match_info["name"])
    if found is None:
        raise web.HTTPNotFound(text="no such file")
    cache = FOREVER if query.v == found.version else "no-cache"
    charset = "utf-8" if found.content_type.startswith("text/") else None
    return web.Response(body=found.body, content_type=found.content_type, charset=charset,
                        headers={"Cache-Control": cache})
