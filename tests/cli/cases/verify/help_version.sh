# --help (its first line) and --version
ninfer-verify --help | head -1 && ninfer-verify --version
