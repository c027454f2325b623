# a split artifact without one of its parts (1)
cp data/upstream/split.ninfer* . || exit 99
rm split.ninfer.part-0002
ninfer-verify split.ninfer
