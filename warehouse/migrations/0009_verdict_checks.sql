-- The verdict's follow-ups on the network (issue 16, part 5): one row per targeted check of an incident's verdict.
-- Grain: (incident_id, seq). When the device logs point at a fault the network diagnosis did not name, the
-- verdict probes the devices the logs name with that label's skill checks (faultline/sade/crosscheck.py);
-- `outcome` is confirmed (a fingerprint of the label matched, the label joins the verdict), refuted (the probes
-- show no sign of it) or not_checked (the devices are not in this network, or no skill names the label).
-- `probes` lists the probe steps ("step N: tool on device, output <digest>"). Replaced with the verdict.

CREATE TABLE verdict_checks (
    incident_id      VARCHAR NOT NULL,
    seq              INTEGER NOT NULL,
    label            VARCHAR NOT NULL,
    source           VARCHAR NOT NULL,
    asked_devices    VARCHAR[] NOT NULL,
    checked_devices  VARCHAR[] NOT NULL,
    outcome          VARCHAR NOT NULL,
    reason           VARCHAR NOT NULL,
    matched_devices  VARCHAR[] NOT NULL,
    probes           VARCHAR[] NOT NULL,
    probe_calls      INTEGER NOT NULL,
    first_labels     VARCHAR[] NOT NULL,
    run_id           VARCHAR,
    created_at       TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (incident_id, seq)
);
