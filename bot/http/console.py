"""The web console: recent debates, a form to start one, and the transcript page Slack links to.

Every value is HTML-escaped. With `DIALECTIC_API_TOKEN` set, pages need the token (as a cookie,
set once from `/?token=…`) or, for one transcript, the signature Slack's link carries.
"""

from __future__ import annotations

import hmac
import json
from html import escape
from typing import Any

from aiohttp import web

from bot.http.api import RUNTIME
from bot.service.links import transcript_signature
from bot.service.runtime import Runtime
from engine.domain import MODES, DebateResult
from engine.presets import all_presets
from storage.records import TERMINAL_STATUSES, DebateRecord, DebateStatus

COOKIE = "dialectic_token"
STYLE = """body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35em;
text-align:left;vertical-align:top}.banner{background:#fff3cd;border:1px solid #e0c36a;
padding:.6em;margin:.6em 0}.bad{background:#f8d7da;border:1px solid #d9868f;padding:.6em}
.muted{color:#666}code{background:#f4f4f4;padding:0 .2em}input,select,textarea{font:inherit}"""


def _page(title: str, body: str, *, refresh: int | None = None) -> web.Response:
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    html = (f"<!doctype html><html><head><meta charset='utf-8'>{meta}<title>{escape(title)}"
            f"</title><style>{STYLE}</style></head><body>{body}</body></html>")
    return web.Response(text=html, content_type="text/html")


def _allowed(request: web.Request, rt: Runtime, debate_id: str | None = None) -> bool:
    token = rt.settings.api_token
    if token is None:
        return True
    secret = token.get_secret_value()
    if hmac.compare_digest(request.cookies.get(COOKIE, ""), secret):
        return True
    sig = request.query.get("sig", "")
    return debate_id is not None and hmac.compare_digest(
        sig, transcript_signature(secret, debate_id))


def _rehearsal_banner(rt: Runtime) -> str:
    if not rt.is_rehearsal:
        return ""
    return ("<div class='banner'><b>Rehearsal mode</b>: no OPENAI_API_KEY or OPENAI_BASE_URL is "
            "set, so debates run on the offline placeholder model. Nothing here is a real "
            "argument.</div>")


