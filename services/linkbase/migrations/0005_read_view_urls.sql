-- A versioned read view of the link base's URLs, for other services (their reconciliation after
-- a broker lost its data: services/scheduler/recovery/broker_loss.py). Columns are only ever added; a
-- change of meaning makes urls_v2.
CREATE VIEW linkbase.urls_v1 AS
SELECT u.url_fp, u.url, h.host, u.depth, u.first_seen, u.announce_state, u.fetched, u.links_at
FROM linkbase.urls AS u
JOIN linkbase.hosts AS h ON h.host_id = u.host_id;
