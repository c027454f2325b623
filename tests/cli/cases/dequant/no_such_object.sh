# invalid input (1): no such object
ninfer-dequant data/upstream/direct.ninfer no/such
