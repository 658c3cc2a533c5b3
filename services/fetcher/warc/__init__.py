"""The WARC archive of every exchange, in the event loop's process or one of its own."""
