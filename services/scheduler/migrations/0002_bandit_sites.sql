-- Crawl goals (a bandit over a set of sites): the arms and what their pages earned.
-- A site is an arm while it has a row here (the dispatcher registers the goal's sites);
-- only pages of arms are recorded in bandit_pages.
CREATE TABLE scheduler.bandit_sites (
    site          text PRIMARY KEY,
    pulls         bigint NOT NULL DEFAULT 0,   -- pages whose fetch ended: fetched, failed, blocked, skipped
    documents     bigint NOT NULL DEFAULT 0,   -- pages fetched
    new_urls      bigint NOT NULL DEFAULT 0,   -- URLs first discovered on its pages
    new_urls_max  integer NOT NULL DEFAULT 0,  -- most new URLs discovered on one page
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- One row per recorded page of an arm: its rewards and its pull order (NULL while only a
-- discovery has credited it and its own fetch outcome has not arrived yet).
CREATE TABLE scheduler.bandit_pages (
    url_fp    bigint PRIMARY KEY,
    site      text NOT NULL,
    seq       bigint,
    document  smallint NOT NULL DEFAULT 0,
    new_urls  integer NOT NULL DEFAULT 0
);
CREATE INDEX bandit_pages_recent ON scheduler.bandit_pages (site, seq DESC) WHERE seq IS NOT NULL;

CREATE SEQUENCE scheduler.bandit_seq;
