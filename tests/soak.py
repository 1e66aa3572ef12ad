"""`make soak`: debates in every mode through `dialectic serve` while things go wrong around it.

The fake provider injects faults at random (HTTP 500, 429 with Retry-After, hangs past the call
timeout, malformed JSON); the server is SIGKILLed at random moments and started again; its
PostgreSQL (a throwaway server of the soak's own) is stopped and started once. Submissions carry
idempotency keys and are retried through outages, as a client would. Every third debate comes in
as a signed `/debate` from a fake Slack that answers result posts slowly (so kills land while a
result is being posted); every result is routed to the review channel. At the end it prints what
happened, and exits non-zero if a debate never settled, an audit chain is broken, a budget
reservation leaked, today's spend passed the cap, or a finished debate's Slack result or review
request was not delivered exactly once:

    .venv/bin/python -m tests.soak --debates 36 --kills 4 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import func, select

from engine.vocabulary import Mode
from storage import audit
from storage.db import Database
from storage.models import StepRow
from tests.fakes.openai_server import FakeOpenAI, RecordedRequest, message_text
from tests.fakes.slack_server import FakeSlack
from tests.support.pg_server import OwnPostgres, own_postgres, server_binaries
from tests.support.served_process import ServedProcess, serve_env

SETTLED = {"completed", "failed", "timed_out", "approved", "escalated", "awaiting_review"}
TOPIC = re.compile(r"Soak #(\d+):")
SETTINGS = {  # short timeouts and backoff, so faults cost seconds, not minutes
    "DIALECTIC_CALL_TIMEOUT": "2", "DIALECTIC_PHASE_TIMEOUT": "60",
    "DIALECTIC_DEBATE_TIMEOUT": "240", "DIALECTIC_BACKOFF_BASE": "0.2",
    "DIALECTIC_BACKOFF_CAP": "1", "DIALECTIC_LEASE_SECONDS": "3",
    "DIALECTIC_POLL_INTERVAL": "0.2", "DIALECTIC_WORKER_CONCURRENCY": "6",
    "DIALECTIC_DAILY_BUDGET_USD": "1.00", "DIALECTIC_LOG_LEVEL": "WARNING",
    "DIALECTIC_SLACK_STREAMING": "off", "DIALECTIC_SLACK_POST_INTERVAL": "0.05",
    "DIALECTIC_REVIEW_CHANNEL": "CREVIEW", "DIALECTIC_REVIEWERS": "UREVIEWER",
}
SLACK_SECRET = "soak-signing-secret"
CHANNEL = "CSOAK"
REVIEWED = "Review requested"


@dataclass
class Chaos:
    """What goes wrong, and when: fault rates at the provider, kills, the database outage."""

    rng: random.Random
    rates: dict[str, float] = field(default_factory=lambda: {
        "500": 0.04, "429": 0.03, "hang": 0.02, "malformed": 0.04})

    def chance(self, rate: float) -> Any:
        return lambda body: self.rng.random() < rate

    def arm(self, fake: FakeOpenAI) -> None:
        fake.hang(self.chance(self.rates["hang"]), 3.0, times=None)   # past the 2 s timeout
        fake.fail(self.chance(self.rates["500"]), 500, times=None)
        fake.fail(self.chance(self.rates["429"]), 429, times=None, headers={"Retry-After": "1"})
        fake.invalid_json(self.chance(self.rates["malformed"]), times=None)


@dataclass
class Soak:
    fake: FakeOpenAI
    pg: OwnPostgres
    server: ServedProcess
    chaos: Chaos
    debates: int
    kills: int
    slack: FakeSlack
    ids: dict[int, str] = field(default_factory=dict)
    from_slack: dict[int, str] = field(default_factory=dict)   # index -> topic
    in_flight_at_kills: list[int] = field(default_factory=list)
    in_flight_at_outage: int = 0
    health_in_outage: int = 0
    recovered_after: float = 0.0
    refused: Counter[str] = field(default_factory=Counter)

    async def run(self) -> None:
        """Submit every debate (modes in turn, a random pause between two), each retried with
        its idempotency key until accepted; the kills and the outage fall just after randomly
        chosen submissions, once calls are in flight, so they land in the middle of debates."""
        modes = list(Mode)
        marks = self.chaos.rng.sample(range(1, self.debates), self.kills + 1)
        kills, outage = set(marks[:-1]), marks[-1]
        for i in range(self.debates):
            mode = modes[i % len(modes)]
            body = {"topic": f"Soak #{i}: should we adopt practice {i} ({mode.value})?",
                    "mode": mode.value, "idempotency_key": f"soak-{i}"}
            if i % 3 == 0:
                self.from_slack[i] = str(body["topic"])
                await self._commanded(i, f"{body['topic']} --mode {mode.value}")
            else:
                self.ids[i] = await self._accepted(body)
            if i in kills:
                await self.kill_and_restart()
            if i == outage:
                await self.database_outage()
            await asyncio.sleep(self.chaos.rng.uniform(0.05, 0.8))

    async def _accepted(self, body: dict[str, Any]) -> str:
        while True:
            try:
                status, reply = await self.server.call("POST", "/api/debates", json=body)
            except (aiohttp.ClientError, OSError):
                status, reply = 0, {}
            if status in (200, 202):
                return str(reply["id"])
            self.refused[str(status or "connection refused")] += 1
            await asyncio.sleep(0.5)

    async def _commanded(self, i: int, text: str) -> None:
        """A signed /debate, sent again through outages (Slack dedupes on its trigger id)."""
        body = urlencode({"token": "legacy", "team_id": self.slack.team_id, "channel_id": CHANNEL,
                          "user_id": "USOAK", "command": "/debate", "text": text,
                          "api_app_id": "A0SOAK", "response_url": self.slack.response_url(
                              f"soak{i}"), "trigger_id": f"trigger.soak.{i}"})
        while True:
            ts = str(int(time.time()))
            headers = {"Content-Type": "application/x-www-form-urlencoded",
                       "X-Slack-Request-Timestamp": ts,
                       "X-Slack-Signature": str(SignatureVerifier(
                           SLACK_SECRET).generate_signature(timestamp=ts, body=body))}
            try:
                async with aiohttp.ClientSession() as s, s.post(
                        self.server.base + "/slack/events", data=body.encode(),
                        headers=headers) as r:
                    if r.status == 200:
                        return
                    status = r.status
            except (aiohttp.ClientError, OSError):
                status = 0
            self.refused[f"slack {status or 'connection refused'}"] += 1
            await asyncio.sleep(0.5)

    async def slack_ids(self) -> None:
        """The debates the slash commands started, found by their topics."""
        wanted = {topic: i for i, topic in self.from_slack.items()}
        _, listed = await self.server.get("/api/debates?limit=500")
        for record in listed.get("debates", []):
            i = wanted.get(record.get("request", {}).get("topic") or record.get("topic"))
            if i is not None:
                self.ids[i] = str(record["id"])

    async def _busy(self) -> None:
        """A random moment while the server has calls in flight (or after a while without)."""
        deadline = time.monotonic() + 10.0
        while not self.fake.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(self.chaos.rng.uniform(0.0, 0.15))  # within a call's 0.2 s

    async def kill_and_restart(self) -> None:
        await self._busy()
        self.in_flight_at_kills.append(self.fake.in_flight)
        await self.server.kill()
        await asyncio.sleep(self.chaos.rng.uniform(0.2, 2.0))
        await self.server.start()

    async def database_outage(self) -> None:
        """Stop PostgreSQL for a few seconds; note what /healthz said and how soon it was
        healthy again."""
        await self._busy()
        self.in_flight_at_outage = self.fake.in_flight
        await self.pg.stop()
        stopped = time.monotonic()
        self.health_in_outage = await self._health_until(503, timeout=10.0)
        await asyncio.sleep(max(0.0, 3.0 - (time.monotonic() - stopped)))
        await self.pg.start()
        started = time.monotonic()
        await self._health_until(200, timeout=60.0)
        self.recovered_after = time.monotonic() - started

    async def _health_until(self, wanted: int, timeout: float) -> int:
        status = 0
        async with asyncio.timeout(timeout):
            while status != wanted:
                status, _ = await self.server.get("/healthz")
                await asyncio.sleep(0.1)
        return status

    async def settle(self, timeout: float) -> dict[str, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        records: dict[str, dict[str, Any]] = {}
        while time.monotonic() < deadline:
            if any(i not in self.ids for i in self.from_slack):
                # a /debate whose process was killed after its ack is started by another's
                # recovery once its lease is over (bot/slack/recovery.py): look for it again
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    await self.slack_ids()
            for debate_id in self.ids.values():
                try:
                    status, record = await self.server.get(f"/api/debates/{debate_id}")
                except (aiohttp.ClientError, OSError):
                    continue
                if status == 200:
                    records[debate_id] = record
            if len(records) == len(self.ids) and all(
                    r["status"] in SETTLED for r in records.values()) and all(
                    i in self.ids for i in self.from_slack):
                break
            await asyncio.sleep(1.0)
        return records


def _step_of(request: RecordedRequest, ids: dict[int, str]) -> tuple[str, str] | None:
    text = "\n".join(message_text(m) for m in request.messages)
    found = TOPIC.search(text)
    return (ids[int(found.group(1))], request.step) if found else None


async def _stored_steps(url: str) -> tuple[int, bool, int]:
    """(steps stored, every audit chain intact, chains checked)."""
    db = Database(url)
    try:
        async with db.transaction(readonly=True) as session:
            steps = int(await session.scalar(select(func.count()).select_from(StepRow)) or 0)
            report = await audit.verify(session)
    finally:
        await db.dispose()
    return steps, report.ok, report.chains_checked


def _why_incomplete(records: dict[str, dict[str, Any]]) -> Counter[str]:
    """What is missing from finished debates, by reason (step keys and figures left out)."""
    reasons: Counter[str] = Counter()
    for record in records.values():
        for item in (record.get("result") or {}).get("missing") or []:
            reason = item.split(": ", 1)[-1]
            reasons[re.sub(r"[\d.$]+", "#", reason)[:90]] += 1
    return reasons


def _outcomes(records: dict[str, dict[str, Any]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for record in records.values():
        result = record.get("result") or {}
        if record["status"] not in SETTLED:
            counts["not settled"] += 1
        elif record["status"] in ("failed", "timed_out"):
            counts["failed"] += 1
        elif result.get("complete"):
            counts["completed"] += 1
        else:
            counts["incomplete"] += 1
        counts["awaiting review"] += record["status"] == "awaiting_review"
    return counts


async def deliveries(soak: Soak, records: dict[str, dict[str, Any]], timeout: float = 120.0
                     ) -> tuple[str, bool]:
    """Once nothing is owed to Slack: each Slack debate's result in its thread once, each
    routed debate's review request in the review channel once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, health = await soak.server.get("/healthz")
        if health.get("deliveries_pending") == 0:
            break
        await asyncio.sleep(1.0)
    slack_ids = {soak.ids[i] for i in soak.from_slack if i in soak.ids}
    unstarted = [i for i in soak.from_slack if i not in soak.ids]
    answers = [str(r.get("text", ""))[:120] for r in soak.slack.responses
               if r.get("response_type") != "in_channel"]
    answers += [str(m.get("text", ""))[:160] for m in soak.slack.messages(CHANNEL)
                for i in unstarted if f"Soak #{i}:" in str(m.get("text", ""))]
    results: Counter[str] = Counter()
    for message in soak.slack.messages(CHANNEL):
        if "Debate result" in str(message.get("text", "")):
            results[str(message.get("thread_ts"))] += 1
    threads = {records[d].get("origin", {}).get("thread_ts") for d in slack_ids if d in records}
    once = sum(1 for t in threads if results.get(str(t)) == 1)
    requests: Counter[str] = Counter()
    for message in soak.slack.messages("CREVIEW"):
        found = TOPIC.search(json.dumps(message.get("blocks") or message.get("text")))
        if found:
            requests[found.group(1)] += 1
    routed = [i for i, d in soak.ids.items() if records.get(d, {}).get("status") in (
        "awaiting_review", "approved", "escalated")]
    requested_once = sum(1 for i in routed if requests.get(str(i)) == 1)
    ok = (health.get("deliveries_pending") == 0 and health.get("deliveries_failed") == 0
          and once == len(threads) and requested_once == len(routed))
    line = (f"Slack: {len(soak.from_slack)} /debate commands, {len(unstarted)} not started "
            f"(the bot answered: {answers[-len(unstarted):] if unstarted else 'n/a'}); "
            f"{len(slack_ids)} debates from /debate, results delivered exactly once "
            f"{once} of {len(threads)} (more than once: "
            f"{sum(1 for n in results.values() if n > 1)}); review requests exactly once "
            f"{requested_once} of {len(routed)}; left pending {health.get('deliveries_pending')},"
            f" failed {health.get('deliveries_failed')}")
    return line, ok


