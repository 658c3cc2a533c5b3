"""The admin gRPC API and what it reads: seeds, hosts, URL reports, topics, the crawl goal."""
