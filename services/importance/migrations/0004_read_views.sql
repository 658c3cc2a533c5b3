-- The importance service's read views: what other services may read of its state (they
-- share the database, never the tables). Every read view is named v_<what>_v<version>: its
-- columns are only ever added; a change of meaning makes a new version beside it.

-- The OPIC estimates each snapshot publishes (a partition's home and index pages): the
-- scheduler's URL report and top pages. importance = history + cash.
CREATE VIEW importance.v_pages_v1 AS
SELECT p.url_fp, p.url, p.host, p.cash, p.history, p.visits, p.last_visit
FROM importance.pages AS p;
