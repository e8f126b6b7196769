-- Sub-runs (issue 39, part 6): a run started inside another run names it. The nightly run's ingests (one
-- `ingest_incidents` run per incident folder, one `ingest_tickets|logs|docs` run per export folder) name the
-- nightly, and the `ingest_inventory` runs an `ingest_incidents` run starts name that run. NULL for a run started
-- on its own (a user's `faultline ingest logs`, `faultline eval astra`, a nightly) and for every earlier row.
-- Grain of `runs` unchanged: one row per run.

ALTER TABLE runs ADD COLUMN parent_run_id VARCHAR;
