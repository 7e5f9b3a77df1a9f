"""File metadata for opted-in tables: listing partition directories in parallel
(``lister`` picks the backend: ``listing``, a thread pool for local paths, or
``spark_listing``, Spark's bulk lister for other schemes and big listings) and
attaching ``THdfsFileDesc`` lists to loaded objects (``metadata``)."""
