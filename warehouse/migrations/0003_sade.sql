-- SADE diagnoses: every step, every flag, one submission per incident and method, and the metrics
-- of every scored answer (generic: SADE, the flat baseline, MCP agents and ASTRA write here).

CREATE TABLE sade_steps (
    incident_id      VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    seq              INTEGER NOT NULL,
    run_id           VARCHAR,
    phase            VARCHAR NOT NULL,
    tool             VARCHAR NOT NULL,
    args             JSON NOT NULL,
    output_digest    VARCHAR NOT NULL,
    flags            VARCHAR[] NOT NULL,
    probe_calls      INTEGER NOT NULL,
    elapsed_ms       DOUBLE NOT NULL,
    note             VARCHAR NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, method, seq)
);

CREATE TABLE sade_flags (
    incident_id      VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    flag_no          INTEGER NOT NULL,
    run_id           VARCHAR,
    scan             VARCHAR NOT NULL,
    phase            VARCHAR NOT NULL,
    device           VARCHAR,
    kind             VARCHAR NOT NULL,
    evidence         VARCHAR NOT NULL,
    family           VARCHAR,
    strength         VARCHAR NOT NULL,
    vs_baseline      BOOLEAN NOT NULL,
    attrs            JSON NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, method, flag_no)
);

CREATE TABLE submissions (
    incident_id      VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    run_id           VARCHAR,
    policy           VARCHAR,
    backend          VARCHAR,
    status           VARCHAR NOT NULL,
    is_anomaly       BOOLEAN,
    labels           VARCHAR[],
    devices          VARCHAR[],
    v1               JSON,
    v2               JSON,
    families         VARCHAR[],
    fingerprints     VARCHAR[],
    summary          VARCHAR,
    probe_calls      INTEGER,
    tool_calls       INTEGER,
    elapsed_s        DOUBLE,
    error            VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, method)
);

CREATE TABLE evaluations (
    incident_id      VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    metric           VARCHAR NOT NULL,
    value            DOUBLE NOT NULL,
    run_id           VARCHAR,
    attributes       JSON,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, method, metric)
);
