-- Freshness (services/scheduler/freshness/): fetched pages come due again, models per key.
--
-- A fetched page keeps status 'fetched' with next_fetch_at set to its planned revisit (on the
-- scheduler's clock; 9999-12-31 when nothing plans one); the dispatcher moves it back to
-- 'queued' once that time has passed. Its priority combines the importance service's cash with
-- the freshness plan (services/scheduler/frontier/priority.py): cash is the last announced OPIC cash,
-- change_probability the chance the page changed by its next fetch (1 for a page never
-- fetched), freshness_gain the new items a hub's next fetch is expected to reveal.
ALTER TABLE scheduler.frontier ADD COLUMN cash double precision NOT NULL DEFAULT 0;
ALTER TABLE scheduler.frontier ADD COLUMN change_probability double precision NOT NULL DEFAULT 1
    CHECK (change_probability >= 0 AND change_probability <= 1);
ALTER TABLE scheduler.frontier ADD COLUMN freshness_gain double precision NOT NULL DEFAULT 0
    CHECK (freshness_gain >= 0);
UPDATE scheduler.frontier SET cash = priority / (1 - path_penalty);
-- Pages fetched before revisits existed come due a day after their fetch (the default first revisit).
UPDATE scheduler.frontier SET next_fetch_at = coalesce(fetched_at, now()) + interval '1 day' WHERE status = 'fetched';
CREATE INDEX frontier_revisits ON scheduler.frontier (next_fetch_at) WHERE status = 'fetched';

-- A model generation: every model trained in one run, used by every replica once it is current
-- (scheduler.state 'freshness_generation'). waiting_target is the policy's target for the
-- fetch budget (hub_interval) over the hubs of this generation.
CREATE TABLE scheduler.freshness_generations (
    generation      bigint PRIMARY KEY,
    trained_at      timestamptz NOT NULL,
    window_start    timestamptz NOT NULL,
    window_end      timestamptz NOT NULL,
    waiting_target  double precision NOT NULL,
    hub_interval    double precision NOT NULL,
    items           integer NOT NULL,
    hubs            integer NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE SEQUENCE scheduler.freshness_generation_seq;

-- A trained model: the forest's 168 answers (new items per hour, Monday 00:00 UTC first).
CREATE TABLE scheduler.freshness_models (
    generation  bigint NOT NULL REFERENCES scheduler.freshness_generations ON DELETE CASCADE,
    model_key   text NOT NULL,
    rates       double precision[] NOT NULL CHECK (cardinality(rates) = 168),
    samples     integer NOT NULL,
    hours       integer NOT NULL,
    r2_cv       double precision NOT NULL,
    r2_holdout  double precision NOT NULL,
    PRIMARY KEY (generation, model_key)
);

-- Which model a key uses (its own, or its host's times the key's share of the host's items).
CREATE TABLE scheduler.freshness_routes (
    generation  bigint NOT NULL REFERENCES scheduler.freshness_generations ON DELETE CASCADE,
    key         text NOT NULL,
    model_key   text NOT NULL,
    share       double precision NOT NULL,
    samples     integer NOT NULL,
    PRIMARY KEY (generation, key)
);

-- What the revisit planner remembers of a fetched page (times on the scheduler's clock).
-- hub_key: the key of the items the page reveals when it is a hub (NULL: not a hub).
-- previous_fetch_at / last_fetch_at bound the interval whose new items new_items counts;
-- predicted_items is what the model expected there (the burst test). visits, changes and
-- span are the visit history Cho and Garcia-Molina's estimator reads.
CREATE TABLE scheduler.freshness_pages (
    url_fp             bigint PRIMARY KEY,
    url                text NOT NULL,
    host               text NOT NULL,
    hub_key            text,
    hub_items          integer NOT NULL DEFAULT 0,
    last_fetch_at      timestamptz,
    previous_fetch_at  timestamptz,
    fetches            integer NOT NULL DEFAULT 0,
    new_items          integer NOT NULL DEFAULT 0,
    predicted_items    double precision NOT NULL DEFAULT 0,
    boost              double precision NOT NULL DEFAULT 1,
    boost_since        timestamptz,
    visits             integer NOT NULL DEFAULT 0,
    changes            integer NOT NULL DEFAULT 0,
    span               double precision NOT NULL DEFAULT 0,
    policy             text,
    reason             text,
    rate               double precision,
    expected_items     double precision,
    planned_at         timestamptz,
    generation         bigint
);
CREATE INDEX freshness_hubs ON scheduler.freshness_pages (hub_key) WHERE hub_key IS NOT NULL;
