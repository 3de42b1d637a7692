"""Configuration (docs/BEHAVIOUR.md, "Home and configuration"): precedence and one-line errors naming the file and the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mino_server.core.config import CONFIG_KEYS, DEFAULT_SOUL, load_config
from mino_server.core.errors import ConfigError


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text)
    return path


def test_defaults_without_files(mino_home: Path) -> None:
    cfg = load_config(env={"MINO_HOME": str(mino_home)})
    assert cfg.base_url == "https://api.openai.com/v1"
    assert cfg.context_window == 128_000 and cfg.mode == "manual" and cfg.sandbox == "auto"
    assert cfg.soul == DEFAULT_SOUL and "secret" in cfg.soul.lower()
    assert mino_home.stat().st_mode & 0o777 == 0o700


def test_precedence_flags_over_env_over_file(mino_home: Path) -> None:
    write_config(mino_home, "model: from-file\nbase_url: http://file.example/v1\nmode: accept-edits\n")
    env = {"MINO_HOME": str(mino_home), "MINO_MODEL": "from-env", "MINO_BASE_URL": "http://env.example/v1/"}
    cfg = load_config(env=env)
    assert (cfg.model, cfg.base_url, cfg.mode) == ("from-env", "http://env.example/v1", "accept-edits")
    cfg = load_config(env=env, model="from-flag", base_url="http://flag.example/v1", mode="bypass")
    assert (cfg.model, cfg.base_url, cfg.mode) == ("from-flag", "http://flag.example/v1", "bypass")


def test_api_key_from_named_variable(mino_home: Path) -> None:
    write_config(mino_home, "api_key_env: MY_KEY\n")
    assert load_config(env={"MINO_HOME": str(mino_home), "MY_KEY": "k1"}).api_key == "k1"
    assert (
        load_config(env={"MINO_HOME": str(mino_home), "MY_KEY": "k1", "MINO_API_KEY": "k2"}).api_key == "k2"
    )


@pytest.mark.parametrize("value, expected", [("off", "off"), ('"off"', "off"), ("auto", "auto")])
def test_sandbox_setting_accepts_bare_off(mino_home: Path, value: str, expected: str) -> None:
    write_config(mino_home, f"sandbox: {value}\n")
    assert load_config(env={"MINO_HOME": str(mino_home)}).sandbox == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("context_window: lots\n", "'context_window' must be a whole number of tokens, got 'lots'"),
        ("context_window: 10\n", "'context_window' must be at least 1000 tokens, got 10"),
        ("mode: yolo\n", "'mode' must be one of manual, accept-edits, bypass, plan, got 'yolo'"),
        ("sandbox: maybe\n", "'sandbox' must be 'auto' or 'off', got 'maybe'"),
        ("request_timeout_s: -1\n", "'request_timeout_s' must be positive, got -1"),
        ("modle: gpt\n", "unknown key 'modle'"),
        ("model: [a, b]\n", "'model' must be a string"),
        ("models: gpt-5\n", "'models' must be a list of model names, got 'gpt-5'"),
        ("models: [gpt-5, '']\n", "'models' item 2 must be a model name"),
        ("models: [gpt-5, 3]\n", "'models' item 2 must be a model name"),
        ("- just\n- a list\n", "the file must be a mapping"),
        ("model: 'unterminated\n", "not valid YAML"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(mino_home: Path, text: str, message: str) -> None:
    path = write_config(mino_home, text)
    with pytest.raises(ConfigError) as info:
        load_config(env={"MINO_HOME": str(mino_home)})
    line = str(info.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line


def test_models_lists_the_choices_after_the_configured_model_once_each(mino_home: Path) -> None:
    write_config(mino_home, "model: small\nmodels: [large, small, large, medium]\n")
    cfg = load_config(env={"MINO_HOME": str(mino_home)})
    assert cfg.models == ("large", "small", "medium")
    assert cfg.model_choices == ["small", "large", "medium"]
    flag = load_config(env={"MINO_HOME": str(mino_home)}, model="from-flag")
    assert flag.model_choices == ["from-flag", "large", "small", "medium"]


def test_soul_md_is_used_and_never_written(mino_home: Path) -> None:
    mino_home.mkdir(parents=True)
    (mino_home / "SOUL.md").write_text("I am a custom soul.\n")
    assert load_config(env={"MINO_HOME": str(mino_home)}).soul == "I am a custom soul.\n"
    assert (mino_home / "SOUL.md").read_text() == "I am a custom soul.\n"


def test_behaviour_md_lists_exactly_the_config_keys_and_their_error_line(mino_home: Path) -> None:
    """docs/BEHAVIOUR.md's table of config.yaml keys is core/config.py's CONFIG_KEYS, in order, and
    its example of an unknown key is the line Mino prints (the list of keys said, not copied)."""
    doc = (Path(__file__).parents[1] / "docs" / "BEHAVIOUR.md").read_text(encoding="utf-8")
    after = doc.split("`config.yaml` keys (all optional; any other key is an error):\n\n", 1)[1]
    table = after.split("\n\n", 1)[0].splitlines()
    assert table[0] == "| key | type, rule | default |"
    keys = tuple(re.fullmatch(r"\| `([a-z_]+)` \|.*", row).group(1) for row in table[2:])  # type: ignore[union-attr]
    assert keys == CONFIG_KEYS
    path = write_config(mino_home, "foo: 1\n")
    with pytest.raises(ConfigError) as err:
        load_config(env={"MINO_HOME": str(mino_home)})
    known = ", ".join(sorted(CONFIG_KEYS))
    assert str(err.value) == f"{path}: unknown key 'foo' (known keys: {known})"
    line = str(err.value).replace(str(path), "PATH/config.yaml").replace(known, "…")
    assert f"`mino: {line}`, the keys of the table above in" in doc
