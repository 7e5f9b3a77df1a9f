"""Statistics computed by Spark and written to HMS (``catalogd stats compute``).

``compute`` runs the aggregation (one scan) whose SQL ``aggregates`` writes and
whose rows ``folding`` turns into ``results``; ``footers`` reads what Parquet
footers give exactly (the scan then leaves it out), ``publish`` writes HMS
column statistics, basic-stats parameters and Spark's
``spark.sql.statistics.*`` keys, ``job`` ties them to a table and its files,
``cli`` is the command.
"""
