"""Host politeness: one request at a time per host, and the gap between them."""
