"""The provider door: everything between a debate and an OpenAI-compatible endpoint.

    llm         what the engine asks of a model (`LLMClient`): the one interface the runner sees
    gateway     `OpenAIGateway`, the only code that imports `openai`: retries, re-asks, errors
    naming      `NAME:model`: `split_model(model, providers)` -> (provider or None, model)
    routing     `ProviderRouter`: a gateway per named provider (`[providers.NAME]`), by prefix
    replies     a reply as text: the JSON inside it, a validation error told back to the model
    backoff     Retry-After and jittered exponential backoff
    circuit     the endpoint's circuit breaker
    redaction   credentials inside URLs, stripped from everything shown
    profiles    what each provider and model accepts (reasoning, sampling, caps, output modes)
    lessons     what a provider's 400s taught, taken once under a lock, kept (`LessonBook`)
    rehearsal   the offline rehearsal model (`RehearsalModel`), deterministic and free

May import: the basics at the top of engine/ (errors, vocabulary, settings, domain) and
engine.untrusted (the rehearsal model reads prompts the way a model would). `profiles`,
`naming` and `redaction` import nothing from the engine: the settings are built on them. Never
money, oversight, the protocols, prompts, ports, the runner or the debate: they sit above the
door (pyproject.toml import-linter contracts).
"""
