-- The per-host URL budget (services/linkbase/host_budget.py): how many URLs each host has.
-- Moved by the link base writer in the same transaction as the URLs; a database that predates
-- the budget starts from the URLs it already holds.
CREATE TABLE linkbase.host_url_counts (
    host_id bigint NOT NULL,
    urls    bigint NOT NULL DEFAULT 0,
    CONSTRAINT host_url_counts_pk PRIMARY KEY (host_id)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('host_url_counts', 16);

INSERT INTO linkbase.host_url_counts (host_id, urls)
SELECT host_id, count(*) FROM linkbase.urls GROUP BY host_id;
