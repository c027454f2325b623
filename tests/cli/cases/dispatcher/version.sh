# ninfer --version and a command's --version through it
ninfer --version && ninfer inspect --version
