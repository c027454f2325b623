# success (0): --list-methods prints every method name, one a line, and converts nothing
ninfer-convert --list-methods
