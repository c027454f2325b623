# migrated from tests/cli/golden/inspect_container_small.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect container_small.ninfer
