"""Settings: precedence argument > environment > file > default, and every field documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.config import Settings, load_settings
from faultline.errors import FaultlineError


def test_defaults_are_the_documented_paths(monkeypatch):
    for name in ("FAULTLINE_DUCKDB_PATH", "FAULTLINE_LANCEDB_DIR", "FAULTLINE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings()
    assert settings.duckdb_path == Path("var/faultline.duckdb")
    assert settings.lancedb_dir == Path("var/lancedb")


def test_precedence_argument_over_env_over_file(tmp_path, monkeypatch):
    config = tmp_path / "faultline.toml"
    config.write_text('duckdb_path = "from-file.duckdb"\nsearch_k = 7\nmax_line_bytes = 1000\n')
    monkeypatch.setenv("FAULTLINE_SEARCH_K", "9")
    settings = load_settings(config, duckdb_path=Path("from-arg.duckdb"))
    assert settings.duckdb_path == Path("from-arg.duckdb")  # argument beats file
    assert settings.search_k == 9  # environment beats file
    assert settings.max_line_bytes == 1000  # file beats default
    assert load_settings(config).duckdb_path == Path("from-file.duckdb")


def test_env_prefix_and_cli_flag(tmp_path, monkeypatch, capsys):
    from faultline.cli.main import main

    target = tmp_path / "env.duckdb"
    monkeypatch.setenv("FAULTLINE_DUCKDB_PATH", str(target))
    main(["db", "migrate"])
    assert target.exists()
    flagged = tmp_path / "flag.duckdb"
    main(["--db", str(flagged), "db", "migrate"])
    assert flagged.exists()


def test_bad_values_and_missing_file_are_clear_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_SEARCH_K", "zero")
    with pytest.raises(FaultlineError, match="search_k"):
        load_settings()
    monkeypatch.delenv("FAULTLINE_SEARCH_K")
    with pytest.raises(FaultlineError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")


def test_unknown_setting_is_rejected(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('duckdb_pth = "typo.duckdb"\n')
    with pytest.raises(FaultlineError, match="duckdb_pth"):
        load_settings(config)


def test_every_setting_has_help_text():
    for name, field in Settings.model_fields.items():
        assert field.description and len(field.description) > 10, f"setting {name} lacks a description"


def test_the_own_device_look_reads_its_old_true_false_values(tmp_path, monkeypatch):
    """sade_second_look_own_device was a switch before the `silenced` look: a file or environment that still says
    true or false keeps meaning every answered device or none; a word it does not know is a clear error."""
    config = tmp_path / "faultline.toml"
    config.write_text("sade_second_look_own_device = true\n")
    assert load_settings(config).sade_second_look_own_device == "always"
    monkeypatch.setenv("FAULTLINE_SADE_SECOND_LOOK_OWN_DEVICE", "false")
    assert load_settings(config).sade_second_look_own_device == "off"
    monkeypatch.delenv("FAULTLINE_SADE_SECOND_LOOK_OWN_DEVICE")
    assert load_settings().sade_second_look_own_device == "silenced"
    monkeypatch.setenv("FAULTLINE_SADE_SECOND_LOOK_OWN_DEVICE", "sometimes")
    with pytest.raises(FaultlineError, match="sade_second_look_own_device"):
        load_settings()
