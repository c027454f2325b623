# migrated from tests/cli/golden/words_nvfp4.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect nvfp4.ninfer --words nvfp4/stacked --rows 127:129 --cols 0:20
