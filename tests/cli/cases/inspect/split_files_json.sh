# migrated from tests/cli/golden/inspect_split_files.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect split.ninfer --files --json
