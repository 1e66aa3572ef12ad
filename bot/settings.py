"""All settings of a process, composed from each layer's own part, read once at the top.

Every layer owns its settings model (engine/settings.py `EngineSettings`, storage/settings.py,
bot/service/settings.py, bot/scheduling/settings.py, bot/http/settings.py, bot/slack/settings.py);
this module composes them into `Settings` and hands each layer only its part.

Sources, strongest first: keyword arguments, the environment, a `.env` file in the current
directory, then `dialectic.toml` (the file `DIALECTIC_CONFIG` names, else the first found in the
current directory and `$XDG_CONFIG_HOME/dialectic/`: bot/sources.py, for every command alike).
Names are flat everywhere: a field `daily_budget_usd` is the variable `DIALECTIC_DAILY_BUDGET_USD`
and the toml key `daily_budget_usd`; the provider, Slack and database variables keep their usual
names (`OPENAI_API_KEY`, `SLACK_BOT_TOKEN`, `DATABASE_URL`, ...).
Lists accept the plain form in the environment (`DIALECTIC_REVIEWERS=U111,U222`), string mappings
`key=value` pairs (`DIALECTIC_MODELS=judge=gpt-4o,pro=gpt-4o-mini`); both also accept JSON.

Mistakes are one line naming the variable, or the file, line and column, and what to do:
`load_settings()` raises `ConfigurationError` with that line. Unknown keys in the file are errors
with a did-you-mean; unknown `DIALECTIC_*` variables are reported by `unknown_variables()`, and
with an `OTEL_*` variable set without the OpenTelemetry extra, by `setup_warnings()`.
"""

from __future__ import annotations

import difflib
import json
import tomllib
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AliasChoices, BaseModel, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from bot.http.settings import HttpSettings
from bot.scheduling.config import ScheduleConfig
from bot.scheduling.settings import SchedulingSettings
from bot.service.settings import ServiceSettings
from bot.service.tracing import missing_extra
from bot.slack.settings import SlackSettings
from bot.sources import CONFIG_VARIABLE, Sources, find_sources, with_provider_keys
from engine.core.presets import BUILTIN_PRESETS
from engine.errors import ConfigurationError
from engine.settings import (
    EngineSettings,
    JudgeSpec,
    ModelPrice,
    PresetSpec,
    ProviderSpec,
    ThresholdSpec,
)
from storage.settings import StorageSettings

PREFIX = "DIALECTIC_"
#: Optional settings whose empty value is a mistake to report, not "unset" (an empty token
#: must never mean "no authentication").
EMPTY_IS_AN_ERROR = frozenset({"api_token"})
#: Variables with the prefix that are not settings (the loader's own, the test harness's).
NOT_SETTINGS = frozenset({CONFIG_VARIABLE, "DIALECTIC_TEST_PG_URL",
                          "DIALECTIC_EXTRAS"})  # `make run`'s extras (README "Tracing")

SECTIONS: dict[str, type[BaseModel]] = {
    "engine": EngineSettings, "storage": StorageSettings, "service": ServiceSettings,
    "scheduling": SchedulingSettings, "http": HttpSettings, "slack": SlackSettings,
}


def _env_names(name: str, info: FieldInfo) -> tuple[str, ...]:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        own = tuple(c for c in alias.choices if isinstance(c, str) and c.isupper())
        if own:
            return own
    return (PREFIX + name.upper(),)


def _fields() -> Iterator[tuple[str, str, FieldInfo]]:
    for section, model in SECTIONS.items():
        for name, info in model.model_fields.items():
            yield section, name, info


#: Tables inside the settings (presets, their judges and thresholds, prices, schedules).
NESTED: tuple[type[BaseModel], ...] = (PresetSpec, JudgeSpec, ThresholdSpec, ModelPrice,
                                       ScheduleConfig, ProviderSpec)

