"""Typed settings: parsing from the environment, overrides, missing and bad values, round trips."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from libs.common.settings import (
    REQUIRED,
    MissingSetting,
    SettingsError,
    describe_settings,
    load_settings,
    setting,
    settings_env,
)


@dataclass(frozen=True)
class Sample:
    name: str = setting("T_NAME", REQUIRED, "Name of the crawl.")
    workers: int = setting("T_WORKERS", 4, "Worker count.")
    ratio: float = setting("T_RATIO", 0.5, "A fraction.")
    enabled: bool = setting("T_ENABLED", False, "Turns the thing on.")
    hosts: tuple[str, ...] = setting("T_HOSTS", ("a.test",), "Hosts, comma separated.")
    ports: tuple[int, ...] = setting("T_PORTS", (), "Ports, comma separated.")
    limit: int | None = setting("T_LIMIT", None, "Optional limit (empty: none).")


def test_defaults_apply_when_only_required_settings_are_given() -> None:
    loaded = load_settings(Sample, {"T_NAME": "crawl"})
    assert loaded == Sample(name="crawl", workers=4, ratio=0.5, enabled=False, hosts=("a.test",), ports=(), limit=None)


def test_every_kind_is_parsed_from_its_env_var() -> None:
    env = {
        "T_NAME": "crawl-1",
        "T_WORKERS": "12",
        "T_RATIO": "0.25",
        "T_ENABLED": "yes",
        "T_HOSTS": " x.test, y.test ,,",
        "T_PORTS": "80,443",
        "T_LIMIT": "7",
    }
    loaded = load_settings(Sample, env)
    assert loaded.name == "crawl-1"
    assert loaded.workers == 12 and type(loaded.workers) is int
    assert loaded.ratio == 0.25
    assert loaded.enabled is True
    assert loaded.hosts == ("x.test", "y.test")
    assert loaded.ports == (80, 443)
    assert loaded.limit == 7


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("TRUE", True), (" on ", True), ("yes", True),
     ("0", False), ("false", False), ("Off", False), ("no", False)],
)
def test_booleans_accept_the_usual_spellings(raw: str, expected: bool) -> None:
    assert load_settings(Sample, {"T_NAME": "n", "T_ENABLED": raw}).enabled is expected


def test_an_empty_optional_is_none_and_an_empty_tuple_is_empty() -> None:
    loaded = load_settings(Sample, {"T_NAME": "n", "T_LIMIT": "", "T_HOSTS": ""})
    assert loaded.limit is None
    assert loaded.hosts == ()


def test_overrides_win_over_the_environment() -> None:
    loaded = load_settings(Sample, {"T_NAME": "from-env", "T_WORKERS": "3"}, workers=9, name="override")
    assert (loaded.name, loaded.workers) == ("override", 9)


def test_an_override_satisfies_a_required_setting() -> None:
    assert load_settings(Sample, {}, name="given").name == "given"


def test_an_unknown_override_is_refused() -> None:
    with pytest.raises(TypeError, match="wokers"):
        load_settings(Sample, {"T_NAME": "n"}, wokers=9)


def test_a_missing_required_setting_names_its_env_var_and_doc() -> None:
    with pytest.raises(MissingSetting) as info:
        load_settings(Sample, {"T_WORKERS": "2"})
    assert "T_NAME" in str(info.value)
    assert "Name of the crawl." in str(info.value)
    assert isinstance(info.value, SettingsError)


@pytest.mark.parametrize(
    ("env_name", "raw", "culprit"),
    [("T_WORKERS", "many", "many"), ("T_WORKERS", "1.5", "1.5"), ("T_RATIO", "half", "half"),
     ("T_ENABLED", "maybe", "maybe"), ("T_PORTS", "80,http", "http"), ("T_LIMIT", "none", "none")],
)
def test_a_bad_value_raises_settings_error_naming_the_variable(env_name: str, raw: str, culprit: str) -> None:
    with pytest.raises(SettingsError, match=env_name) as info:
        load_settings(Sample, {"T_NAME": "n", env_name: raw})
    assert not isinstance(info.value, MissingSetting)
    assert repr(culprit) in str(info.value)


def test_unsupported_types_are_a_programming_error() -> None:
    @dataclass(frozen=True)
    class Odd:
        things: complex = setting("T_THINGS", 0j, "Not supported.")

    with pytest.raises(TypeError, match="T_THINGS"):
        load_settings(Odd, {"T_THINGS": "1+2j"})


def test_mutable_defaults_are_refused() -> None:
    with pytest.raises(TypeError, match="tuple"):
        setting("T_LIST", [], "A list default.")


def test_settings_env_round_trips_through_load_settings() -> None:
    original = Sample(name="c", workers=2, ratio=0.125, enabled=True, hosts=("a.test", "b.test"),
                      ports=(1, 2, 3), limit=None)
    env = settings_env(original)
    assert env["T_ENABLED"] == "true"
    assert env["T_HOSTS"] == "a.test,b.test"
    assert env["T_LIMIT"] == ""
    assert load_settings(Sample, env) == original

    defaults = load_settings(Sample, {"T_NAME": "d"})
    assert load_settings(Sample, settings_env(defaults)) == defaults


def test_describe_settings_lists_env_default_and_doc_in_declaration_order() -> None:
    rows = describe_settings(Sample)
    assert [row[0] for row in rows] == ["T_NAME", "T_WORKERS", "T_RATIO", "T_ENABLED", "T_HOSTS", "T_PORTS",
                                        "T_LIMIT"]
    assert rows[0] == ("T_NAME", "REQUIRED", "Name of the crawl.")
    assert rows[1] == ("T_WORKERS", "4", "Worker count.")
    assert rows[4] == ("T_HOSTS", "('a.test',)", "Hosts, comma separated.")
    assert rows[6] == ("T_LIMIT", "None", "Optional limit (empty: none).")


def test_load_settings_refuses_a_plain_class() -> None:
    class NotSettings:
        pass

    with pytest.raises(TypeError):
        load_settings(NotSettings, {})
