-- ASTRA: every round's report and scores, the claims, their evidence and the orchestrator's follow-ups.
-- Rows are keyed by incident and analyst ('deterministic' or 'llm:<model>'); saving an analysis again
-- replaces what the same analyst wrote for the same incident.

CREATE TABLE astra_rounds (
    incident_id      VARCHAR NOT NULL,
    analyst          VARCHAR NOT NULL,
    round            INTEGER NOT NULL,
    run_id           VARCHAR,
    label            VARCHAR,
    category         VARCHAR,
    devices          VARCHAR[],
    components       VARCHAR[],
    symptom          VARCHAR NOT NULL,
    root_cause       VARCHAR NOT NULL,
    fix              VARCHAR NOT NULL,
    verification     VARCHAR NOT NULL,
    report           JSON NOT NULL,
    report_text      VARCHAR NOT NULL,
    min_score        INTEGER NOT NULL,
    mean_score       DOUBLE NOT NULL,
    revise           BOOLEAN NOT NULL,
    is_final         BOOLEAN NOT NULL,
    outputs          JSON,
    elapsed_s        DOUBLE NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, analyst, round)
);

CREATE TABLE claims (
    incident_id      VARCHAR NOT NULL,
    analyst          VARCHAR NOT NULL,
    claim_id         VARCHAR NOT NULL,
    seq              INTEGER NOT NULL,
    round            INTEGER NOT NULL,
    agent            VARCHAR NOT NULL,
    text             VARCHAR NOT NULL,
    tag              VARCHAR,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, analyst, claim_id)
);

CREATE TABLE evidence (
    incident_id      VARCHAR NOT NULL,
    analyst          VARCHAR NOT NULL,
    claim_id         VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,
    quote            VARCHAR NOT NULL,
    method           VARCHAR NOT NULL,
    overlap          DOUBLE NOT NULL,
    confidence       VARCHAR NOT NULL,
    status           VARCHAR NOT NULL,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, analyst, claim_id, source)
);

CREATE TABLE judge_scores (
    incident_id      VARCHAR NOT NULL,
    analyst          VARCHAR NOT NULL,
    round            INTEGER NOT NULL,
    criterion        VARCHAR NOT NULL,
    score            INTEGER NOT NULL,
    reason           VARCHAR NOT NULL,
    judge            VARCHAR NOT NULL,
    version          VARCHAR NOT NULL,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, analyst, round, criterion)
);

CREATE TABLE followup_queries (
    incident_id      VARCHAR NOT NULL,
    analyst          VARCHAR NOT NULL,
    round            INTEGER NOT NULL,
    seq              INTEGER NOT NULL,
    agent            VARCHAR NOT NULL,
    query            VARCHAR NOT NULL,
    query_key        VARCHAR NOT NULL,
    criterion        VARCHAR NOT NULL,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, analyst, round, seq),
    UNIQUE (incident_id, analyst, query_key)
);
