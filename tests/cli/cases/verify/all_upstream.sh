# migrated from tests/cli/golden/verify_all.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-verify container_small.ninfer direct.ninfer row_split.ninfer nvfp4.ninfer fp8_row.ninfer gguf.ninfer model.ninfer split.ninfer wide_directory.ninfer
