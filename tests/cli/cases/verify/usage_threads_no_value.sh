# usage error (2): --threads without its value
ninfer-verify data/upstream/direct.ninfer --threads
