"""subscriber: keeps a versioned local copy of the catalogd catalog inside a Spark driver.

Installs with pyzmq and thriftpy2 only.
"""
