-- Exact-duplicate index: the first URL seen with each content fingerprint.
-- The documents topic is keyed by content fingerprint, so one dedup instance owns a
-- fingerprint; the primary key settles any race anyway (first insert wins).
CREATE TABLE dedup.fingerprints (
    content_fp text        PRIMARY KEY,
    url        text        NOT NULL,
    first_seen timestamptz NOT NULL DEFAULT now()
);
