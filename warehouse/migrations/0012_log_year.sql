-- Timestamps without a year (issue 39, part 4): classic syslog and IOS-XR lines carry no year, so every log file
-- records the year its year-less lines took and the rule that chose it (given, folder, file_name, tickets, mtime;
-- faultline/ingest/logyear.py). Null for other files, and for files ingested before this migration.

ALTER TABLE ingest_files ADD COLUMN log_year INTEGER;
ALTER TABLE ingest_files ADD COLUMN log_year_source VARCHAR;
