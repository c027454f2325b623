# success: rows as text (bf16 specials: -0, nan, a subnormal)
ninfer-dequant data/upstream/direct.ninfer bf16/matrix --format text --rows 0:2
