"""Typed settings: every setting is defined once, with its env name, default and docstring.

A settings class is a frozen dataclass whose fields are declared with :func:`setting`.
:func:`load_settings` reads them from an environment mapping (only ``main()`` passes
``os.environ``); a missing required setting raises :class:`MissingSetting`, which the
service entry points turn into a clear message and a non-zero exit.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class SettingsError(ValueError):
    """A setting is missing or cannot be parsed."""


class MissingSetting(SettingsError):
    pass


def setting(env: str, default: Any, doc: str) -> Any:
    """Declares one setting: its environment variable, its default (or REQUIRED) and what it does."""
    meta = {"env": env, "doc": doc}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple for sequence defaults")
    if default is REQUIRED:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def _parse(raw: str, kind: Any, env: str) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        if raw == "":
            return None
        return _parse(raw, args[0], env)
    if origin is tuple:
        (item,) = typing.get_args(kind)[:1]
        return tuple(_parse(p.strip(), item, env) for p in raw.split(",") if p.strip())
    if kind is bool:
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{env}={raw!r} is not a boolean (use true/false)")
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError as exc:
        raise SettingsError(f"{env}={raw!r} is not a valid {kind.__name__}") from exc
    if kind is str:
        return raw
    raise TypeError(f"unsupported setting type {kind!r} for {env}")


def load_settings(cls: type[T], env: Mapping[str, str], **overrides: Any) -> T:
    """Builds ``cls`` from ``env``; ``overrides`` (by field name) win over the environment."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a settings dataclass")
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        raise TypeError(f"{cls.__name__} has no setting(s) named {', '.join(unknown)}")
    values: dict[str, Any] = {}
    missing: list[str] = []
    for f in dataclasses.fields(cls):
        if f.name in overrides:
            values[f.name] = overrides[f.name]
            continue
        env_name = f.metadata.get("env")
        if env_name and env_name in env:
            values[f.name] = _parse(env[env_name], hints[f.name], env_name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            missing.append(f"{env_name} ({f.metadata.get('doc', '')})")
    if missing:
        raise MissingSetting("missing required setting(s): " + "; ".join(missing))
    return cls(**values)


def describe_settings(cls: type[Any]) -> list[tuple[str, str, str]]:
    """(env name, default, doc) of every setting of ``cls``, for docs and ``--help``."""
    rows = []
    for f in dataclasses.fields(cls):
        default = "REQUIRED" if f.default is dataclasses.MISSING else repr(f.default)
        rows.append((str(f.metadata.get("env", "")), default, str(f.metadata.get("doc", ""))))
    return rows


def settings_env(obj: Any) -> dict[str, str]:
    """The environment that reproduces ``obj`` (used to hand settings to child processes)."""
    out: dict[str, str] = {}
    for f in dataclasses.fields(obj):
        env_name = f.metadata.get("env")
        if not env_name:
            continue
        value = getattr(obj, f.name)
        if value is None:
            out[env_name] = ""
        elif isinstance(value, bool):
            out[env_name] = "true" if value else "false"
        elif isinstance(value, tuple):
            out[env_name] = ",".join(str(v) for v in value)
        else:
            out[env_name] = str(value)
    return out
