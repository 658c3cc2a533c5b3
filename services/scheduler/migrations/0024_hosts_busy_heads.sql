-- Heads of hosts with requests out: a round may hand a one-slot host's next request out before the
-- outcome of the one being fetched comes back (TRAWL_SCHEDULER_HOST_QUEUE_DEPTH), reading these
-- from this index (at most the in-flight budget of rows), as it reads idle hosts from hosts_heads.
CREATE INDEX IF NOT EXISTS hosts_busy_heads ON scheduler.hosts (head_priority DESC, head_fp)
    WHERE head_fp IS NOT NULL AND in_flight > 0;
