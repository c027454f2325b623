# migrated from tests/cli/golden/inspect_model_sections.out (test_programs.sh)
cd data/upstream || exit 99
ninfer-inspect model.ninfer --bindings --uses
