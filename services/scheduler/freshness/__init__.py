"""Freshness: when the scheduler fetches a page again (seed 001, and what it left open).

- ``history``: appearance times of new items (publish date, else the midpoint rule), read from
  the linkbase through a small reader protocol (``linkbase_reader``) or from CSV;
- ``keys``: host + first path segment, folded into the host below a sample threshold;
- ``model``: a random forest per key on one-hot hour and weekday, compiled into 168 hourly rates;
- ``rates``, ``policy``, ``bursts``, ``revisits``: rate curves, the waiting-time rule under a
  fetch budget, the burst boost, and the per-fetch decision the service and the evaluator share;
- ``estimator``: Cho and Garcia-Molina's change-rate estimator for pages without a model;
- ``replay``, ``evaluation``: the offline evaluation (``trawl eval freshness``).

Time is UNIX seconds (floats) in this package; the service converts at its edges.
"""
