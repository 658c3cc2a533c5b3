-- OPIC state. Cash of an uncrawled page = cash + (totals.dividend - dividend_mark):
-- the virtual page's cash is shared equally by the uncrawled pages in O(1) by raising
-- totals.dividend; each page remembers the dividend level it joined at.
CREATE TABLE importance.pages (
    url_fp         bigint PRIMARY KEY,
    url            text NOT NULL,
    host           text NOT NULL,
    cash           double precision NOT NULL DEFAULT 0,
    history        double precision NOT NULL DEFAULT 0,
    crawled        boolean NOT NULL DEFAULT false,
    dividend_mark  double precision NOT NULL DEFAULT 0,
    visits         integer NOT NULL DEFAULT 0,
    last_visit     timestamptz
);

CREATE TABLE importance.totals (
    id             smallint PRIMARY KEY CHECK (id = 1),
    virtual_cash   double precision NOT NULL,
    dividend       double precision NOT NULL DEFAULT 0,
    uncrawled      bigint NOT NULL DEFAULT 0,
    history_total  double precision NOT NULL DEFAULT 0,
    total_cash     double precision NOT NULL
);

-- Offsets already applied, per input partition, written in the same transaction as the
-- state: a redelivered message is recognised and skipped, so no cash is created or lost.
CREATE TABLE importance.applied (
    topic        text NOT NULL,
    partition    integer NOT NULL,
    next_offset  bigint NOT NULL,
    PRIMARY KEY (topic, partition)
);
