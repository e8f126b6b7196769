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


def test_a_nightly_on_a_cluster_without_a_scheduler_address_stops_before_it_starts(run_cli, settings, capsys):
    from faultline import db

    run_cli("nightly", "--runner", "cluster", expect_exit=2)
    err = capsys.readouterr().err
    assert "needs the address of a Dask scheduler" in err and "--dask-address" in err
    conn = db.connect(settings.duckdb_path)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # no run was opened
    finally:
        conn.close()
