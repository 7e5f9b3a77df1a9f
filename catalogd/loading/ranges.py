"""Range planning: the ``PART_ID`` ranges one large table is read in, by several workers at once.

Asked by the daemon through its own source (two queries, while the workers may
still be starting) or, without one, by a worker's first task; either way with the
same :func:`split`, so both sides plan the same ranges.
"""

from __future__ import annotations

from catalogd.sources import MetastoreSource, bulk

__all__ = ["SPLIT_ABOVE", "Ranges", "split"]

# Partitions per range when one large table is read by several workers: big enough
# that the per-range cost (reading the table's header again, ~ms) stays under 1%.
SPLIT_ABOVE = 20_000

# ``PART_ID`` ranges ``[first, next range's first)``, the last one open (None).
Ranges = list[tuple[int, int | None]]


def split(
    source: MetastoreSource, db: str, table: str, split_above: int, workers: int
) -> Ranges | None:
    """The ``PART_ID`` ranges to read ``db.table`` in: a multiple of ``workers`` ranges of
    equal size, at most ``split_above`` partitions each, so every worker gets the same
    share; ``[]`` for a table of at most ``split_above`` partitions (or a view, or an
    unpartitioned table: 0); None when ``source`` cannot read by ranges (no
    :class:`~catalogd.sources.protocol.BulkSource`). Two queries; raises what they raise."""
    bulk_source = bulk(source)
    if bulk_source is None:
        return None
    count = bulk_source.partition_counts(db, [table]).get(table.lower(), 0)
    if count <= split_above:
        return []
    shares = workers * -(-count // (workers * split_above))
    ranges: Ranges = bulk_source.partition_ranges(db, table, -(-count // shares))
    return ranges if len(ranges) > 1 else []
