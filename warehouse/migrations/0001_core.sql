-- Core tables of the Faultline warehouse. Grain and column meanings: warehouse/tables/<table>.yml.

CREATE TABLE tickets (
    ticket_id        VARCHAR PRIMARY KEY,
    source           VARCHAR NOT NULL,
    project          VARCHAR,
    title            VARCHAR NOT NULL,
    description      VARCHAR,
    environment      VARCHAR,
    status           VARCHAR,
    resolution       VARCHAR,
    resolution_note  VARCHAR,
    priority         VARCHAR,
    components       VARCHAR[],
    versions         VARCHAR[],
    fix_versions     VARCHAR[],
    created_at       TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ,
    resolved_at      TIMESTAMPTZ,
    comments         STRUCT(author VARCHAR, created_at TIMESTAMPTZ, body VARCHAR)[],
    links            STRUCT(type VARCHAR, direction VARCHAR, target VARCHAR)[],
    attributes       JSON,
    content_hash     VARCHAR NOT NULL,
    source_file      VARCHAR NOT NULL,
    source_record    INTEGER NOT NULL,
    first_ingested_at TIMESTAMPTZ NOT NULL,
    ingested_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE log_lines (
    source_file      VARCHAR NOT NULL,
    line_no          INTEGER NOT NULL,
    file_sha256      VARCHAR NOT NULL,
    format           VARCHAR NOT NULL,
    parsed           BOOLEAN NOT NULL,
    ts               TIMESTAMP,
    host             VARCHAR,
    severity         VARCHAR,
    severity_raw     VARCHAR,
    component        VARCHAR,
    pid              VARCHAR,
    message          VARCHAR,
    raw              VARCHAR NOT NULL,
    decode_error     BOOLEAN NOT NULL,
    incident_id      VARCHAR,
    ingested_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE doc_chunks (
    chunk_id         VARCHAR PRIMARY KEY,
    doc_id           VARCHAR NOT NULL,
    source_file      VARCHAR NOT NULL,
    file_sha256      VARCHAR NOT NULL,
    format           VARCHAR NOT NULL,
    title            VARCHAR NOT NULL,
    section_path     VARCHAR[] NOT NULL,
    ordinal          INTEGER NOT NULL,
    start_line       INTEGER,
    text             VARCHAR NOT NULL,
    ingested_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE incidents (
    incident_id      VARCHAR PRIMARY KEY,
    ticket_id        VARCHAR,
    title            VARCHAR,
    scenario         VARCHAR,
    size             VARCHAR,
    seed             INTEGER,
    is_historical    BOOLEAN NOT NULL DEFAULT false,
    opened_at        TIMESTAMPTZ,
    window_start     TIMESTAMPTZ,
    window_end       TIMESTAMPTZ,
    snapshot_path    VARCHAR,
    attributes       JSON,
    created_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE ground_truth (
    incident_id      VARCHAR PRIMARY KEY,
    is_faulty        BOOLEAN NOT NULL,
    labels           VARCHAR[],
    devices          VARCHAR[],
    v2_resource_ids  VARCHAR[],
    v2_fault_types   VARCHAR[],
    category         VARCHAR,
    resolution_note  VARCHAR,
    source           VARCHAR NOT NULL,
    recorded_at      TIMESTAMPTZ NOT NULL
);

CREATE TABLE runs (
    run_id           VARCHAR PRIMARY KEY,
    kind             VARCHAR NOT NULL,
    started_at       TIMESTAMPTZ NOT NULL,
    finished_at      TIMESTAMPTZ,
    status           VARCHAR NOT NULL,
    prefect_flow_run_id VARCHAR,
    settings         JSON,
    stats            JSON,
    error            VARCHAR
);

CREATE TABLE llm_calls (
    call_id          VARCHAR PRIMARY KEY,
    run_id           VARCHAR,
    incident_id      VARCHAR,
    stage            VARCHAR NOT NULL,
    model            VARCHAR NOT NULL,
    prompt_name      VARCHAR,
    prompt_hash      VARCHAR,
    request          JSON,
    response         VARCHAR,
    input_tokens     INTEGER,
    output_tokens    INTEGER,
    cost_usd         DOUBLE,
    duration_ms      DOUBLE,
    error            VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE run_failures (
    failure_id       VARCHAR PRIMARY KEY,
    run_id           VARCHAR,
    incident_id      VARCHAR,
    stage            VARCHAR NOT NULL,
    error_type       VARCHAR NOT NULL,
    message          VARCHAR NOT NULL,
    traceback        VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE quarantine (
    quarantine_id    VARCHAR PRIMARY KEY,
    run_id           VARCHAR,
    target_table     VARCHAR NOT NULL,
    source_file      VARCHAR NOT NULL,
    record_no        INTEGER NOT NULL,
    expectation      VARCHAR NOT NULL,
    reason           VARCHAR NOT NULL,
    raw_record       VARCHAR NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE ingest_files (
    kind             VARCHAR NOT NULL,
    source_file      VARCHAR NOT NULL,
    file_sha256      VARCHAR NOT NULL,
    size_bytes       BIGINT NOT NULL,
    records_in       INTEGER NOT NULL,
    accepted         INTEGER NOT NULL,
    quarantined      INTEGER NOT NULL,
    run_id           VARCHAR,
    ingested_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (kind, source_file)
);
