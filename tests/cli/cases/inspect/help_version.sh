# --help (its first line) and --version
ninfer-inspect --help | head -1 && ninfer-inspect --version
