-- The frontier: one row per URL the scheduler knows.
-- status: known (importance seen, not yet discovered), queued, in_flight, fetched, failed, blocked
CREATE TABLE scheduler.frontier (
    url_fp          bigint PRIMARY KEY,
    url             text NOT NULL,
    host            text NOT NULL,
    status          text NOT NULL,
    priority        double precision NOT NULL DEFAULT 0,
    next_fetch_at   timestamptz NOT NULL DEFAULT now(),
    attempts        integer NOT NULL DEFAULT 0,
    depth           integer NOT NULL DEFAULT 0,
    request_id      text,
    dispatched_at   timestamptz,
    fetched_at      timestamptz,
    fetch_seq       bigint,
    http_status     integer,
    last_outcome    text,
    last_error      text,
    discovered_at   timestamptz NOT NULL DEFAULT now(),
    source          text NOT NULL DEFAULT 'link'
);
CREATE INDEX frontier_ready ON scheduler.frontier (host, priority DESC, url_fp) WHERE status = 'queued';
CREATE INDEX frontier_in_flight ON scheduler.frontier (dispatched_at) WHERE status = 'in_flight';
CREATE INDEX frontier_status ON scheduler.frontier (status);

-- Hosts: one request in flight at most, and not before next_allowed_at.
CREATE TABLE scheduler.hosts (
    host             text PRIMARY KEY,
    partition        integer NOT NULL,
    in_flight        integer NOT NULL DEFAULT 0,
    next_allowed_at  timestamptz NOT NULL DEFAULT now(),
    fetched          bigint NOT NULL DEFAULT 0,
    errors           bigint NOT NULL DEFAULT 0
);
CREATE INDEX hosts_free ON scheduler.hosts (partition, next_allowed_at) WHERE in_flight = 0;

CREATE TABLE scheduler.state (
    key    text PRIMARY KEY,
    value  text NOT NULL
);

CREATE SEQUENCE scheduler.fetch_seq;
