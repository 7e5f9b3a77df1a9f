"""``catalogd keys generate NAME [--dir DIR]``: write a CURVE key pair.

The pair is a ZeroMQ certificate pair: ``NAME.key`` (public: copy it into the
server's ``subscribers/`` or ``admin/`` directory, or hand it to clients as the
server key) and ``NAME.key_secret`` (mode 0600: stays with its owner). The
command prints the two paths, never the key material.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

EPILOG = """layout on the server (deploy/README.md):
  /etc/catalogd/keys/server.key_secret   catalogd's pair (0600, owner catalogd)
  /etc/catalogd/keys/subscribers/*.key   public keys allowed to subscribe
  /etc/catalogd/keys/admin/*.key         public keys allowed to run admin commands
Removing a public key file and `systemctl reload catalogd` (SIGHUP) revokes it."""


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``keys`` (with ``generate``) to ``commands`` (an ``add_subparsers()`` result)."""
    keys: argparse.ArgumentParser = commands.add_parser(
        "keys",
        help="generate CURVE key pairs for catalogd, subscribers and admins",
        description="CURVE keys: catalogd encrypts and authenticates every connection "
        "when it has them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = keys.add_subparsers(dest="keys_command", required=True, metavar="KEYS_COMMAND")
    generate = sub.add_parser(
        "generate",
        help="write NAME.key (public) and NAME.key_secret (secret, mode 0600)",
        description="Write a CURVE key pair in ZeroMQ's certificate format. The name is "
        "how catalogd shows the key's owner (audit log, admin status, logs).",
    )
    generate.add_argument("name", help="the key's name, e.g. server, spark-etl, alice")
    generate.add_argument(
        "--dir", type=Path, default=Path("."), help="where to write the files (default: .)"
    )
    return keys


def run(args: argparse.Namespace) -> int:
    """Carry out ``keys generate``; returns the exit code.

    Raises:
        ConfigError: a bad name, or the files exist already.
    """
    from catalogd.security.keys import generate

    public, secret = generate(args.name, args.dir)
    print(f"public key: {public}\nsecret key: {secret} (mode 0600: keep it private)")
    return 0
