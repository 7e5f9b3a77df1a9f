"""On-demand subscribers: no replica, a bounded cache of what was read, kept right by
catalogd's invalidation stream (Impala's local catalog). The version rules are in
:mod:`subscriber.ondemand.cache`; fetching in :mod:`subscriber.ondemand.reader`."""
