"""catalogd: an Impala-style catalog daemon for Hive Metastore and Spark."""

__version__ = "0.1.0"
