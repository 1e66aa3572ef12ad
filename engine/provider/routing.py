"""Several providers at once: one `OpenAIGateway` per named provider (`[providers.NAME]`), each
with its own client, profile, lessons (keyed by its endpoint), circuit and concurrency, plus the
default endpoint's for bare model names. A call goes to the gateway its model's prefix names
(engine/provider/naming.py), asked by the bare name; the reply names the model `NAME:answered`,
so prices, the book of answering models and the records follow the provider that answered."""

from __future__ import annotations

from dataclasses import replace

from engine.errors import ConfigurationError
from engine.provider.gateway import OpenAIGateway
from engine.provider.lessons import LessonBook
from engine.provider.llm import CallSpec, Reply, T
from engine.settings import EngineSettings


class ProviderRouter:
    """`engine.provider.llm.LLMClient` over every configured provider; gateways are built at
    first use (a provider no debate asks is never called)."""

    def __init__(self, settings: EngineSettings, *, lessons: LessonBook | None = None) -> None:
        self._settings = settings
        self._lessons = lessons
        self._gateways: dict[str | None, OpenAIGateway] = {}

    @property
    def rehearsal(self) -> bool:
        return False

    def gateway(self, provider: str | None) -> OpenAIGateway:
        """The gateway of `provider` (None: the default endpoint's)."""
        found = self._gateways.get(provider)
        if found is None:
            if provider is not None and provider not in self._settings.providers:
                raise ConfigurationError(f"no provider {provider!r} is configured")
            spec = self._settings.providers.get(provider) if provider else None
            found = OpenAIGateway(self._settings.for_provider(provider), lessons=self._lessons,
                                  name=provider,
                                  max_concurrency=spec.max_concurrency if spec else None)
            self._gateways[provider] = found
        return found

    def gateway_for(self, model: str) -> tuple[OpenAIGateway, str]:
        """The gateway a model goes to, and the name it is asked by there."""
        provider, bare = self._settings.route(model)
        return self.gateway(provider), bare

    async def complete(self, spec: CallSpec[T]) -> Reply[T]:
        gateway, bare = self.gateway_for(spec.model)
        return await gateway.complete(replace(spec, model=bare))

    async def window(self, model: str) -> int | None:
        gateway, bare = self.gateway_for(model)
        return await gateway.window(bare)

    async def aclose(self) -> None:
        for gateway in self._gateways.values():
            await gateway.aclose()
        self._gateways.clear()
