-- Conditional revisits: the validators of a page's last capture (ETag and Last-Modified as the server
-- sent them, "" never stored) and when that capture was fetched. A fetch request of a revisit carries
-- them, so that the fetcher asks If-None-Match / If-Modified-Since and a page that did not change
-- answers 304 without a body. Nullable columns without a default: no rewrite of the table.
ALTER TABLE scheduler.frontier
    ADD COLUMN IF NOT EXISTS etag text,
    ADD COLUMN IF NOT EXISTS last_modified text,
    ADD COLUMN IF NOT EXISTS validated_at timestamptz;
