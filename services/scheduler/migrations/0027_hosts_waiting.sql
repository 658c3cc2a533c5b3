-- One-slot hosts with a queued head by their next allowed time: with nothing to take, the dispatch
-- loop reads the earliest one that is not free yet (services/scheduler/frontier/next_due.py) and
-- sleeps until then, instead of running a round every dispatch interval to find nothing.
CREATE INDEX IF NOT EXISTS hosts_waiting ON scheduler.hosts (next_allowed_at)
    WHERE head_fp IS NOT NULL AND slots = 1;
