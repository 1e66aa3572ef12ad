"""Answering Slack the moment a listener acks.

Bolt's asyncio runner starts a listener as a task, then looks whether it has acked every 10 ms
(`await asyncio.sleep(0.01)` until `ack.response` is set): every command's 200 waits up to 10 ms
after its ack, and a hundred waiting commands wake the loop a hundred times every 10 ms for
nothing. `PromptRunner` is that runner with the wait made a future the ack completes: the same
listener, start, error and completion handlers, the same responses, the same 3 s limit. What
Bolt does otherwise (events it acks itself, lazy listeners, `process_before_response`) is left
to Bolt's own code.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.listener.async_listener import AsyncListener
from slack_bolt.listener.asyncio_runner import AsyncioListenerRunner
from slack_bolt.logger.messages import warning_did_not_call_ack
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

#: The longest work after an ack waits for the other requests' answers (under a steady stream
#: of commands the process is never without one; a start's lease is at least 10 s)
MAX_QUIET_WAIT = 1.0


class Answering:
    """The requests this process is still answering on the prompt path (listener started, its
    answer not yet handed back to Bolt). Work after an ack waits until none is left (`quiet`),
    so the answers of a burst go before the work that none of them needs: asyncio runs ready
    work first in, first out, and otherwise each ack's post-ack work queues in front of the acks
    still to be sent."""

    def __init__(self) -> None:
        self.count = 0
        self._quiet: asyncio.Event | None = None

    def begin(self) -> None:
        self.count += 1

    def end(self) -> None:
        self.count -= 1
        if self.count <= 0 and self._quiet is not None:
            self._quiet.set()
            self._quiet = None

    async def quiet(self, timeout: float = MAX_QUIET_WAIT) -> None:
        """Return once no request is being answered, or after `timeout` seconds."""
        if self.count <= 0:
            return
        if self._quiet is None:
            self._quiet = asyncio.Event()
        try:
            async with asyncio.timeout(timeout):
                await self._quiet.wait()
        except TimeoutError:
            pass


class PromptAck(AsyncAck):
    """Bolt's ack, which also completes a future with its first response (the listener's
    `ack()`, or the runner's 500 when the listener failed before acking)."""

    def __init__(self) -> None:
        self.answered: asyncio.Future[BoltResponse] = (
            asyncio.get_running_loop().create_future())
        super().__init__()  # type: ignore[no-untyped-call]  # bolt leaves it untyped

    @property
    def response(self) -> BoltResponse | None:
        return self._response

    @response.setter
    def response(self, value: BoltResponse | None) -> None:
        self._response = value
        if value is not None and not self.answered.done():
            self.answered.set_result(value)


class PromptRunner(AsyncioListenerRunner):
    """Bolt's `AsyncioListenerRunner`, waiting for the ack on a future instead of polling."""

    _listening: set[asyncio.Future[None]]

    def __init__(self, answering: Answering | None = None, **handlers: Any) -> None:
        super().__init__(**handlers)
        self._listening = set()
        self.answering = Answering() if answering is None else answering

    async def run(self, request: AsyncBoltRequest, response: BoltResponse,
                  listener_name: str, listener: AsyncListener,
                  starting_time: float | None = None) -> BoltResponse | None:
        if (self.process_before_response or request.lazy_only or listener.lazy_functions
                or listener.auto_acknowledgement or request.context.ack.response is not None):
            return await super().run(request, response, listener_name, listener, starting_time)
        self.answering.begin()
        try:
            return await self._answer(request, response, listener_name, listener,
                                      time.time() if starting_time is None else starting_time)
        finally:
            self.answering.end()

    async def _answer(self, request: AsyncBoltRequest, response: BoltResponse,
                      listener_name: str, listener: AsyncListener, started: float
                      ) -> BoltResponse | None:
        # Bolt made the context's ack already (building the middleware's arguments); unused
        ack = request.context["ack"] = PromptAck()
        task = asyncio.ensure_future(self._listen(ack, request, response, listener))
        self._listening.add(task)   # held until done, as the loop holds tasks weakly
        task.add_done_callback(self._listening.discard)
        try:
            async with asyncio.timeout(max(0.0, listener.ack_timeout - (time.time() - started))):
                await asyncio.shield(ack.answered)
        except TimeoutError:
            pass
        # the response acked, even if the listener failed since (Bolt's polling would read the
        # None its error handling leaves, and answer 404 when the failure came within 10 ms)
        answer = ack.answered.result() if ack.answered.done() else None
        if response is None and answer is None:
            self.logger.warning(warning_did_not_call_ack(listener_name))
            return None
        if response is None and answer is not None:
            self._debug_log_completion(started, answer)
            return answer
        return response

    async def _listen(self, ack: PromptAck, request: AsyncBoltRequest, response: BoltResponse,
                      listener: AsyncListener) -> None:
        """Bolt's `run_ack_function_asynchronously`, line for line."""
        try:
            await self.listener_start_handler.handle(request=request, response=response)
            await listener.run_ack_function(request=request, response=response)
        except Exception as e:   # Bolt's: a 500 unless acked already, and its error handler
            if response is None:
                response = BoltResponse(status=500)
            response.status = 500
            if ack.response is not None:
                response = None  # type: ignore[assignment]
            await self.listener_error_handler.handle(error=e, request=request,
                                                     response=response)
            ack.response = response
        finally:
            await self.listener_completion_handler.handle(request=request, response=response)


def answer_promptly(app: AsyncApp, answering: Answering | None = None) -> None:
    """Give `app` the prompt runner, with the handlers its own runner has; `answering` counts
    the requests it is answering (work after an ack waits on it)."""
    own = app.listener_runner
    app._async_listener_runner = PromptRunner(   # Bolt has no setter for it
        answering,
        logger=own.logger, process_before_response=own.process_before_response,
        listener_error_handler=own.listener_error_handler,
        listener_start_handler=own.listener_start_handler,
        listener_completion_handler=own.listener_completion_handler,
        lazy_listener_runner=own.lazy_listener_runner)


__all__ = ["MAX_QUIET_WAIT", "Answering", "PromptAck", "PromptRunner", "answer_promptly"]
