"""Hive Metastore adapters: the embedded harness and the Thrift client."""
