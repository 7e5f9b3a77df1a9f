"""What the benchmarks in ``bench/`` share, imported as ``support.<module>``: running
``python bench/<benchmark>.py`` puts ``bench/`` first on ``sys.path``, and the project's
own packages (``catalogd``, ``subscriber``, ``idl``) come from its editable install.
``measure`` holds result rows, latency summaries and memory readings; ``synthetic``
the benchmark catalog (HMS structs and the catalog objects made from them); ``hms``
the real Hive Metastore holding that catalog, built once and reused; and
``subscriber_process`` the subscriber side of the multi-process benchmarks, run as
``python -m support.subscriber_process`` from ``bench/``.
"""
