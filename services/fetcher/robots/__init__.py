"""robots.txt: the per-origin cache, its rules and their path patterns."""
