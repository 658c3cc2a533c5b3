-- Crawl goal "external_links": a page's reward is the number of external links it carries
-- (trawl.page-link-counts). A page is counted once: its external_links stays NULL until the
-- first count arrives, and a later count of the same page (redelivered, or a refetch) is ignored.
ALTER TABLE scheduler.bandit_sites
    ADD COLUMN external_links     bigint  NOT NULL DEFAULT 0,  -- external links on its counted pages
    ADD COLUMN external_links_max integer NOT NULL DEFAULT 0;  -- most external links on one page

ALTER TABLE scheduler.bandit_pages
    ADD COLUMN external_links integer;  -- NULL: its link counts have not arrived
