-- How many times the page a URL was discovered from links it (its followable links to it): sent
-- with the URL's announcement, so that the frontier can order a page's new links as AOPIC will
-- share its cash (a link repeated in a menu and the text first) before that cash is announced.
ALTER TABLE linkbase.urls ADD COLUMN IF NOT EXISTS discovered_occurrences smallint NOT NULL DEFAULT 1;
