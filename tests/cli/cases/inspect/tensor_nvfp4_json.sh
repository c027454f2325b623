# migrated from tests/cli/golden/tensor_nvfp4_json.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect nvfp4.ninfer --tensor nvfp4/stacked --json
