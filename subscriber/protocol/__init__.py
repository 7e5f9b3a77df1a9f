"""subscriber.protocol: the catalog protocol that catalogd and its subscribers both speak.

Values and pure functions only: no sockets, threads or clocks, and no imports
from the rest of :mod:`subscriber` (only thriftpy2, :mod:`idl`, the standard
library and each other), so catalogd and the subscriber share one definition
and cannot disagree.

* :mod:`~subscriber.protocol.errors`: the one exception tree of both packages.
* :mod:`~subscriber.protocol.keys`: Impala-style catalog object keys
  (``TABLE:db.t``) and the database each belongs to.
* :mod:`~subscriber.protocol.delta`: versioned entries and deltas, and the rule
  for applying a delta to a copy at a version.
* :mod:`~subscriber.protocol.messages`: the messages (delta parts, commits,
  heartbeats, snapshot chunks and ends) as plain values.
* :mod:`~subscriber.protocol.codec`: Thrift structs to framed, optionally
  compressed bytes and back; :mod:`~subscriber.protocol.validator` checks
  untrusted bytes before thriftpy2 decodes them; :mod:`~subscriber.protocol.binary`
  holds the binary protocol's type codes and the one walker that steps over a value.
* :mod:`~subscriber.protocol.wire`: PUB/SUB topics and frames, and the
  conversions between the values above and catalogd's Thrift messages.
* :mod:`~subscriber.protocol.hive_types`: Hive column type strings to Impala
  ``TColumnType`` trees and back.
"""
