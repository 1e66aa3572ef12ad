"""The plan message as a person sees it, from a real recording: a rehearsal /debate streamed
into FakeSlack through the whole stack, rendered by the fake (`render_stream`). docs/slack.md
shows this text; test_slack_plan.py checks that it still matches.

    python -m tests.support.plan_rendering        # print it (paste between docs/slack.md's markers)
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from pathlib import Path

from tests.support.slack_fixtures import CHANNEL, slack_harness

TOPIC = "Should we move billing to PostgreSQL?"
START, END = "<!-- plan-rendering:start -->", "<!-- plan-rendering:end -->"


def normalised(text: str, debate_id: str) -> str:
    """What varies between runs (the debate's id and signed links, the prompt tokens the id
    takes, how long it took) fixed."""
    text = text.replace(debate_id, "d-0001")
    text = re.sub(r"https?://[^\s|>]+", "https://dialectic.example/…", text)
    text = re.sub(r"\d[\d,]* tokens", "8,895 tokens", text)   # the id is in the prompts
    return re.sub(r"took \d+[hms][^·\n]*", "took 1s", text)


async def record(tmp_path: Path) -> str:
    """Run one rehearsal debate with streaming on and render its plan message."""
    async with slack_harness(tmp_path, slack_streaming="auto") as h:
        await h.command(TOPIC)
        found = await h.wait_until(h.debates, what="a debate")
        await h.wait_finished(found[0].id)
        await h.wait_until(lambda: any(s.stopped for s in h.fake.streams_in(CHANNEL)),
                           what="the stream to stop")
        await h.notifier.drain()
        stream = h.fake.streams_in(CHANNEL)[0]
        return normalised(h.fake.render_stream(stream.ts), found[0].id)


def readme_block(readme: str) -> str:
    """The rendering docs/slack.md shows, between its markers, without the code fence."""
    inner = readme.split(START, 1)[1].split(END, 1)[0].strip()
    return inner.removeprefix("```text").removesuffix("```").strip("\n")


SEPARATOR = "─" * 40


def shape(rendering: str) -> tuple[str, list[str]]:
    """What two renderings of the same debate share, run to run: the plan exactly but for its
    figures and the judges' calls (the rehearsal model's scores are seeded by each prompt,
    which holds the debate's id), and the result's lines by their heads (the figures and
    divergence points move with the scores)."""
    plan, _, result = rendering.partition(SEPARATOR)
    plan = re.sub(r"(\w+) → [\w ]+", r"\1 → …", re.sub(r"\d", "0", plan))
    heads, lines = [], result.splitlines()
    for before, line in zip(["", *lines], lines, strict=False):
        if line.startswith("•") or before.startswith("*Verdict*"):   # the points, the verdict
            continue
        head = re.split(r"[:·]", line)[0]
        heads.append(re.sub(r"\d", "0", " ".join(head.split()[:3])))
    return plan, heads


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        print(asyncio.run(record(Path(tmp))))


if __name__ == "__main__":
    main()
