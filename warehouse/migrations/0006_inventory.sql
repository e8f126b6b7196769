-- The network inventory: hosts and links of a nornir-style SimpleInventory folder (issue 15).
-- An inventory is a snapshot: ingesting it again replaces every row of that inventory.

CREATE TABLE inventory_hosts (
    inventory        VARCHAR NOT NULL,
    host             VARCHAR NOT NULL,
    hostname         VARCHAR,
    platform         VARCHAR,
    port             INTEGER,
    username         VARCHAR,
    groups           VARCHAR[] NOT NULL,
    role             VARCHAR,
    site             VARCHAR,
    addresses        VARCHAR[] NOT NULL,
    dns_names        VARCHAR[] NOT NULL,
    interfaces       VARCHAR[] NOT NULL,
    data             JSON NOT NULL,
    source_folder    VARCHAR NOT NULL,
    source_file      VARCHAR NOT NULL,
    source_line      INTEGER NOT NULL,
    ingested_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (inventory, host)
);

CREATE TABLE inventory_links (
    inventory        VARCHAR NOT NULL,
    host             VARCHAR NOT NULL,
    interface        VARCHAR,
    peer             VARCHAR NOT NULL,
    peer_interface   VARCHAR,
    derived          BOOLEAN NOT NULL,
    source_file      VARCHAR NOT NULL,
    ingested_at      TIMESTAMPTZ NOT NULL
);
