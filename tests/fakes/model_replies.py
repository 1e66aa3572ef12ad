"""The fake model's own replies: generated from the request's JSON schema (or the one quoted in
the system prompt) at the configured level ("minimal" or as real models write,
`tests.fakes.realistic`), seeded by the prompt with untrusted regions' random boundaries masked,
and, for a gullible model (`obedient`), bent by the orders written outside those regions
(`tests.fakes.obedience`)."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.fakes.chat_requests import (
    Body,
    RecordedRequest,
    Rule,
    first_rule,
    last_text,
    message_text,
)
from tests.fakes.obedience import (
    Orders,
    markers_from_rule,
    mask_boundaries,
    outside_regions,
    readable,
)
from tests.fakes.provider_kinds import schema_for
from tests.fakes.realistic import LEVELS, RealisticFaker, prose, topic_words
from tests.fakes.schema_faker import HINT_CHARS, SchemaFaker


class ModelReplies:
    """The reply half of FakeOpenAI: reads the instance's `seed`, `replies`, `obedient` and the
    scripts, so a test may change them between requests."""

    seed: int
    replies: str
    provider: str
    obedient: bool
    _scripts: list[Rule]

    def _content_for(self, record: RecordedRequest) -> str:
        body = record.body
        script = first_rule(self._scripts, body)
        if script is not None:
            reply = script.reply(body) if callable(script.reply) else script.reply
            return reply if isinstance(reply, str) else json.dumps(reply)
        value, orders = self._generate(body, obedient=self.obedient)
        record.obeyed = orders.described()
        return json.dumps(value)

    def generated(self, body: Body, *, obedient: bool) -> Any:
        """The reply the fake generates for `body` (scripts and faults aside), as a gullible or
        an honest model: the same request both ways shows whether an order moved the reply."""
        return self._generate(body, obedient=obedient)[0]

    def _generate(self, body: Body, *, obedient: bool) -> tuple[Any, Orders]:
        system, user = last_text(body, "system"), last_text(body, "user")
        markers = markers_from_rule(system)
        schema = schema_for(body, self.provider)   # the prompt's only, where ignored
        hint = readable(user, markers)
        rng = random.Random(mask_boundaries(f"{self.seed}\x00{system}\x00{user}", markers))
        value: Any
        free_text = None
        if self.replies != "minimal":
            faker = RealisticFaker(schema or {}, prompt=hint, level=LEVELS[self.replies], rng=rng)
            value = faker.make() if schema is not None else {
                "answer": prose(rng.randint(*LEVELS[self.replies].top_words),
                                topic_words(hint), rng)}
            free_text = faker.prose.__contains__ if schema is not None else None
        elif schema is None:
            value = {"answer": f"fake answer for {hint[:HINT_CHARS]}"}
        else:
            value = SchemaFaker(schema, hint=hint, rng=rng).make()
        if not obedient:
            return value, Orders()
        said = "\n".join(
            outside_regions(message_text(m), markers)
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") in ("system", "user")
        )
        orders = Orders.read(said)
        value = orders.apply(value, free_text)
        if schema is None and orders.say:
            value = {"answer": orders.say}
        return value, orders

    def _rng(self, body: Body, purpose: str) -> random.Random:
        """A generator for one random choice about one request: the same seed and request
        always choose the same way."""
        system, user = last_text(body, "system"), last_text(body, "user")
        markers = markers_from_rule(system)
        text = f"{self.seed}\x00{purpose}\x00{body.get('model')}\x00{system}\x00{user}"
        return random.Random(mask_boundaries(text, markers))
