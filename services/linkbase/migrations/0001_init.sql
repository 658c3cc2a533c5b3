-- The link base: hosts, URLs, the link graph, bad links and fetch history.
-- URLs and hosts are identified by 64-bit fingerprints (libs.common.urls.url_fingerprint,
-- services.linkbase.rows.host_id), so every table can later be hash-partitioned on them.
-- There are no foreign keys: the writer inserts hosts before URLs and URLs before links in
-- the same transaction, and foreign keys would cost a lookup per link at millions of rows.

CREATE TABLE linkbase.hosts (
    host_id           bigint      PRIMARY KEY,
    host              text        NOT NULL UNIQUE,
    registered_domain text        NOT NULL,
    first_seen        timestamptz NOT NULL DEFAULT now(),
    pages_fetched     bigint      NOT NULL DEFAULT 0,
    available         boolean     NOT NULL DEFAULT true
);
CREATE INDEX hosts_by_registered_domain ON linkbase.hosts (registered_domain);

-- announce_state: 0 = known but not followable yet, 1 = pending announcement (the outbox),
-- 2 = announced on trawl.discovered-urls (or already known to the scheduler).
-- depth is NULL while unknown (a URL first seen through a fetch outcome or a document).
CREATE TABLE linkbase.urls (
    url_fp             bigint      PRIMARY KEY,
    url                text        NOT NULL,
    host_id            bigint      NOT NULL,
    depth              integer,
    first_seen         timestamptz NOT NULL DEFAULT now(),
    discovered_from_fp bigint,
    announce_state     smallint    NOT NULL DEFAULT 0 CHECK (announce_state IN (0, 1, 2)),
    fetched            boolean     NOT NULL DEFAULT false,
    last_fetch_status  smallint,
    http_status        integer,
    fetched_at         timestamptz,
    title              text,
    content_fp         text,
    published_at       timestamptz,
    language           text,
    duplicate_of       text,
    canonical_url      text
) WITH (fillfactor = 85);
CREATE INDEX urls_pending_announcement ON linkbase.urls (url_fp) WHERE announce_state = 1;

-- link_class is trawl.v1.LinkClass (1 internal, 2 external); bad links live in bad_links.
CREATE TABLE linkbase.links (
    source_fp  bigint   NOT NULL,
    target_fp  bigint   NOT NULL,
    anchor     text     NOT NULL DEFAULT '',
    link_class smallint NOT NULL,
    nofollow   boolean  NOT NULL DEFAULT false,
    PRIMARY KEY (source_fp, target_fp)
);
CREATE INDEX links_by_target ON linkbase.links (target_fp, source_fp);

CREATE TABLE linkbase.bad_links (
    source_fp bigint NOT NULL,
    href_hash bigint NOT NULL,
    href      text   NOT NULL,
    reason    text   NOT NULL,
    anchor    text   NOT NULL DEFAULT '',
    PRIMARY KEY (source_fp, href_hash)
);

CREATE TABLE linkbase.fetch_history (
    url_fp      bigint      NOT NULL,
    request_id  text        NOT NULL,
    attempt     integer     NOT NULL,
    status      smallint    NOT NULL,
    http_status integer,
    fetched_at  timestamptz NOT NULL,
    elapsed_ms  integer,
    error       text,
    PRIMARY KEY (url_fp, request_id)
);

-- One row per extracted version of a page: what the freshness models learn from
-- (when content changed, and the publish time the page declared).
CREATE TABLE linkbase.page_versions (
    url_fp       bigint      NOT NULL,
    fetched_at   timestamptz NOT NULL,
    content_fp   text        NOT NULL,
    published_at timestamptz,
    PRIMARY KEY (url_fp, fetched_at)
);
