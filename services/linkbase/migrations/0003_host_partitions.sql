-- The link base, natively hash-partitioned by host (16 partitions per table).
--
-- Every row carries the 64-bit id of the host it belongs to (a URL's host; a link's and a bad
-- link's source host; a history row's hub host), every primary key starts with it, and every
-- table is PARTITION BY HASH on it. A query that names a host (the "seen" test, out-links, a
-- host's summary, a URL's record and history) touches one partition; a distributed PostgreSQL
-- (Citus: create_distributed_table(..., 'host_id') with the same column) runs the same SQL
-- with the host's rows on one node. In-links are the one fan-out: they are indexed by target
-- in every partition.
--
-- The tables of 0001 (and any column a later migration added to them) are moved here: each
-- old table is renamed *_v1, the new one created, columns only the old one has are added to
-- the new one, the rows copied, and the old table dropped.

CREATE FUNCTION linkbase.partition_by_host(parent text, parts int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 0..parts - 1 LOOP
        EXECUTE format('CREATE TABLE linkbase.%I PARTITION OF linkbase.%I FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
                       parent || '_p' || i, parent, parts, i);
    END LOOP;
END $$;

-- Copies old_table into new_table: shared columns as they are, the new table's extra columns
-- from `derived` (column => SQL expression over the alias o and the FROM clause `joins`).
CREATE FUNCTION linkbase.move_rows(old_table text, new_table text, derived jsonb, joins text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    col record;
    targets text[] := '{}';
    sources text[] := '{}';
    key text;
BEGIN
    FOR col IN
        SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type
        FROM pg_attribute a
        WHERE a.attrelid = ('linkbase.' || old_table)::regclass AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_attribute b WHERE b.attrelid = ('linkbase.' || new_table)::regclass
                       AND b.attname = col.attname AND NOT b.attisdropped) THEN
            EXECUTE format('ALTER TABLE linkbase.%I ADD COLUMN %I %s', new_table, col.attname, col.type);
        END IF;
        IF NOT derived ? col.attname THEN
            targets := targets || quote_ident(col.attname);
            sources := sources || ('o.' || quote_ident(col.attname));
        END IF;
    END LOOP;
    FOR key IN SELECT jsonb_object_keys(derived) LOOP
        targets := targets || quote_ident(key);
        sources := sources || (derived ->> key);
    END LOOP;
    EXECUTE format('INSERT INTO linkbase.%I (%s) SELECT %s FROM linkbase.%I AS o %s', new_table,
                   array_to_string(targets, ', '), array_to_string(sources, ', '), old_table, joins);
    EXECUTE format('DROP TABLE linkbase.%I', old_table);
END $$;

ALTER TABLE linkbase.hosts RENAME TO hosts_v1;
ALTER TABLE linkbase.urls RENAME TO urls_v1;
ALTER TABLE linkbase.links RENAME TO links_v1;
ALTER TABLE linkbase.bad_links RENAME TO bad_links_v1;
ALTER TABLE linkbase.fetch_history RENAME TO fetch_history_v1;
ALTER TABLE linkbase.page_versions RENAME TO page_versions_v1;

-- available: false once a fetch of the home page "/" failed (BeeBot's "not available"),
-- true again after one succeeded; availability_at is when the last home-page outcome said so.
CREATE TABLE linkbase.hosts (
    host_id           bigint      NOT NULL,
    host              text        NOT NULL,
    registered_domain text        NOT NULL,
    first_seen        timestamptz NOT NULL DEFAULT now(),
    pages_fetched     bigint      NOT NULL DEFAULT 0,
    available         boolean     NOT NULL DEFAULT true,
    availability_at   timestamptz,
    CONSTRAINT hosts_pk PRIMARY KEY (host_id)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('hosts', 16);
CREATE INDEX hosts_by_domain ON linkbase.hosts (registered_domain);

-- announce_state: 0 known, not followable yet; 1 pending announcement (the outbox); 2 announced.
-- depth is the page level (fewest hops from a seed), NULL while unknown; fetched is BeeBot's
-- "processed" flag. dup_state: NULL not judged, 0 unique, 1 exact copy of duplicate_of,
-- 2 near-duplicate of near_duplicate_of (similarity = estimated resemblance). links_at is the
-- fetch time of the page whose out-links are stored (T_last of the next fetch).
CREATE TABLE linkbase.urls (
    host_id                 bigint      NOT NULL,
    url_fp                  bigint      NOT NULL,
    url                     text        NOT NULL,
    depth                   integer,
    first_seen              timestamptz NOT NULL DEFAULT now(),
    discovered_from_host_id bigint,
    discovered_from_fp      bigint,
    announce_state          smallint    NOT NULL DEFAULT 0 CHECK (announce_state IN (0, 1, 2)),
    fetched                 boolean     NOT NULL DEFAULT false,
    last_fetch_status       smallint,
    http_status             integer,
    fetched_at              timestamptz,
    links_at                timestamptz,
    title                   text,
    content_fp              text,
    published_at            timestamptz,
    language                text,
    canonical_url           text,
    dup_state               smallint,
    duplicate_of            text,
    near_duplicate_of       text,
    similarity              real,
    CONSTRAINT urls_pk PRIMARY KEY (host_id, url_fp)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('urls', 16);
CREATE INDEX urls_pending ON linkbase.urls (url_fp) WHERE announce_state = 1;

-- link_class is trawl.v1.LinkClass (1 internal, 2 external); bad links live in bad_links.
-- context: the text around the link (external links keep BeeBot's anchor context).
CREATE TABLE linkbase.links (
    source_host_id bigint   NOT NULL,
    source_fp      bigint   NOT NULL,
    target_fp      bigint   NOT NULL,
    target_host_id bigint   NOT NULL,
    anchor         text     NOT NULL DEFAULT '',
    context        text     NOT NULL DEFAULT '',
    link_class     smallint NOT NULL,
    nofollow       boolean  NOT NULL DEFAULT false,
    CONSTRAINT links_pk PRIMARY KEY (source_host_id, source_fp, target_fp)
) PARTITION BY HASH (source_host_id);
SELECT linkbase.partition_by_host('links', 16);
CREATE INDEX links_to_target ON linkbase.links (target_fp, source_fp);

CREATE TABLE linkbase.bad_links (
    source_host_id bigint NOT NULL,
    source_fp      bigint NOT NULL,
    href_hash      bigint NOT NULL,
    href           text   NOT NULL,
    reason         text   NOT NULL,
    anchor         text   NOT NULL DEFAULT '',
    CONSTRAINT bad_links_pk PRIMARY KEY (source_host_id, source_fp, href_hash)
) PARTITION BY HASH (source_host_id);
SELECT linkbase.partition_by_host('bad_links', 16);

CREATE TABLE linkbase.fetch_history (
    host_id     bigint      NOT NULL,
    url_fp      bigint      NOT NULL,
    request_id  text        NOT NULL,
    attempt     integer     NOT NULL,
    status      smallint    NOT NULL,
    http_status integer,
    fetched_at  timestamptz NOT NULL,
    elapsed_ms  integer,
    error       text,
    CONSTRAINT fetch_history_pk PRIMARY KEY (host_id, url_fp, request_id)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('fetch_history', 16);

CREATE TABLE linkbase.page_versions (
    host_id      bigint      NOT NULL,
    url_fp       bigint      NOT NULL,
    fetched_at   timestamptz NOT NULL,
    content_fp   text        NOT NULL,
    published_at timestamptz,
    CONSTRAINT page_versions_pk PRIMARY KEY (host_id, url_fp, fetched_at)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('page_versions', 16);

-- Publish-time history (seed 001): one row per child URL a re-fetch of a hub page revealed
-- (linked now, not linked at the previous fetch). fetched_at is T_now, previous_fetch_at
-- T_last; inferred_at the midpoint of the two when they are less than an hour apart (NULL
-- otherwise). The child's extracted publish date is urls.published_at of the child.
CREATE TABLE linkbase.publish_history (
    hub_host_id       bigint      NOT NULL,
    hub_fp            bigint      NOT NULL,
    fetched_at        timestamptz NOT NULL,
    child_fp          bigint      NOT NULL,
    child_host_id     bigint      NOT NULL,
    previous_fetch_at timestamptz NOT NULL,
    inferred_at       timestamptz,
    CONSTRAINT publish_history_pk PRIMARY KEY (hub_host_id, hub_fp, fetched_at, child_fp)
) PARTITION BY HASH (hub_host_id);
SELECT linkbase.partition_by_host('publish_history', 16);
CREATE INDEX publish_history_by_child ON linkbase.publish_history (child_fp);

-- Duplicate verdicts per path (host + first path segment): the trap signal for the scheduler.
CREATE TABLE linkbase.path_stats (
    host_id    bigint NOT NULL,
    path_key   text   NOT NULL,
    judged     bigint NOT NULL DEFAULT 0,
    duplicates bigint NOT NULL DEFAULT 0,
    CONSTRAINT path_stats_pk PRIMARY KEY (host_id, path_key)
) PARTITION BY HASH (host_id);
SELECT linkbase.partition_by_host('path_stats', 16);

-- BeeBot's seeds: one site per start URL host.
CREATE TABLE linkbase.seeds (
    host_id    bigint      PRIMARY KEY,
    name       text        NOT NULL,
    short_name text        NOT NULL,
    start_url  text        NOT NULL,
    added_at   timestamptz NOT NULL DEFAULT now()
);

SELECT linkbase.move_rows('hosts_v1', 'hosts', '{}', '');
SELECT linkbase.move_rows('urls_v1', 'urls', jsonb_build_object(
    'discovered_from_host_id', 'src.host_id',
    'dup_state', 'CASE WHEN o.duplicate_of IS NOT NULL THEN 1 END'),
    'LEFT JOIN linkbase.urls_v1 AS src ON src.url_fp = o.discovered_from_fp');
CREATE INDEX urls_by_fp_while_moving ON linkbase.urls (url_fp);  -- old rows name URLs by fingerprint only
SELECT linkbase.move_rows('links_v1', 'links', jsonb_build_object(
    'source_host_id', 's.host_id', 'target_host_id', 't.host_id'),
    'JOIN linkbase.urls AS s ON s.url_fp = o.source_fp JOIN linkbase.urls AS t ON t.url_fp = o.target_fp');
SELECT linkbase.move_rows('bad_links_v1', 'bad_links', jsonb_build_object('source_host_id', 's.host_id'),
    'JOIN linkbase.urls AS s ON s.url_fp = o.source_fp');
SELECT linkbase.move_rows('fetch_history_v1', 'fetch_history', jsonb_build_object('host_id', 'u.host_id'),
    'JOIN linkbase.urls AS u ON u.url_fp = o.url_fp');
SELECT linkbase.move_rows('page_versions_v1', 'page_versions', jsonb_build_object('host_id', 'u.host_id'),
    'JOIN linkbase.urls AS u ON u.url_fp = o.url_fp');
UPDATE linkbase.urls SET links_at = fetched_at WHERE fetched;
DROP INDEX linkbase.urls_by_fp_while_moving;

DROP FUNCTION linkbase.move_rows(text, text, jsonb, text);
