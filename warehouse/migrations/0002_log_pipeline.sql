-- The log pipeline: DRAIN3 templates per incident and the capped excerpt built from each incident's logs.

CREATE TABLE log_templates (
    incident_id      VARCHAR NOT NULL,
    template_id      INTEGER NOT NULL,
    template         VARCHAR NOT NULL,
    line_count       INTEGER NOT NULL,
    distinct_lines   INTEGER NOT NULL,
    worst_severity   VARCHAR,
    first_ts         TIMESTAMP,
    last_ts          TIMESTAMP,
    miner_config     JSON NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, template_id)
);

CREATE TABLE log_excerpts (
    incident_id      VARCHAR NOT NULL,
    round            INTEGER NOT NULL,
    input_lines      INTEGER NOT NULL,
    excerpt_lines    INTEGER NOT NULL,
    level_counts     JSON NOT NULL,
    suppressed       JSON NOT NULL,
    collapsed_lines  INTEGER NOT NULL,
    truncated        BOOLEAN NOT NULL,
    excerpt          JSON NOT NULL,
    ticket_terms     VARCHAR[],
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, round)
);

ALTER TABLE log_lines ADD COLUMN template_id INTEGER;
