-- Near-duplicate index: the latest sketch of every judged URL and its LSH band keys.
--
-- near_bands is hash-partitioned by band key and near_documents by URL fingerprint: every
-- dedup replica reads and writes all of them (documents of one near-duplicate cluster arrive
-- on different partitions of trawl.documents, since they have different fingerprints), so
-- the index scales out with the database (16 partitions here, shards under Citus with the
-- same distribution columns), not with the consumer group, whose replicas stay stateless.
CREATE TABLE dedup.index_shape (
    singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    shingle_width    integer NOT NULL,
    permutations     integer NOT NULL,
    bands            integer NOT NULL,
    rows_per_band    integer NOT NULL,
    coefficient_seed bigint  NOT NULL
);

CREATE SEQUENCE dedup.near_seq;

-- representative: the cluster's first copy (the URL itself when it is unique);
-- representative_seq: that copy's seq, so the earliest cluster wins when several match.
CREATE TABLE dedup.near_documents (
    url_fp             bigint      NOT NULL,
    url                text        NOT NULL,
    content_fp         text        NOT NULL,
    seq                bigint      NOT NULL,
    signature          bytea       NOT NULL,
    simhash            bigint      NOT NULL,
    representative     text        NOT NULL,
    representative_seq bigint      NOT NULL,
    similarity         real        NOT NULL,
    fetched_at_ms      bigint      NOT NULL DEFAULT 0,
    indexed_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT near_documents_pk PRIMARY KEY (url_fp)
) PARTITION BY HASH (url_fp);

CREATE TABLE dedup.near_bands (
    band_key bigint NOT NULL,
    url_fp   bigint NOT NULL,
    CONSTRAINT near_bands_pk PRIMARY KEY (band_key, url_fp)
) PARTITION BY HASH (band_key);

DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format('CREATE TABLE dedup.near_documents_p%s PARTITION OF dedup.near_documents'
                       ' FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
        EXECUTE format('CREATE TABLE dedup.near_bands_p%s PARTITION OF dedup.near_bands'
                       ' FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
    END LOOP;
END $$;
