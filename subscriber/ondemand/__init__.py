"""On-demand subscribers: no replica, a bounded cache of what was read, kept right by
catalogd's invalidation stream (Impala's local catalog). The version rules are in
:mod:`subscriber.ondemand.cache`; fetching in :mod:`subscriber.ondemand.reader`."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--mode`` and ``--cache-mb`` of the commands that start a subscriber."""
    parser.add_argument(
        "--mode",
        choices=("replica", "on-demand"),
        default="replica",
        help="replica: hold the whole catalog (of --databases); on-demand: hold only what "
        "is read, fetched from catalogd on a miss (fast to start on any catalog)",
    )
    parser.add_argument(
        "--cache-mb",
        type=int,
        default=256,
        metavar="MIB",
        help="on-demand: the cache's cap in MiB (least recently used dropped first)",
    )
