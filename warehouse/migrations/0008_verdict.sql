-- One verdict per incident (issue 16): the sources weighed by faultline/verdict/rules.yml, the answer, and every
-- statement of its report with the verbatim quote and the citation it rests on. Saving a verdict again replaces
-- the incident's rows.

CREATE TABLE verdicts (
    incident_id      VARCHAR NOT NULL PRIMARY KEY,
    run_id           VARCHAR,
    status           VARCHAR NOT NULL,
    labels           VARCHAR[] NOT NULL,
    category         VARCHAR,
    devices          VARCHAR[] NOT NULL,
    interfaces       VARCHAR[] NOT NULL,
    confidence       DOUBLE NOT NULL,
    rule             VARCHAR NOT NULL,
    sources_used     VARCHAR[] NOT NULL,
    agreeing         VARCHAR[] NOT NULL,
    disagreeing      VARCHAR[] NOT NULL,
    without_network  VARCHAR,
    fix_known        BOOLEAN NOT NULL,
    symptom          VARCHAR NOT NULL,
    root_cause       VARCHAR NOT NULL,
    fix              VARCHAR NOT NULL,
    verification     VARCHAR NOT NULL,
    disagreement     VARCHAR NOT NULL,
    astra_analyst    VARCHAR,
    sade_method      VARCHAR,
    verdict          JSON NOT NULL,
    report_text      VARCHAR NOT NULL,
    elapsed_s        DOUBLE NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE verdict_claims (
    incident_id      VARCHAR NOT NULL,
    seq              INTEGER NOT NULL,
    section          VARCHAR NOT NULL,
    text             VARCHAR NOT NULL,
    quote            VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,
    ref              VARCHAR NOT NULL,
    device           VARCHAR,
    detail           VARCHAR NOT NULL,
    status           VARCHAR NOT NULL,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, seq)
);
