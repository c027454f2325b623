#!/usr/bin/env bash
# The conversion report is written as it is built, one compact object record per line, and
# carries no second copy of the per-object provenance (docs/security.md 7.1, F11: a 300,000-tensor conversion
# wrote a 147 MB indented report holding every object's method, parameters and sources twice).
# Nothing is lost: each record has its sources, method, method_parameters, format, layout,
# shape, bytes and statistics, and they agree with the artifact's own provenance; the report's
# provenance keeps the converter, the recipe and the sources.
# usage: test_outputs_report.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" >/dev/null || { echo "FAIL generator"; exit 1; }
run 0 "$bin/ninfer-convert" -r "$top/recipes/demo.yaml" --source base="$ck" -o "$work/m.ninfer"
run 0 "$bin/ninfer-inspect" "$work/m.ninfer" --json
cp "$work/out" "$work/inspect.json"
python3 - "$work/m.ninfer.conversion.json" "$work/inspect.json" <<'PY' && ok || bad "report layout or content"
import json, sys
text = open(sys.argv[1]).read()
r = json.loads(text)
art = json.load(open(sys.argv[2]))
assert list(r) == ['report_version', 'output', 'name', 'recipe', 'provenance', 'objects', 'artifact_id', 'threads',
                   'chunk_values'], list(r)
assert r['report_version'] == 1
prov = art['provenance']
assert r['provenance'] == {k: v for k, v in prov.items() if k != 'objects'}, 'provenance without its objects'
assert r['artifact_id'] == art['artifact_id']
tensors = [o['id'] for o in art['objects'] if o['kind'] == 'tensor']
assert [o['object'] for o in r['objects']] == tensors
for o in r['objects']:
    p = prov['objects'][o['object']]
    assert o['method'] == p['method'] and o['method_parameters'] == p['with'] and o['sources'] == p['sources'], o
    a = next(x for x in art['objects'] if x['id'] == o['object'])
    assert (o['format'], o['layout'], o['shape'], o['bytes']) == (a['format'], a['layout'], a['shape'], a['bytes'])
    assert 'values_compared' in o and 'rmse' in o
# compact: one line per object record, plus the lines before and after them
lines = text.rstrip('\n').split('\n')
assert len(lines) == len(r['objects']) + 2, len(lines)
assert all(json.loads(l.rstrip(',')) == o for l, o in zip(lines[1:-1], r['objects']))
assert ': ' not in lines[0] and '\n ' not in text
PY

finish "outputs report"
