"""Sitemaps: reading a host's sitemaps for the page URLs they list."""
