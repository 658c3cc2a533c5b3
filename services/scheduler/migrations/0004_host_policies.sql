-- Operator policies per host, set through the admin API (services/scheduler/frontier/host_policies.py).
-- A NULL column is "not set": the host is crawled as any other in that respect.
--   min_delay_seconds  least seconds between the starts of two requests to the host
--   max_concurrency    most requests in flight (0 holds the host)
--   budget             most pages fetched from the host (hosts.fetched plus requests in flight)
--   blocked_until      no request before this time
--   partition_groups   split the host by path across this many fetchers (host#group keys)
--   removed            the site was removed: its URLs wait until it is added again
--   site_added_at      the host was added as a site (AddSites)
CREATE TABLE scheduler.host_policies (
    host               text PRIMARY KEY,
    min_delay_seconds  double precision CHECK (min_delay_seconds > 0),
    max_concurrency    integer CHECK (max_concurrency >= 0),
    budget             bigint CHECK (budget >= 0),
    blocked_until      timestamptz,
    partition_groups   integer CHECK (partition_groups >= 2),
    note               text,
    removed            boolean NOT NULL DEFAULT false,
    site_added_at      timestamptz,
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- Seeds listed newest first.
CREATE INDEX frontier_seeds ON scheduler.frontier (discovered_at DESC) WHERE source = 'seed';
