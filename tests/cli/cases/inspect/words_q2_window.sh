# migrated from tests/cli/golden/words_q2.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect row_split.ninfer --words q2 --rows 1:2 --cols 60:65
