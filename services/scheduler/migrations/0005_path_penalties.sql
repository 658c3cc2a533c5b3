-- The linkbase's trap signal (DiscoveredUrl.path_key, DiscoveredUrl.path_penalty): the path a
-- URL is under and that path's penalty. A URL's priority is the importance it was given times
-- (1 - path_penalty); when a discovery brings a new penalty for a path, the queued URLs of the
-- path are re-weighted with it (services/scheduler/frontier/store.py).
ALTER TABLE scheduler.frontier ADD COLUMN path_key text;
ALTER TABLE scheduler.frontier ADD COLUMN path_penalty double precision NOT NULL DEFAULT 0
    CHECK (path_penalty >= 0 AND path_penalty < 1);
CREATE INDEX frontier_by_path ON scheduler.frontier (path_key) WHERE path_key IS NOT NULL;
