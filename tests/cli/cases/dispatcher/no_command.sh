# usage error (2): no COMMAND (the usage goes to stderr)
ninfer
