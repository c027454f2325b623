# usage: --summary totals an artifact's objects; a checkpoint's summary has its totals per dtype
ninfer-inspect data/gguf/q8_0.gguf --summary
