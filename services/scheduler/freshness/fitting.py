"""One model generation's models and routes from appearance times per key: the trainer's and the evaluator's.

:func:`fit_models` routes keys by their item counts (``keys.route_keys``), trains one model
per model key (``model.train_rate_model``: the forest or the separable curve, blended with the
mean rate as cross-validation says) and keeps only the models with cross-validated skill
above ``min_skill``: a key whose history teaches no more than its mean rate is left without a
model and planned by its visits (the model-free estimator), as a key too small for a model is.
The service's trainer and ``trawl eval freshness`` both call it, so what the evaluator
measures is what the service plans with.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from services.scheduler.freshness.keys import Route, route_keys
from services.scheduler.freshness.model import ForestSettings, RateModel, observed_from, train_rate_model

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fitted:
    routes: dict[str, Route]
    models: dict[str, RateModel]
    dropped: dict[str, RateModel]  # trained, but with too little skill to be used


def fit_models(by_key: Mapping[str, Sequence[float]], since: float, until: float, min_samples: int,
               forest: ForestSettings, min_skill: float) -> Fitted:
    """Routes and models from the item times of ``[since, until)`` per key (times outside are ignored)."""
    in_window = {key: sorted(t for t in times if since <= t < until) for key, times in by_key.items()}
    routes = route_keys({key: len(times) for key, times in in_window.items()}, min_samples)
    folded: dict[str, list[float]] = {}
    for key, routed in routes.items():
        folded.setdefault(routed.model_key, []).extend(in_window[key])
    models: dict[str, RateModel] = {}
    dropped: dict[str, RateModel] = {}
    for model_key, times in sorted(folded.items()):
        try:
            model = train_rate_model(sorted(times), observed_from(times, since), until, forest)
        except ValueError as exc:
            log.warning("no model for %s: %s", model_key, exc)
            continue
        if forest.blend_steps > 0 and model.skill <= min_skill:
            dropped[model_key] = model
        else:
            models[model_key] = model
    return Fitted({k: r for k, r in routes.items() if r.model_key in models}, models, dropped)
