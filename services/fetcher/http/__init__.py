"""The HTTP client: requests, bodies, responses, address checks and revisit validators."""
