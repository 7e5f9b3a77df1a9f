"""Who may read the catalog and who may change it: CURVE keys, ZAP, exposure rules.

* :mod:`~catalogd.security.keys` -- key files: generate, load, permission checks;
* :mod:`~catalogd.security.authenticator` -- the ZAP handler thread, one key
  directory per ZAP domain (``subscribers``, ``admin``), failures counted and logged;
* :mod:`~catalogd.security.curve` -- a server socket's CURVE options and the
  User-Id (key name) of a received message;
* :mod:`~catalogd.security.contexts` -- ending the CURVE context within a bound
  (libzmq can fail to reap a socket there);
* :mod:`~catalogd.security.policy` -- pure: may catalogd bind these addresses
  with this configuration?
* :mod:`~catalogd.security.cli` -- ``catalogd keys generate``.

Nothing here implements cryptography: libzmq's CURVE does, pyzmq's ``zmq.auth``
reads the certificates and runs ZAP. See docs/DESIGN.md, "Security".
"""
