# migrated from tests/cli/golden/words_fp8_json.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect fp8_row.ninfer --words fp8/fp16_vector --json
