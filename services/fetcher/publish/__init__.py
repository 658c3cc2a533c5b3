"""What the fetcher publishes besides outcomes: result bodies, runs of results, discoveries."""
