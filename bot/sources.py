"""Where a process's setup comes from, found the same way by every command: the environment, a
`.env` file in the current directory (the environment wins over it), and one `dialectic.toml`.

The settings file is the one `DIALECTIC_CONFIG` names (it must exist), else the first of
`./dialectic.toml` and `$XDG_CONFIG_HOME/dialectic/dialectic.toml` (XDG_CONFIG_HOME defaults to
~/.config) that exists, else none. `Sources.described()` says which, for `--verbose` and `doctor`;
`Sources.looked_at()` names every place tried, for messages such as "unknown preset".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from engine.errors import ConfigurationError

CONFIG_VARIABLE = "DIALECTIC_CONFIG"
DEFAULT_CONFIG = "dialectic.toml"
DOTENV = ".env"


def config_home(environ: Mapping[str, str]) -> Path:
    """`$XDG_CONFIG_HOME/dialectic` (default ~/.config/dialectic), as the XDG spec says: an
    unset, empty or relative XDG_CONFIG_HOME means the default."""
    home = environ.get("XDG_CONFIG_HOME", "")
    base = Path(home) if home and Path(home).is_absolute() else Path.home() / ".config"
    return base / "dialectic"


@dataclass(frozen=True, slots=True)
class Sources:
    """The setup's sources: the merged environment (`.env` under the process's), the `.env`
    file read (if any), the settings file found (if any) and where it was looked for."""

    environ: Mapping[str, str]
    dotenv: Path | None
    config: Path | None
    named: bool                       # DIALECTIC_CONFIG named the file: it must exist
    candidates: tuple[Path, ...]      # where a dialectic.toml was looked for, in order

    def looked_at(self) -> str:
        """Where the presets and settings were read from, or every place tried, for a message
        about what the file defines ("unknown preset")."""
        if self.config is not None:
            return f"settings file: {self.config}"
        tried = ", ".join(str(p.absolute()) for p in self.candidates)
        return f"no settings file (looked for {tried}; or name one with {CONFIG_VARIABLE})"

    def described(self) -> tuple[str, ...]:
        """One line per source, for `--verbose` and `doctor`."""
        if self.config is not None:
            how = f"named by {CONFIG_VARIABLE}" if self.named else "found"
            config = f"settings file: {self.config.absolute()} ({how})"
        else:
            config = "settings file: none " + self.looked_at().removeprefix("no settings file ")
        dotenv = (f".env file: {self.dotenv.absolute()} (the environment wins over it)"
                  if self.dotenv
                  else f".env file: none in {Path.cwd()}")
        return config, dotenv


def find_sources(environ: Mapping[str, str] | None = None, *, cwd: Path | None = None
                 ) -> Sources:
    """The sources as every command finds them. `environ` (default: the process environment,
    with `.env` under it) given, it is taken whole: no `.env` is read."""
    given = environ is not None
    environ = os.environ if environ is None else environ
    cwd = Path() if cwd is None else cwd   # relative: messages say `dialectic.toml:3:7`
    dotenv_path = cwd / DOTENV
    dotenv = dotenv_path if dotenv_path.is_file() and not given else None
    from_dotenv = {k: v for k, v in dotenv_values(dotenv).items() if v is not None} if dotenv \
        else {}
    merged = {**from_dotenv, **environ}
    named = merged.get(CONFIG_VARIABLE)
    if named:
        return Sources(merged, dotenv, Path(named), True, (Path(named),))
    candidates = (cwd / DEFAULT_CONFIG, config_home(merged) / DEFAULT_CONFIG)
    found = next((p for p in candidates if p.is_file()), None)
    return Sources(merged, dotenv, found, False, candidates)


__all__ = ["CONFIG_VARIABLE", "DEFAULT_CONFIG", "Sources", "config_home", "find_sources",
           "with_provider_keys"]


def with_provider_keys(values: dict[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """`values` with each named provider's key read from the variable its `api_key_env` names
    (the engine reads no environment). A key written in the settings themselves, or a variable
    that is not set, is one line naming the provider."""
    providers = values.get("providers")
    if not isinstance(providers, Mapping):
        return values
    filled: dict[str, Any] = {}
    for name, spec in providers.items():
        if not isinstance(spec, Mapping):
            filled[name] = spec
            continue
        if "api_key" in spec:
            raise ConfigurationError(f"providers.{name}: do not write the key in the settings; "
                                     f"put it in an environment variable and name it with "
                                     f"api_key_env = \"{name.upper()}_API_KEY\"")
        variable = spec.get("api_key_env")
        key = environ.get(variable, "").strip() if isinstance(variable, str) else ""
        if isinstance(variable, str) and not key:
            raise ConfigurationError(f"providers.{name}: api_key_env names {variable}, which is "
                                     f"not set (export {variable}=…, or remove api_key_env for "
                                     "a server that needs no key)")
        filled[name] = {**spec, "api_key": key} if key else dict(spec)
    return {**values, "providers": filled}
