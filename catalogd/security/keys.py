"""CURVE key files: generate a pair, load the server's, read a directory of allowed keys.

Files are ZeroMQ certificates as written by :func:`zmq.auth.create_certificates`:
``NAME.key`` (public) and ``NAME.key_secret`` (both halves, mode 0600). A key's
*name* is its file name without the suffix; that name is the identity catalogd
shows in the audit log, ``admin status`` and its logs (the ZAP User-Id).

Safety checks at start (and on every reload): a secret key file that any other
user can read or write, and a key directory or public key file that others can
write, are refused with a message that says how to fix it.
No function here puts key material into a message or a log line. Certificate files
are read with :func:`subscriber.curve.load_certificate`, the reader clients use too.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import zmq.auth

from catalogd.config import ConfigError
from subscriber.curve import PUBLIC_SUFFIX, SECRET_SUFFIX, load_certificate
from subscriber.protocol.errors import InvalidRequestError

__all__ = [
    "PUBLIC_SUFFIX",
    "SECRET_SUFFIX",
    "ServerKeys",
    "check_secret_file",
    "generate",
    "load_directory",
    "load_server_keys",
]


@dataclass(frozen=True, slots=True)
class ServerKeys:
    """The server's key pair (Z85 bytes); ``repr`` never shows the secret."""

    public: bytes
    secret: bytes = field(repr=False)


def generate(name: str, directory: Path) -> tuple[Path, Path]:
    """Write ``NAME.key`` and ``NAME.key_secret`` (mode 0600) into ``directory``.

    Returns:
        ``(public_file, secret_file)``.

    Raises:
        ConfigError: a bad name, or either file exists already (never overwritten).
    """
    if not name or "/" in name or name.startswith(".") or name != name.strip():
        raise ConfigError(f"key name {name!r}: use letters, digits, '-', '_' or '.'")
    directory.mkdir(parents=True, exist_ok=True)
    public, secret = directory / f"{name}{PUBLIC_SUFFIX}", directory / f"{name}{SECRET_SUFFIX}"
    for path in (public, secret):
        if path.exists():
            raise ConfigError(f"{path} exists already: remove it first, or pick another name")
    # The umask makes the secret file 0600 from its first byte; chmod makes sure.
    old = os.umask(0o077)
    try:
        zmq.auth.create_certificates(directory, name)
    finally:
        os.umask(old)
    secret.chmod(0o600)
    public.chmod(0o644)
    return public, secret


def check_secret_file(path: Path) -> None:
    """Refuse a secret key file that other users could read or change.

    Raises:
        ConfigError: the file is missing, or its mode grants group or other any access.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(f"secret key file {path}: {exc.strerror or exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"secret key file {path} is accessible to other users (mode "
            f"{stat.S_IMODE(mode):04o}): run `chmod 600 {path}` (and make the catalogd "
            "user its owner)"
        )


def _check_not_writable_by_others(path: Path) -> None:
    mode = path.stat().st_mode
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"{path} is writable by other users (mode {stat.S_IMODE(mode):04o}), who could "
            f"add or replace allowed keys: run `chmod go-w {path}`"
        )


def load_server_keys(path: Path) -> ServerKeys:
    """The server's key pair from its secret certificate file, after :func:`check_secret_file`.

    Raises:
        ConfigError: unsafe permissions, unreadable, or no secret key in it.
    """
    check_secret_file(path)
    try:
        public, secret = load_certificate(path, need_secret=True)
    except InvalidRequestError as exc:
        raise ConfigError(f"secret key file: {exc}") from exc
    assert secret is not None
    return ServerKeys(public=public, secret=secret)


def load_directory(directory: Path) -> dict[bytes, str]:
    """The allowed public keys in ``directory``: Z85 key -> name (file name without ``.key``).

    Only ``*.key`` files count (a ``*.key_secret`` there is ignored: the server
    needs no client secrets). A file that is not a certificate is skipped.

    Raises:
        ConfigError: the directory cannot be read, or others may write it or a key
            file in it (whoever can add a key file gets in).
    """
    if not directory.is_dir():
        raise ConfigError(f"key directory {directory} does not exist")
    _check_not_writable_by_others(directory)
    try:
        paths = sorted(directory.glob(f"*{PUBLIC_SUFFIX}"))
    except OSError as exc:
        raise ConfigError(f"key directory {directory}: {exc.strerror or exc}") from exc
    keys: dict[bytes, str] = {}
    for path in paths:
        _check_not_writable_by_others(path)
        try:
            public, _ = load_certificate(path)
        except InvalidRequestError:
            continue
        keys[public] = path.name[: -len(PUBLIC_SUFFIX)]
    return keys