async def index(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    token = rt.settings.api_token
    if token is not None and request.query.get("token"):
        if hmac.compare_digest(request.query["token"], token.get_secret_value()):
            resp = web.HTTPFound("/")
            resp.set_cookie(COOKIE, request.query["token"], httponly=True, samesite="Strict")
            raise resp
    if not _allowed(request, rt):
        return _page("Dialectic", "<h1>Dialectic</h1><p>Open <code>/?token=…</code> with the API "
                                  "token to use the console.</p>")
    records = await rt.service.recent(limit=50)
    budget = await rt.service.budget_today()
    rows = "".join(_row(r) for r in records) or "<tr><td colspan=6>No debates yet.</td></tr>"
    presets = "".join(f"<option>{escape(p)}</option>" for p in sorted(all_presets(rt.engine)))
    body = f"""<h1>Dialectic</h1>{_rehearsal_banner(rt)}
<p>Today: ${float(budget['spent_usd']):.4f} spent, ${float(budget['reserved_usd']):.4f} reserved,
 cap ${float(budget['cap_usd']):.2f}.</p>
<form id=f><textarea name=topic rows=2 cols=80 placeholder="What should we debate?"></textarea><br>
<select name=mode><option value="">(preset's mode)</option>{_modes()}</select>
<select name=preset>{presets}</select> <button>Start debate</button> <span id=msg></span></form>
<h2>Recent debates</h2><table><tr><th>Topic</th><th>Mode</th><th>Status</th><th>Verdict</th>
<th>Cost</th><th>Created</th></tr>{rows}</table>
<script>document.getElementById('f').onsubmit=async e=>{{e.preventDefault();
const d=Object.fromEntries(new FormData(e.target));if(!d.mode)delete d.mode;
const r=await fetch('/api/debates',{{method:'POST',headers:{{'Content-Type':'application/json'}},
credentials:'same-origin',body:JSON.stringify(d)}});const j=await r.json();
if(r.ok)location='/debates/'+j.id;else document.getElementById('msg').textContent=j.error;}}
</script>"""
    return _page("Dialectic", body, refresh=None)


def _modes() -> str:
    return "".join(f"<option>{m}</option>" for m in MODES)


def _row(r: DebateRecord) -> str:
    verdict = r.result.verdict if r.result else ""
    return (f"<tr><td><a href='/debates/{escape(r.id)}'>{escape(r.request.topic[:120])}</a></td>"
            f"<td>{escape(r.mode)}</td><td>{escape(r.status.value)}</td>"
            f"<td>{escape(verdict[:120])}</td><td>${r.cost_usd:.4f}</td>"
            f"<td class=muted>{r.created_at:%Y-%m-%d %H:%M}</td></tr>")


async def transcript(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    debate_id = request.match_info["id"]
    if not _allowed(request, rt, debate_id):
        raise web.HTTPForbidden(text="this transcript needs the console token or a signed link")
    record = await rt.service.get(debate_id)
    running = record.status not in TERMINAL_STATUSES and \
        record.status is not DebateStatus.AWAITING_REVIEW
    parts = [f"<p><a href='/'>← all debates</a></p><h1>{escape(record.request.topic)}</h1>",
             _rehearsal_banner(rt) if record.result is None or record.result.rehearsal else "",
             f"<p>{escape(record.mode)} · preset {escape(record.preset)} · "
             f"<b>{escape(record.status.value)}</b> · ${record.cost_usd:.4f}</p>"]
    if record.error:
        parts.append(f"<div class=bad>{escape(record.error)}</div>")
    if record.result is not None:
        parts.append(_result_html(record.result))
    elif running:
        parts.append("<p class=muted>Running… this page refreshes every 3 seconds.</p>")
    return _page(record.request.topic[:60], "".join(parts), refresh=3 if running else None)


def _result_html(r: DebateResult) -> str:
    out = [f"<h2>Verdict</h2><p>{escape(r.verdict)}</p><p>{escape(r.rationale)}</p>"]
    if r.missing:
        items = "".join(f"<li>{escape(m)}</li>" for m in r.missing)
        out.append(f"<div class=bad><b>Incomplete.</b> Missing:<ul>{items}</ul></div>")
    c = r.consensus
    if c is not None:
        interval = (f" (95% CI {c.alpha_interval[0]:.2f}–{c.alpha_interval[1]:.2f})"
                    if c.alpha_interval else "")
        alpha = "n/a" if c.alpha is None else f"{c.alpha:.3f}"
        kappa = "n/a" if c.kappa is None else f"{c.kappa:.3f}"
        out.append(f"<h2>Consensus</h2><p>Krippendorff's alpha {alpha}{interval}, band "
                   f"{escape(c.band)}; Fleiss' kappa {kappa}; routing {escape(r.routing)}"
                   f"{'; <b>irreconcilable</b>' if c.irreconcilable else ''}.</p>")
        out.append(_points("Agreements", r.divergence.agreements))
        out.append(_points("Disagreements", r.divergence.disagreements))
    if r.trace_table:
        rows = "".join(
            f"<tr><td>{escape(t.id)}</td><td>{escape(t.claim)}</td><td>{escape(t.evidence)}</td>"
            f"<td>{escape(t.challenge)}</td><td>{escape(t.response)}</td>"
            f"<td>{escape(t.standing)}</td><td>{'' if t.strength is None else t.strength}</td>"
            "</tr>" for t in r.trace_table)
        out.append("<h2>Argument trace</h2><table><tr><th>Id</th><th>Claim</th><th>Evidence</th>"
                   f"<th>Challenge</th><th>Response</th><th>Standing</th><th>Strength</th></tr>"
                   f"{rows}</table>")
    out.append(_outcome(r.outcome_details()))
    out.append(_phases(r))
    cost = r.cost
    out.append(f"<p class=muted>{cost.calls} calls ({cost.reused_calls} reused), "
               f"{cost.prompt_tokens}+{cost.completion_tokens} tokens, ${cost.usd:.4f}, "
               f"{r.elapsed_seconds:.1f} s · versions {escape(str(r.versions))}</p>")
    return "".join(out)


def _points(title: str, points: list[Any]) -> str:
    if not points:
        return ""
    items = "".join(f"<li>{escape(p.label or p.item)} — mean {p.mean:.1f}, spread {p.spread:.1f}"
                    "</li>" for p in points)
    return f"<h3>{title}</h3><ul>{items}</ul>"


def _outcome(outcome: dict[str, Any]) -> str:
    if not outcome:
        return ""
    return ("<h2>Outcome</h2><pre style='white-space:pre-wrap'>"
            f"{escape(json.dumps(outcome, indent=2, ensure_ascii=False))}</pre>")


def _phases(r: DebateResult) -> str:
    rows = "".join(
        f"<tr><td>{escape(p.name)}</td><td>"
        + "<br>".join(f"<b>{escape(k)}</b>: {escape(v)}" for k, v in p.highlights.items())
        + (f"<br><b>degraded</b>: {escape(', '.join(p.degraded))}" if p.degraded else "")
        + (f"<br><b>filtered</b>: {escape(', '.join(p.filtered))}" if p.filtered else "")
        + f"</td><td>{p.elapsed_seconds:.1f} s</td></tr>" for p in r.phases)
    return f"<h2>Phases</h2><table>{rows}</table>"


def add_routes(app: web.Application) -> None:
    app.router.add_get("/", index)
    app.router.add_get("/debates/{id}", transcript)
