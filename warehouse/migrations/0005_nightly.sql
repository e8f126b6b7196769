-- The nightly run's ledger: what was analysed, from which inputs, and how it ended (issue 8).

CREATE TABLE analysis_ledger (
    incident_id      VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    input_digest     VARCHAR NOT NULL,
    status           VARCHAR NOT NULL,
    reason           VARCHAR,
    run_id           VARCHAR,
    seconds          DOUBLE,
    finished_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, method)
);