SECTION_OF: dict[str, str] = {name: section for section, name, _ in _fields()}
FIELD_INFO: dict[str, FieldInfo] = {name: info for _, name, info in _fields()}
ENV_NAMES: dict[str, tuple[str, ...]] = {name: _env_names(name, info)
                                         for _, name, info in _fields()}
FIELD_OF_ENV: dict[str, str] = {env: name for name, envs in ENV_NAMES.items() for env in envs}
assert len(SECTION_OF) == sum(len(m.model_fields) for m in SECTIONS.values()), \
    "two layers' settings use the same field name"


def did_you_mean(word: str, options: Iterator[str] | list[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------------------------
# reading the environment and the file


def _kind(annotation: Any) -> str:
    """How an environment string becomes the field's value: "scalar" as is (pydantic converts),
    "list" comma-separated, "pairs" key=value pairs, "json" JSON only (lists of tables)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return _kind(inner[0]) if len(inner) == 1 else "scalar"
    args = [a for a in get_args(annotation) if a is not Ellipsis]
    if origin in (tuple, list, set, frozenset):
        return "list" if all(a in (str, int, float) for a in args) else "json"
    if origin is dict:
        return "pairs" if all(a is str or _words(a) or _number(a) for a in args) else "json"
    return "scalar"


def _number(annotation: Any) -> bool:
    """A number (`PositiveInt` included), written as its digits (`model=8192`)."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation in (int, float)


def _words(annotation: Any) -> bool:
    """A Literal of strings (a reasoning effort): written as a word, like a str."""
    return get_origin(annotation) is Literal and all(isinstance(a, str)
                                                     for a in get_args(annotation))


def parse_env_value(variable: str, raw: str, annotation: Any) -> Any:
    """The environment's text as the value pydantic should validate; ConfigurationError when a
    structured setting is not valid JSON."""
    kind = _kind(annotation)
    text = raw.strip()
    if kind == "scalar":
        return raw
    if text[:1] in ("[", "{") or kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            shape = "a JSON list" if kind in ("list", "json") and text[:1] != "{" else "JSON"
            raise ConfigurationError(f"{variable}: expected {shape} ({exc.msg} at column "
                                     f"{exc.colno})") from None
    items = [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]
    if kind == "list":
        return items
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(f"{variable}: expected key=value pairs separated by commas "
                                     f"(e.g. judge=gpt-4o,pro=gpt-4o-mini), got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


def read_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings set in the environment, by field name. An empty value of an optional setting
    means unset (`OPENAI_API_KEY=` in a compose .env file runs the rehearsal model), except where
    an empty value would weaken security: those are validated, and refused."""
    values: dict[str, Any] = {}
    for variable, field in FIELD_OF_ENV.items():
        if variable not in environ or field in values:
            continue
        raw = environ[variable]
        if not raw.strip() and _optional(field) and field not in EMPTY_IS_AN_ERROR:
            continue
        values[field] = parse_env_value(variable, raw, FIELD_INFO[field].annotation)
    return values


def _optional(field: str) -> bool:
    return FIELD_INFO[field].default is None


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per `DIALECTIC_*` variable that is no setting (a typo, most likely)."""
    known = set(FIELD_OF_ENV) | NOT_SETTINGS
    return [f"{name} is not a setting{did_you_mean(name, list(known))}; it is ignored"
            for name in sorted(environ) if name.startswith(PREFIX) and name not in known]


def setup_warnings(environ: Mapping[str, str]) -> list[str]:
    """What every command warns of before it starts: `DIALECTIC_*` names that are no setting,
    and tracing asked for without the package that traces."""
    return [*unknown_variables(environ), *filter(None, [missing_extra(environ)])]


def read_file(path: Path, *, required: bool) -> dict[str, Any]:
    """The toml file's settings; {} when the default file is absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigurationError(f"{CONFIG_VARIABLE}={path}: no such file") from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{path}: cannot read it ({exc})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(toml_error(path, exc)) from None
    unknown = [key for key in data if key not in SECTION_OF]
    if unknown:
        key = unknown[0]
        raise ConfigurationError(f"{path}: unknown setting {key!r}"
                                 f"{did_you_mean(key, list(SECTION_OF))}")
    return data


def toml_error(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    """`dialectic.toml:3:7: Expected '=' after a key` from tomllib's message, whose position
    comes last in parentheses ("(at line 3, column 7)" or "(at end of document)")."""
    text, sep, where = str(exc).rpartition(" (at ")
    where = where.removesuffix(")")
    if sep and where.startswith("line "):
        line, _, column = where.removeprefix("line ").partition(", column ")
        return f"{path}:{line}:{column}: {text}"
    if sep:
        return f"{path}: {text} at the {where.replace('document', 'file')}"
    return f"{path}: {exc}"


class _EnvironmentSource(PydanticBaseSettingsSource):
    """The environment, flat names (see the module docstring)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # everything is read at once in __call__

    def __call__(self) -> dict[str, Any]:
        return read_environment(find_sources().environ)


class _FileSource(PydanticBaseSettingsSource):
    """The settings file (bot/sources.py says which)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        sources = find_sources()
        return with_provider_keys(read_sources_file(sources), sources.environ)



# --------------------------------------------------------------------------------------------
# the composed settings


WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def listening_url(http: Mapping[str, Any]) -> str | None:
    """The public URL when `DIALECTIC_PUBLIC_URL` is unset: the address the server listens on
    (a wildcard address as 127.0.0.1), so every link follows `DIALECTIC_PORT`. None for port 0
    (any free port: not known before it is bound) or a value validation will refuse."""
    host = str(http.get("host", HttpSettings.model_fields["host"].default)).strip()
    port = str(http.get("port", HttpSettings.model_fields["port"].default)).strip()
    if not port.isdigit() or int(port) == 0:
        return None
    host = "127.0.0.1" if host in WILDCARDS else host
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{host}:{int(port)}"


class Settings(BaseSettings):
    """Each layer's settings, composed. `Settings()` reads the environment and the file;
    `load_settings()` does the same and turns mistakes into one line."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    engine: EngineSettings = Field(default_factory=EngineSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    scheduling: SchedulingSettings = Field(default_factory=SchedulingSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _EnvironmentSource(settings_cls), _FileSource(settings_cls))

    @model_validator(mode="before")
    @classmethod
    def _into_sections(cls, data: Any) -> Any:
        """Flat names (as the environment and the file give them) go to their layer's section."""
        if not isinstance(data, Mapping):
            return data
        sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
        for raw_key, value in data.items():
            key = str(raw_key)
            if key in SECTIONS and isinstance(value, Mapping | BaseModel):
                given = (value.model_dump(exclude_unset=True) if isinstance(value, BaseModel)
                         else dict(value))
                sections[key].update(given)
            elif key in SECTION_OF or key in FIELD_OF_ENV:
                field = FIELD_OF_ENV.get(key, key)
                sections[SECTION_OF[field]][field] = value
            else:
                raise ValueError(f"unknown setting {key!r}{did_you_mean(key, list(SECTION_OF))}")
        if not str(sections["service"].get("public_url") or "").strip():
            sections["service"].pop("public_url", None)
            listening = listening_url(sections["http"])
            if listening is not None:
                sections["service"]["public_url"] = listening
        return {name: values for name, values in sections.items() if values}

    @model_validator(mode="after")
    def _schedules_name_known_presets(self) -> Settings:
        known = set(BUILTIN_PRESETS) | set(self.engine.presets)
        for config in self.scheduling.schedules:
            if config.preset not in known:
                raise ValueError(f"schedule {config.id!r}: unknown preset {config.preset!r}"
                                 f"{did_you_mean(config.preset, sorted(known))}; choose one of: "
                                 f"{', '.join(sorted(known))}")
        return self

    def listening_on(self, host: str | None, port: int | None) -> Settings:
        """These settings with the address given on the command line (`serve --port`): the
        public URL follows it, unless DIALECTIC_PUBLIC_URL set one."""
        given = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
        if not given:
            return self
        http = self.http.model_copy(update=given)
        update: dict[str, Any] = {"http": http}
        derived = listening_url(http.model_dump())
        if derived and self.service.public_url == listening_url(self.http.model_dump()):
            update["service"] = self.service.model_copy(update={"public_url": derived})
        return self.model_copy(update=update)

    def secrets(self) -> tuple[str, ...]:
        """Every configured secret, for log redaction."""
        return (self.engine.secrets() + self.storage.secrets() + self.service.secrets()
                + self.scheduling.secrets() + self.slack.secrets())

    @property
    def is_rehearsal(self) -> bool:
        return self.engine.is_rehearsal

    @property
    def slack_enabled(self) -> bool:
        """Slack is configured: what a finished debate owes it goes to the outbox, from every
        command that runs debates (a `serve` or `worker` delivers it)."""
        return self.slack.enabled

    @property
    def multi_workspace(self) -> bool:
        """Installed from a link in many Slack workspaces: reviewer links name a workspace."""
        return self.slack.multi_workspace


# --------------------------------------------------------------------------------------------
# loading, with mistakes as one line


def read_sources_file(sources: Sources) -> dict[str, Any]:
    return {} if sources.config is None else read_file(sources.config, required=sources.named)


@dataclass(frozen=True, slots=True)
class Setup:
    """The settings, where they came from, and what to warn of before a command starts."""

    settings: Settings
    sources: Sources
    warnings: tuple[str, ...]


def load_setup(environ: Mapping[str, str] | None = None, *, cwd: Path | None = None,
               **overrides: Any) -> Setup:
    """The one loader every command calls: the environment, `.env` and the settings file
    (bot/sources.py); `ConfigurationError` with one line naming the variable or file and what
    is wrong."""
    sources = find_sources(environ, cwd=cwd)
    path = sources.config or sources.candidates[0]
    from_file = read_sources_file(sources)
    from_env = read_environment(sources.environ)
    values = with_provider_keys({**from_file, **from_env, **overrides}, sources.environ)
    try:
        settings = Settings.model_validate(values)
    except ValidationError as exc:
        raise ConfigurationError(describe_errors(exc, from_env=from_env, file=path)) from None
    return Setup(settings, sources, tuple(setup_warnings(sources.environ)))


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """`load_setup(...).settings`."""
    return load_setup(environ, **overrides).settings


def describe_errors(exc: ValidationError, *, from_env: Mapping[str, Any], file: Path) -> str:
    """Pydantic's errors as one line, each naming where the bad value came from."""
    parts = []
    for error in exc.errors(include_url=False):
        loc = [str(p) for p in error["loc"]]
        if loc and loc[0] in SECTIONS:
            loc = loc[1:]
        field = loc[0] if loc else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden" and len(loc) > 1:
            siblings = _sibling_fields(loc)
            message = f"unknown key {loc[-1]!r}{did_you_mean(loc[-1], siblings)}"
        where = _where(field, loc, from_env=from_env, file=file)
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _where(field: str, loc: list[str], *, from_env: Mapping[str, Any], file: Path) -> str:
    if not field:
        return str(file) if file.exists() else ""
    if field in from_env:
        return ENV_NAMES[field][0]
    dotted = ".".join(loc)
    return f"{file}: {dotted}" if file.exists() else dotted


def _sibling_fields(loc: list[str]) -> list[str]:
    """The keys that could have been meant instead of an unknown nested one."""
    return [name for model in NESTED for name in model.model_fields]


__all__ = ["SECTIONS", "Settings", "Setup", "describe_errors", "load_settings", "load_setup",
           "setup_warnings", "unknown_variables"]
