# migrated from tests/cli/golden/tensor_q5.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect row_split.ninfer --tensor q5 --stats
