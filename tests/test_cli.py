"""The command line: usage errors are short messages with exit code 2, never tracebacks."""

from __future__ import annotations


def test_missing_option_is_a_usage_message(run_cli, capsys):
    run_cli("logs", "excerpt", expect_exit=2)
    err = capsys.readouterr().err
    assert "Missing option '--log'" in err and "Traceback" not in err


def test_unknown_command_is_a_usage_message(run_cli, capsys):
    run_cli("ingest", "bogus", "x", expect_exit=2)
    err = capsys.readouterr().err
    assert "No such command 'bogus'" in err and "Traceback" not in err


def test_failed_file_sets_exit_code_one(run_cli, tmp_path, capsys):
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"foo": 1}\n')
    run_cli("ingest", "tickets", str(odd), expect_exit=1)
    assert "cannot tell which tracker layout" in capsys.readouterr().out
