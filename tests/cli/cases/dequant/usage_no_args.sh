# usage error (2): no FILE and ID
ninfer-dequant
