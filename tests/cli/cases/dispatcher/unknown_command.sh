# usage error (2): an unknown COMMAND
ninfer frobnicate
