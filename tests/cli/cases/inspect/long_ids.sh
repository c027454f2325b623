# success: a tensor id far longer than any fixed column widens the id column of the objects table,
# the checkpoint's tensor table and the --dry-run table; the other columns stay aligned
python3 - <<'PY' || exit 99
import json, struct
names = ['model.layers.0.self_attn.a_rather_long_projection_name_from_some_exporter.weight', 'n']
header, data, off = {}, b'', 0
for n in names:
    header[n] = {'dtype': 'F32', 'shape': [2, 32], 'data_offsets': [off, off + 256]}
    data += struct.pack('<64f', *[(i - 32) / 16 for i in range(64)])
    off += 256
h = json.dumps(header).encode()
h += b' ' * (-len(h) % 8)
open('long.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + data)
PY
ninfer-inspect long.safetensors | sed -n '/^tensors/,$p'
ninfer-convert long.safetensors -o m.ninfer --format q8_g32_fp16 --dry-run || exit
ninfer-convert long.safetensors -o m.ninfer --format q8_g32_fp16 --artifact-id 0123456789abcdef0123456789abcdef --no-report -q || exit 99
ninfer-inspect m.ninfer --objects
