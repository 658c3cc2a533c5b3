-- How much the link base holds, in one row (operators' crawl summaries): URLs known, those judged
-- exact copies of another, links stored and links rejected as invalid.
CREATE VIEW linkbase.v_counts_v1 AS
SELECT (SELECT count(*) FROM linkbase.urls) AS urls,
       (SELECT count(*) FROM linkbase.urls WHERE duplicate_of IS NOT NULL) AS duplicates,
       (SELECT count(*) FROM linkbase.links) AS links,
       (SELECT count(*) FROM linkbase.bad_links) AS bad_links;
