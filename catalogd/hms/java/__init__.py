"""Java sources catalogd compiles at run time against the HMS jars (package data).

``CatalogdNotificationListener.java`` (:mod:`catalogd.hms.listener`) and
``LoopbackAgent.java`` (:mod:`catalogd.hms.embedded.bind`); both are built by
:func:`catalogd.hms.javac.compiled_jar`.
"""
