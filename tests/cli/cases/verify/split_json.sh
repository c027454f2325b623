# migrated from tests/cli/golden/verify_json.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-verify --json split.ninfer
