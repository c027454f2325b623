# success: the summary of a tiny generated checkpoint directory
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-inspect ck