async def report(soak: Soak, records: dict[str, dict[str, Any]], elapsed: float) -> bool:
    """Print the figures; True when every invariant held."""
    outcomes = _outcomes(records)
    slack_line, slack_ok = await deliveries(soak, records)
    steps, chains_ok, chains = await _stored_steps(soak.pg.url)
    _, budget = await soak.server.get("/api/budget")
    requests = soak.fake.requests
    by_outcome = Counter(r.outcome.replace("fail ", "HTTP ") for r in requests)
    replies = Counter(s for r in requests if r.outcome == "reply"
                      and (s := _step_of(r, soak.ids)) is not None)
    resent = sum(n - 1 for n in replies.values() if n > 1)
    settled = sum(1 for r in records.values() if r["status"] in SETTLED)
    lines = [
        f"soak {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {platform.node()} "
        f"({platform.machine()}, Python {platform.python_version()}), {elapsed:.0f} s",
        f"debates submitted {len(soak.ids)}, reached a terminal state {settled} (awaiting "
        f"review included), "
        f"completed {outcomes['completed']}, incomplete {outcomes['incomplete']}, "
        f"failed {outcomes['failed']}, not settled {outcomes['not settled']} (routed to a "
        f"reviewer: {outcomes['awaiting review']})",
        f"server SIGKILLed {len(soak.in_flight_at_kills)} times (calls in flight: "
        f"{soak.in_flight_at_kills}), PostgreSQL stopped once ({soak.in_flight_at_outage} calls "
        f"in flight; /healthz {soak.health_in_outage} during it, 200 again "
        f"{soak.recovered_after:.1f} s after it was back); submissions refused meanwhile "
        f"{dict(soak.refused) or 'none'}",
        f"provider requests {len(requests)}: "
        + ", ".join(f"{k} {v}" for k, v in sorted(by_outcome.items())),
        f"stored steps {steps}; steps answered twice (re-sent) {resent}, calls in flight at "
        f"kills and the outage {sum(soak.in_flight_at_kills) + soak.in_flight_at_outage}",
        "missing parts, by reason: " + ("; ".join(
            f"{n} x {why}" for why, n in _why_incomplete(records).most_common(5)) or "none"),
        f"audit chains verified {chains}: {'intact' if chains_ok else 'BROKEN'}",
        f"budget: spent ${budget['spent_usd']:.4f} of the ${budget['cap_usd']:.2f} cap, "
        f"reserved ${budget['reserved_usd']:.4f} after settling",
        slack_line,
    ]
    print("\n".join(lines))
    return (outcomes["not settled"] == 0 and chains_ok and budget["reserved_usd"] < 1e-9
            and budget["spent_usd"] <= budget["cap_usd"] and slack_ok)


