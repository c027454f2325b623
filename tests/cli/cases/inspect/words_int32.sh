# success: int32 words are two's-complement integers: hex and signed value, and signed in --json
cd data/upstream || exit 99
ninfer-inspect direct.ninfer --words int32/matrix && ninfer-inspect direct.ninfer --words int32/matrix --json
