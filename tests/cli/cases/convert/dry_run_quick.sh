# success: --dry-run of quick mode prints the plan and writes nothing
ninfer-gen-checkpoint ck --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null || exit 99
ninfer-convert ck -o m.ninfer --format q8_g32_fp16 --dry-run && ls