async def soak(debates: int, kills: int, seed: int, timeout: float) -> bool:
    chaos = Chaos(random.Random(seed))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dialectic-soak.") as tmp:
        async with own_postgres() as pg, FakeOpenAI(latency=0.2, seed=seed) as fake, \
                FakeSlack() as slack:
            chaos.arm(fake)
            slack.slow("chat.postMessage", 1.5, when=lambda a: any(
                w in str(a.get("text", "")) for w in ("Debate result", REVIEWED)))
            config = Path(tmp) / "dialectic.toml"   # every panel's result goes to a reviewer
            config.write_text('[presets.default]\nmode = "consensus"\n'
                              'thresholds = { high = 1.0, tentative = 1.0, escalate = 0.0 }\n')
            env = serve_env(pg.url, fake.base_url, **SETTINGS, DIALECTIC_CONFIG=str(config),
                            SLACK_BOT_TOKEN="xoxb-soak", SLACK_SIGNING_SECRET=SLACK_SECRET,
                            SLACK_API_URL=slack.base_url)
            server = ServedProcess(env, Path(tmp) / "serve.log")
            await server.start()
            run = Soak(fake, pg, server, chaos, debates, kills, slack)
            try:
                await run.run()
                await run.slack_ids()
                records = await run.settle(timeout)
                ok = await report(run, records, time.monotonic() - started)
            finally:
                code = await server.terminate()
            log = server.log()
    print(f"last server exit status on SIGTERM: {code}; tracebacks in its log: "
          f"{log.count('Traceback')}")
    for why in _tracebacks(log):
        print(f"  traceback: {why}")
    return ok and code == 0


def _tracebacks(log: str) -> list[str]:
    """The line that logged each traceback and the exception it ended with."""
    lines = log.splitlines()
    found = []
    for n, line in enumerate(lines):
        if line.startswith("Traceback"):
            logged = lines[n - 1][:160] if n else ""
            end = next((lines[k] for k in range(n + 1, len(lines))
                        if lines[k] and not lines[k].startswith((" ", "Traceback"))), "")
            found.append(f"{logged} -> {end[:200]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--debates", type=int, default=36, help="how many (modes in turn)")
    parser.add_argument("--kills", type=int, default=4,
                        help="SIGKILLs of the server (fewer than --debates)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds to wait for every debate to settle")
    args = parser.parse_args(argv)
    if server_binaries() is None:
        print("soak: no PostgreSQL server binaries; run it as `make soak`, which installs them")
        return 2
    ok = asyncio.run(soak(args.debates, args.kills, args.seed, args.timeout))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
