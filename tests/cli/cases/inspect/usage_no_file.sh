# usage error (2): no FILE
ninfer-inspect
