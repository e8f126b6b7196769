-- Logs found by device and time (issue 15): every log line names the device it belongs to, and every
-- ASTRA round stores which devices and time windows of the log archive it read, and why.

ALTER TABLE log_lines ADD COLUMN device VARCHAR;

-- Lines ingested before this migration: a hostname the line names, else the file's own device name
-- (`.../<device>/<file>` for the lab corpus, `<device>.<anything>.log` for a collector's per-device files).
UPDATE log_lines SET device = CASE
    WHEN host IS NOT NULL AND NOT contains(host, '/') THEN host
    WHEN regexp_matches(source_file, '/logs/[^/]+/[^/]+$') THEN regexp_extract(source_file, '/logs/([^/]+)/[^/]+$', 1)
    ELSE regexp_extract(source_file, '([^/.]+)[^/]*$', 1)
END;

CREATE TABLE log_scopes (
    incident_id      VARCHAR NOT NULL,
    round            INTEGER NOT NULL,
    device           VARCHAR,
    kind             VARCHAR NOT NULL,
    reason           VARCHAR NOT NULL,
    matched          VARCHAR,
    window_start     TIMESTAMPTZ,
    window_end       TIMESTAMPTZ,
    clock_offset_s   INTEGER NOT NULL DEFAULT 0,
    lines_in_scope   INTEGER,
    created_at       TIMESTAMPTZ NOT NULL
);
