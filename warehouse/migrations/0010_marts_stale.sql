-- Incremental marts (issue 19, part 5): the incidents whose analysis rows changed since the marts were last
-- refreshed. Every store that replaces an incident's ASTRA, scope, SADE or verdict rows adds a row here in the
-- same transaction; `refresh_marts` rebuilds those incidents' rows of the per-incident marts and empties the
-- table in its own transaction. Grain: one row per write (an incident written twice appears twice).

CREATE TABLE marts_stale (
    incident_id VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    marked_at   TIMESTAMPTZ NOT NULL
);
