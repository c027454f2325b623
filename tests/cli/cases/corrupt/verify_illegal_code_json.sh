# an illegal q8 code (-128) in row 0 of object q8: verify --json names object and check (1)
cp data/upstream/row_split.ninfer q8bad.ninfer || exit 99
# q8 object at payload offset 2048 (see its sidecar): code 0 of row 0 := 0x80 (-128)
printf '\200' | dd of=q8bad.ninfer bs=1 seek=$((4096 + 2048)) conv=notrunc status=none
ninfer-verify --json q8bad.ninfer
