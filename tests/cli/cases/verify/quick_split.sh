# success: --quick on a split artifact
cd data/upstream || exit 99
ninfer-verify --quick split.ninfer
