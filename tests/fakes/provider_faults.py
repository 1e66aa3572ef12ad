"""What the fake provider is told to do instead of its own reply, request by request: scripted
replies, HTTP errors, connection resets, hangs, the content filter, invalid JSON and refusals.
Each rule matches requests (`chat_requests.matches`) and may be used up (`times`); faults take
priority over scripts, each in insertion order."""

from __future__ import annotations

from tests.fakes.chat_requests import Body, Matcher, RecordedRequest, ReplySource, Rule

DEFAULT_INVALID_CONTENT = "Sure! Here is what I think: the proposal is sound, mostly."
DEFAULT_REFUSAL = "I'm sorry, but I can't help with that."


class ProviderRules:
    """The rules half of FakeOpenAI: what tests configure, and forget with `clear`."""

    requests: list[RecordedRequest]
    in_flight: int
    max_in_flight: int

    def __init__(self) -> None:
        self._faults: list[Rule] = []
        self._hangs: list[Rule] = []
        self._stalls: list[Rule] = []
        self._scripts: list[Rule] = []

    def script(self, match: Matcher, reply: ReplySource, *, times: int | None = None) -> None:
        """Answer matching requests with `reply` (text, a dict sent as JSON, or a function)."""
        self._scripts.append(Rule(match, "script", times, reply=reply))

    def fail(
        self,
        match: Matcher,
        status: int,
        *,
        times: int | None = 1,
        headers: dict[str, str] | None = None,
        body: Body | None = None,
    ) -> None:
        """Answer matching requests with HTTP `status` (and the given headers and error body)."""
        self._faults.append(
            Rule(match, "fail", times, status=status, headers=dict(headers or {}), body=body)
        )

    def reset_connection(self, match: Matcher, times: int = 1) -> None:
        """Close the connection without answering."""
        self._faults.append(Rule(match, "reset", times))

    def hang(self, match: Matcher, seconds: float, times: int | None = 1) -> None:
        """Wait `seconds` before answering (as normal, or with a fault that also matches)."""
        self._hangs.append(Rule(match, "hang", times, seconds=seconds))

    def stall(self, match: Matcher, seconds: float, times: int | None = 1) -> None:
        """Send the reply's headers and half its body, then nothing for `seconds`: a body that
        stalls (the usage at its end arrives late, or never to a client that gave up)."""
        self._stalls.append(Rule(match, "stall", times, seconds=seconds))

    def content_filter(self, match: Matcher, times: int = 1) -> None:
        """Answer 200 with finish_reason "content_filter" and no content."""
        self._faults.append(Rule(match, "content_filter", times))

    def invalid_json(self, match: Matcher, times: int | None = 1, *,
                     content: str | None = None) -> None:
        """Answer 200 with content that is not valid for the schema (prose, unless given)."""
        self._faults.append(
            Rule(match, "invalid_json", times, reply=content or DEFAULT_INVALID_CONTENT)
        )

    def refuse(self, match: Matcher, text: str = DEFAULT_REFUSAL, *, times: int | None = 1
               ) -> None:
        """Answer 200 with the model declining in its own words: `content` null, `refusal` set
        (OpenAI's structured-outputs refusal)."""
        self._faults.append(Rule(match, "refuse", times, reply=text))

    def gateway_error(self, match: Matcher, code: int = 502,
                      message: str = "Upstream error from provider: overloaded", *,
                      times: int | None = 1) -> None:
        """Answer HTTP 200 with an `{"error": {...}}` body and no choices, as OpenRouter and
        LiteLLM proxies do when the upstream failed after the response began."""
        self._faults.append(Rule(match, "gateway_error", times, status=code, reply=message))

    def proxy_page(self, match: Matcher, times: int | None = 1) -> None:
        """Answer HTTP 200 with an HTML page, as a captive portal or a misrouted proxy does."""
        self._faults.append(Rule(match, "proxy_page", times))

    def empty_choices(self, match: Matcher, times: int | None = 1) -> None:
        """Answer 200 with `choices: []` (and usage): a provider's hiccup, not the model's."""
        self._faults.append(Rule(match, "empty_choices", times))

    def null_content(self, match: Matcher, times: int | None = 1) -> None:
        """Answer 200 with `content: null`, no refusal and finish_reason "stop"."""
        self._faults.append(Rule(match, "null_content", times))

    def clear(self) -> None:
        """Forget every rule and recorded request."""
        self._faults.clear()
        self._hangs.clear()
        self._stalls.clear()
        self._scripts.clear()
        self.requests.clear()
        self.max_in_flight = self.in_flight
