# invalid input (1): no such object
ninfer-inspect data/upstream/direct.ninfer --tensor no/such/object
