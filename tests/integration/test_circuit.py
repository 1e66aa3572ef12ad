"""The provider's circuit: an endpoint that cannot be reached (connection refused, a name that
does not resolve) stops being called after a few failures, so a debate fails in moments with the
one reason, and progress shows every phase failed; after the cooldown one probe finds out whether
it is back. The clock is injected; the refused port and the fake server are real."""

from __future__ import annotations

import errno
import itertools
import random
import socket

import pytest
from pydantic import BaseModel

from bot.service.progress import PhaseState, progress_for
from engine.core.debate import prepare, run_debate
from engine.domain import DebateRequest, Event
from engine.errors import (
    LLMBadRequest,
    LLMCircuitOpen,
    LLMTimeout,
    LLMTransientError,
    LLMUnreachable,
)
from engine.ports import MemoryCheckpointStore
from engine.provider.circuit import Circuit, unreachable_reason
from engine.provider.gateway import OpenAIGateway
from engine.provider.llm import CallSpec, Prompt
from engine.vocabulary import ResultStatus
from tests.fakes.fixtures import gateway_settings
from tests.fakes.openai_server import FakeOpenAI

TOPIC = "Should we move billing to PostgreSQL?"
ENDPOINT = "http://127.0.0.1:9/v1"


class Argument(BaseModel):
    stance: str
    claim: str


class Sleeps:
    """An injected `sleep` that records the delays asked for and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def _chained(*errors: BaseException) -> BaseException:
    """errors[0] raised from errors[1] raised from ... (as httpx wraps the socket's error)."""
    for outer, inner in itertools.pairwise(errors):
        outer.__cause__ = inner
    return errors[0]


@pytest.mark.parametrize(("exc", "reason"), [
    (_chained(RuntimeError("Connection error."), OSError("All attempts failed"),
              ConnectionRefusedError(errno.ECONNREFUSED, "Connect call failed")),
     "connection refused"),
    (_chained(RuntimeError("Connection error."),
              socket.gaierror(socket.EAI_NONAME, "Name or service not known")),
     "the host name does not resolve (Name or service not known)"),
    (_chained(RuntimeError("x"), OSError(errno.EHOSTUNREACH, "No route to host")),
     "No route to host"),
    (_chained(RuntimeError("x"), ConnectionResetError(errno.ECONNRESET, "reset")), None),
    (TimeoutError("slow"), None),
    (RuntimeError("anything else"), None),
])
def test_what_counts_as_unreachable(exc: BaseException, reason: str | None) -> None:
    assert unreachable_reason(exc) == reason


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _through(circuit: Circuit, outcome: BaseException | None) -> None:
    """One request through the circuit that ends with `outcome` (None: a reply)."""
    with circuit.request(ENDPOINT):
        if outcome is not None:
            raise outcome


REFUSED = LLMUnreachable("could not reach", reason="connection refused")


def test_the_circuit_opens_after_the_threshold_and_probes_after_the_cooldown() -> None:
    clock = Clock()
    circuit = Circuit(threshold=2, cooldown=10.0, clock=clock)
    with pytest.raises(LLMUnreachable):
        _through(circuit, REFUSED)
    with pytest.raises(LLMCircuitOpen, match="connection refused"):  # the second opens it
        _through(circuit, REFUSED)
    assert circuit.open
    clock.now = 9.0
    with pytest.raises(LLMCircuitOpen, match=r"not calling it again for 1 s"):
        _through(circuit, None)  # refused before it runs: no request is sent
    clock.now = 10.0
    with pytest.raises(LLMCircuitOpen):  # the probe finds it still down: open again
        _through(circuit, REFUSED)
    clock.now = 15.0
    with pytest.raises(LLMCircuitOpen):
        _through(circuit, None)
    clock.now = 20.0
    _through(circuit, None)  # the probe is answered: closed
    assert not circuit.open and circuit.failures == 0
    _through(circuit, None)


@pytest.mark.parametrize(("answer", "closes"), [
    (LLMBadRequest("400", status=400), True),      # any answer shows the endpoint is there
    (LLMTransientError("HTTP 503", status=503), True),
    (LLMTimeout("slow"), False),                     # a probe that times out told nothing
])
def test_a_probe_closes_the_circuit_only_on_an_answer(answer: BaseException,
                                                      closes: bool) -> None:
    clock = Clock()
    circuit = Circuit(threshold=1, cooldown=5.0, clock=clock)
    with pytest.raises(LLMCircuitOpen):
        _through(circuit, REFUSED)
    clock.now = 5.0
    with pytest.raises(type(answer)):
        _through(circuit, answer)
    assert circuit.open is not closes
    if not closes:  # another full cooldown before the next probe
        with pytest.raises(LLMCircuitOpen, match="for 5 s"):
            _through(circuit, None)


def _refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _spec() -> CallSpec[Argument]:
    return CallSpec(model="gpt-4o-mini", schema=Argument, role="pro", timeout=5.0,
                    prompt=Prompt(system="You argue FOR the proposition.", user=TOPIC))


async def test_the_gateway_stops_calling_an_endpoint_that_refuses_until_it_is_back() -> None:
    base_url = _refused_url()
    clock, sleeps = Clock(), Sleeps()
    gateway = OpenAIGateway(gateway_settings(base_url, max_retries=4), sleep=sleeps,
                            rng=random.Random(1), circuit=Circuit(threshold=3, cooldown=30.0,
                                                                  clock=clock))
    try:
        with pytest.raises(LLMCircuitOpen, match="connection refused"):
            await gateway.complete(_spec())
        assert len(sleeps.delays) == 2  # three refusals open it; no fourth or fifth attempt
        with pytest.raises(LLMCircuitOpen, match="not calling it again"):
            await gateway.complete(_spec())
        assert len(sleeps.delays) == 2  # refused at once: no request, no backoff
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        async with FakeOpenAI(port=port) as fake:
            clock.now = 30.0
            reply = await gateway.complete(_spec())  # the probe: answered, closed again
            assert reply.value.claim and fake.count() == 1
            await gateway.complete(_spec())
    finally:
        await gateway.aclose()


async def test_a_debate_against_a_refusing_endpoint_fails_fast_and_shows_it() -> None:
    settings = gateway_settings(_refused_url(), backoff_base=0.01, backoff_cap=0.05)
    prepared = prepare(settings, DebateRequest(topic=TOPIC, mode="simple"))
    progress = progress_for(settings, prepared.request)
    events: list[Event] = []

    class Sink:
        async def emit(self, event: Event) -> None:
            events.append(event)
            progress.apply_event(event)

    gateway = OpenAIGateway(settings)
    try:
        result = await run_debate(prepared, debate_id="d1", settings=settings, llm=gateway,
                                  store=MemoryCheckpointStore(), sink=Sink())
    finally:
        await gateway.aclose()
    assert result.status is ResultStatus.FAILED
    assert result.error.startswith("no model call succeeded: could not reach")
    assert "connection refused" in result.error
    retries = [e for e in events if e.kind.value == "step_retry"]
    assert len(retries) < settings.circuit_failures  # not four retries for each of five steps
    assert all(p.state is PhaseState.FAILED for p in progress.phases())
    assert progress.calls_missing == 2   # the openings; nothing else had an argument to read
    assert {p.detail for p in progress.phases()[1:]} == {"not run"}
    assert "skipped, as neither side made an argument: rebuttal 1, verdict" in result.missing
