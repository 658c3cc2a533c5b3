-- AOPIC state partitioned like trawl.page-links: each partition's pages live in the memory
-- of the importance instance that owns the partition, and are made durable here as a
-- snapshot (in chunks) plus the changelog of the commits since, one delta per commit.
-- The per-URL table of the first layout is no longer the state: its row upserts could not
-- keep up (docs/benchmarks.md). It stays as a view for people (the demo's top pages, the
-- admin URL report): each snapshot publishes there the partition's home and index pages,
-- the URLs the state keeps. The cash of the first layout is not carried over.
TRUNCATE importance.pages;
DROP TABLE IF EXISTS importance.totals;
DROP TABLE IF EXISTS importance.applied;

CREATE TABLE importance.partitions (
    partition        integer PRIMARY KEY,
    partitions       integer NOT NULL,   -- the partition count the URL space was split for
    version          bigint NOT NULL DEFAULT 0,  -- commits so far; a writer must hold the version it loaded
    totals           jsonb NOT NULL,     -- the engine's scalars (virtual page, dividends, ledger)
    applied          jsonb NOT NULL DEFAULT '{}',  -- topic -> next offset to apply
    received_seq     bigint[] NOT NULL,  -- per source partition: last cash transfer applied
    sent_seq         bigint[] NOT NULL,  -- per destination partition: last cash transfer written
    snapshot_version bigint NOT NULL DEFAULT 0,
    audited_cash     double precision,   -- exact sum of the cash held, at audited_version
    audited_expected double precision,   -- initial + received - sent at audited_version
    audited_version  bigint,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE importance.snapshots (
    partition  integer NOT NULL,
    version    bigint NOT NULL,
    chunk      integer NOT NULL,
    state      bytea NOT NULL,
    PRIMARY KEY (partition, chunk)
);

CREATE TABLE importance.changelog (
    partition  integer NOT NULL,
    version    bigint NOT NULL,
    delta      bytea NOT NULL,
    PRIMARY KEY (partition, version)
);

-- Cash transfers written with the commit that created them and sent after it; a row is
-- removed once the broker acknowledged it, so what is left here is re-sent on load.
CREATE TABLE importance.outbox (
    partition    integer NOT NULL,
    destination  integer NOT NULL,
    sequence     bigint NOT NULL,
    key          text NOT NULL,
    cash         double precision NOT NULL,
    payload      bytea NOT NULL,
    PRIMARY KEY (partition, destination, sequence)
);

ALTER TABLE importance.snapshots ALTER COLUMN state SET STORAGE EXTERNAL;
ALTER TABLE importance.changelog ALTER COLUMN delta SET STORAGE EXTERNAL;
