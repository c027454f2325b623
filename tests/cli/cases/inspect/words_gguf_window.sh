# migrated from tests/cli/golden/words_gguf.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect gguf.ninfer --words gguf/q8_0 --rows 0:1 --cols 0:64
