-- When every known page has been crawled, the virtual page gives its cash to all of them
-- through totals.crawled_dividend (it was a sink before: cash piled up there and history
-- stopped growing). A crawled page's dividend_mark is now its crawled_dividend level at
-- its last visit; pages crawled before this migration start from level 0.
ALTER TABLE importance.totals
    ADD COLUMN crawled           bigint NOT NULL DEFAULT 0,
    ADD COLUMN crawled_dividend  double precision NOT NULL DEFAULT 0;

UPDATE importance.totals SET crawled = (SELECT count(*) FROM importance.pages WHERE crawled);
UPDATE importance.pages SET dividend_mark = 0 WHERE crawled;
