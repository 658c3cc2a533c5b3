"""Kafka plumbing on confluent-kafka: settings, protobuf codecs, producer, consumer, dead letters."""
