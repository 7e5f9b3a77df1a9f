"""Helpers shared by the test tiers, imported as ``support.<module>`` (pytest's
``pythonpath`` setting puts ``tests`` on ``sys.path``): ``fixtures`` is the pytest
plugin (a real Hive Metastore, a Spark session, a warehouse made by both),
``warehouse`` describes and makes that warehouse (Hive Thrift structs come from
:mod:`catalogd.hms.builders`), ``measurements`` collects the numbers
printed at the end of a run,
and ``catalogd_process``, ``spark_sql_server`` and ``ddl_scenario`` drive a
``catalogd serve`` process, a Spark SQL child process and the freshness DDL scenario
for the end-to-end tests.
"""
