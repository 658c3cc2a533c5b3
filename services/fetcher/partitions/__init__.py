"""Partitions changing owner: the rebalance-aware consumer, handoff and finished requests."""
