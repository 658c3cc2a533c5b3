"""Crawl goals over a set of sites as a multi-armed bandit (seed 003, BeeBot).

``policies`` (the paper's rules and ours), ``arms`` (what a policy reads), ``replay`` (the
offline evaluator's budgeted crawl over recorded reward sequences), ``site_sets`` (generated
site sets of the paper's two kinds), ``allocator`` and ``arm_store`` (the scheduler's hook).
"""
