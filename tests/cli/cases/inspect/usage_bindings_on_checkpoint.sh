# usage error (2): an artifact-only view on a checkpoint
ninfer-inspect data/gguf/q8_0.gguf --bindings
