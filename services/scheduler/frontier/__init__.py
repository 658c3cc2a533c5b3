"""The frontier in PostgreSQL: URLs and hosts, their priorities, heads and operator policies."""
