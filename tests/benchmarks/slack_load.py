"""The load generator of the Slack bench, run as a process of its own: signed `/debate` slash
commands POSTed to a served `dialectic`, all at once or one at a time; prints one JSON line
with each request's seconds (request sent -> HTTP 200 received) and status.

    python -m tests.benchmarks.slack_load URL SECRET --team T0FAKE --count 100 --burst

Bodies are built and signed before the clock starts (Slack signs with its own CPU, not ours);
each request opens its own connection, as Slack's do."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from urllib.parse import urlencode, urlsplit

import aiohttp
from slack_sdk.signature import SignatureVerifier

#: what people add to a topic: a burst's commands differ in length as real ones do (from a few
#: words to a paragraph), so no two plans (their prompts are sized from the topic) need match
DETAIL = ("for the payments team", "before the Q3 planning review, given the migration risk "
          "and the two incidents last month", "in the EU region only", "considering the cost "
          "of retraining support staff, the vendor's roadmap, the contract renewal in March "
          "and what the security review found about its audit logging")


def topic(base: str, i: int) -> str:
    """The i-th command's topic: `base` with some of DETAIL, so lengths vary over the burst."""
    words = " ".join(DETAIL[j % len(DETAIL)] for j in range(i % 5))
    return f"{base} {words[: 7 * i % 260]}".strip()


def bodies(args: argparse.Namespace) -> list[tuple[bytes, dict[str, str]]]:
    signer, stamp = SignatureVerifier(args.secret), str(int(time.time()))
    built = []
    for i in range(args.count):
        body = urlencode({
            "token": "legacy", "team_id": args.team, "team_domain": "fake",
            "channel_id": f"{args.channel_prefix}{i % args.channels}", "user_id": f"U0LOAD{i}",
            "command": "/debate", "text": f"{topic(args.topic, i)} {args.tag}-{i}? --mode simple",
            "api_app_id": "A0FAKE", "response_url": f"{args.response_url}{args.tag}-{i}",
            "trigger_id": f"trigger.{args.tag}.{i}"})
        headers = {"Content-Type": "application/x-www-form-urlencoded",
                   "X-Slack-Request-Timestamp": stamp,
                   "X-Slack-Signature": str(signer.generate_signature(timestamp=stamp,
                                                                      body=body))}
        built.append((body.encode(), headers))
    return built


def raw_request(url: str, body: bytes, headers: dict[str, str]) -> tuple[str, int, bytes]:
    """The request's bytes, as the sender writes them (built before the clock starts)."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    head = [f"POST {parts.path or '/'} HTTP/1.1", f"Host: {host}:{port}", "Connection: close",
            f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in headers.items())]
    return host, port, ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def one_raw(host: str, port: int, request: bytes) -> tuple[float, int]:
    """One request on a connection of its own, with as little of this process's CPU between the
    clock and the wire as asyncio allows: the request sent → its whole answer received."""
    started = time.perf_counter()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(request)
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        return time.perf_counter() - started, status
    finally:
        writer.close()


async def one(url: str, body: bytes, headers: dict[str, str]) -> tuple[float, int]:
    connector = aiohttp.TCPConnector(force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        async with session.post(url, data=body, headers=headers) as reply:
            await reply.read()
            return time.perf_counter() - started, reply.status


async def run(args: argparse.Namespace) -> dict[str, object]:
    signed, url = bodies(args), args.url.rstrip("/") + "/slack/events"
    if args.client == "raw":
        built = [raw_request(url, b, h) for b, h in signed]
        sends = [one_raw(*request) for request in built]
    else:
        sends = [one(url, b, h) for b, h in signed]
    print("ready", flush=True)   # the bench reads the served process's CPU time from here
    started = time.perf_counter()
    if args.burst:
        results = await asyncio.gather(*sends)
    else:
        results = [await send for send in sends]
    return {"seconds": [s for s, _ in results], "statuses": [c for _, c in results],
            "wall": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("url")
    parser.add_argument("secret")
    parser.add_argument("--team", default="T0FAKE")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--channel-prefix", default="CLOAD")
    parser.add_argument("--topic", default="Should we adopt option")
    parser.add_argument("--tag", default="load")
    parser.add_argument("--response-url", default="http://127.0.0.1:9/response/")
    parser.add_argument("--burst", action="store_true", help="all at once (else one by one)")
    parser.add_argument("--client", choices=("raw", "aiohttp"), default="raw",
                        help="raw: asyncio streams (little of this process's CPU inside the "
                             "clock); aiohttp: a ClientSession a request (what the bench used "
                             "until 2026-11-28: with 100 at once its own set-up was counted)")
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
