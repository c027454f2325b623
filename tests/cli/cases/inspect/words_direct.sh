# migrated from tests/cli/golden/words_direct.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect direct.ninfer --words bf16/matrix
