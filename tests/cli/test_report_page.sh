#!/usr/bin/env bash
# The report page (docs/ninfer-inspect.md, "The report page") without a browser (the browser's
# view is test_report_browser.sh, the charts' bytes the golden case inspect/report_svg.sh): the
# page of a conversion report with budget figures is self-contained (one Content Security Policy
# that allows no script and no fetch; no <script>, no URL to load), has its three charts and one
# table row per object, and its CSS sort orders are, for every key and direction, the order Python
# sorts the report's own figures in; the same report gives the same bytes; names from the file
# (`<script>`, quotes, ampersands) are escaped everywhere; a report without budget figures says
# the chart needs them; ninfer-diff --json and ninfer-diff --html give pages of their pairs; bad
# reports (a member of the wrong type, not JSON, not a report) are refused naming the file and the
# member, with no page written and a previous page untouched; --html - writes standard output.
# usage: test_report_page.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

R=$data/report/budget.conversion.json
run 0 "$bin/ninfer-inspect" --report "$R" --html "$work/page.html"
check test ! -s "$work/out"
python3 - "$work/page.html" "$R" <<'EOF' && ok || bad "the page of a budget report"
import json, math, re, sys
page = open(sys.argv[1]).read()
rep = json.load(open(sys.argv[2]))
csp = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
assert csp == ["default-src 'none'; style-src 'unsafe-inline'"], csp
assert '<script' not in page.lower() and 'http://' not in page.replace('http://www.w3.org/2000/svg', '') \
    and 'https://' not in page and ' src=' not in page and 'url(' not in page, 'something to load'
assert page.count('<svg ') == 3 and page.count('</svg>') == 3
assert page.count('<rect class="cell"') == 4                      # 2 layers x 2 roles
assert page.count('<circle class="cand"') == len(rep['budget']['uniform']) + 1   # + the legend's
assert page.count('<path class="chosen"') == 2 and 'chosen allocation' in page
assert page.count('<rect class="bar') == 3                        # layers 0, 1 and "no layer"
rows = re.findall(r'<tr style="([^"]*)"><td>([^<]*)</td>', page)
objs = rep['objects']
assert [r[1] for r in rows] == [o['object'] for o in objs], rows
def layer(o):
    m = re.match(r'blk\.(\d+)\.', o['object'])
    return int(m.group(1)) if m else None
def bpw(o):
    return o['bytes'] * 8 / math.prod(o['shape'])
keys = [lambda o: o['object'], layer, bpw, lambda o: o['max_abs_error'], lambda o: o['rmse'],
        lambda o: math.inf if o['snr_db'] is None else o['snr_db'], lambda o: o.get('budget', {}).get('weighted_error')]
for k, f in enumerate(keys):
    for d in 'ad':
        place = [int(re.search(r'--%s%d:(\d+);' % (d, k), r[0]).group(1)) for r in rows]
        assert sorted(place) == list(range(len(objs))), (k, d, place)
        have = [i for i in range(len(objs)) if f(objs[i]) is not None]
        none = [i for i in range(len(objs)) if f(objs[i]) is None]
        want = sorted(have, key=lambda i: f(objs[i]), reverse=(d == 'd')) if d == 'a' else \
            sorted(have, key=lambda i: f(objs[i]), reverse=True)
        # stable sorts: ties keep the report's order (Python's reverse=True keeps it too)
        got = sorted(range(len(objs)), key=lambda i: place[i])
        assert got == want + none, (k, d, got, want + none)
EOF
run 0 "$bin/ninfer-inspect" --report "$R" --html "$work/again.html"
same "$work/page.html" "$work/again.html"
run 0 "$bin/ninfer-inspect" --report "$R" --html -
same "$work/out" "$work/page.html"

# --- hostile names: escaped in the title, the heatmap, the charts and the table
python3 - "$R" "$work/hostile.json" <<'EOF' || bad "hostile report"
import json, sys
j = json.load(open(sys.argv[1]))
j['output'] = '<script>alert("out")</script>'
j['objects'][0]['object'] = 'blk.0.<script>alert(1)</script>.weight'
j['objects'][1]['object'] = 'blk.0.ffn"&\'<b>.weight'
j['objects'][1]['format'] = '<img src=x onerror=alert(2)>'
j['budget']['uniform'][0]['format'] = '</svg><script>alert(3)</script>'
json.dump(j, open(sys.argv[2], 'w'))
EOF
run 0 "$bin/ninfer-inspect" --report "$work/hostile.json" --html "$work/hostile.html"
python3 - "$work/hostile.html" <<'EOF' && ok || bad "hostile names escaped"
import sys
p = open(sys.argv[1]).read()
assert '<script' not in p and '<img' not in p and '<b>' not in p and p.count('</svg>') == 3, 'raw markup'
assert 'blk.0.&lt;script&gt;alert(1)&lt;/script&gt;.weight' in p
assert 'ffn&quot;&amp;&#39;&lt;b&gt;.weight' in p and '&lt;img src=x onerror=alert(2)&gt;' in p
assert '<title>Conversion report: &lt;script&gt;alert(&quot;out&quot;)&lt;/script&gt;</title>' in p
EOF

# --- a report without budget figures (an older one: no report_version, no budget)
python3 - "$R" "$work/old.json" <<'EOF' || bad "old report"
import json, sys
j = json.load(open(sys.argv[1]))
del j['report_version'], j['budget']
for o in j['objects']:
    o.pop('budget', None)
json.dump(j, open(sys.argv[2], 'w'))
EOF
run 0 "$bin/ninfer-inspect" --report "$work/old.json" --html "$work/old.html"
contains "$work/old.html" "No budget figures: the size-against-error chart needs a report of a recipe with a budget"
check test "$(grep -c '^<svg ' "$work/old.html")" = 2

# --- comparisons: ninfer-diff --json through --report, and ninfer-diff --html
python3 "$top/tests/cli/gen_diff_sources.py" "$work/d" || bad "gen_diff_sources.py"
"$bin/ninfer-diff" "$work/d/moe/model.gguf" "$work/d/moe/hf" --json --imatrix "$work/d/moe/imatrix.gguf" \
    >"$work/diff.json"
run 0 "$bin/ninfer-inspect" --report "$work/diff.json" --html "$work/diff.html"
contains "$work/diff.html" "<h1>Comparison: $work/d/moe/model.gguf and $work/d/moe/hf</h1>"
contains "$work/diff.html" "<td>blk.0.ffn_down_exps.weight = model.layers.0.mlp.experts.1.down_proj.weight</td><td>F16</td>"
run 1 "$bin/ninfer-diff" "$work/d/moe/model.gguf" "$work/d/moe/hf" -q --html "$work/pairs.html" \
    --imatrix "$work/d/moe/imatrix.gguf"
check test "$(grep -c '^<tr style=' "$work/pairs.html")" = 3      # every pair, changed or not
contains "$work/pairs.html" "<td>blk.0.attn_q.weight = model.layers.0.self_attn.q_proj.weight</td><td>F32</td><td>0</td><td>32.000</td><td>0</td><td>0</td><td>exact</td><td>-</td>"
contains "$work/pairs.html" "<text class=\"tl\" transform=\"translate(102.0 "

# --- bad reports: refused by name, no page, a previous page untouched
cp "$work/page.html" "$work/keep.html"
bad_report() { # NAME PYTHON_EDIT MESSAGE
    python3 - "$R" "$work/$1.json" "$2" <<'EOF' || bad "edit $1"
import json, sys
j = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(j, open(sys.argv[2], 'w'))
EOF
    run 1 "$bin/ninfer-inspect" --report "$work/$1.json" --html "$work/keep.html"
    contains "$work/err" "$3"
    same "$work/keep.html" "$work/page.html"
}
bad_report shape "j['objects'][1]['shape'] = 'x'" "$work/shape.json: objects[1]: 'shape' is missing or not an array"
bad_report rmse "j['objects'][2]['rmse'] = '1'" "$work/rmse.json: objects[2]: 'rmse' is missing or not a number"
bad_report name "j['objects'][0]['object'] = 7" "$work/name.json: objects[0]: 'object' is missing or not a string"
bad_report noobj "del j['objects']" "$work/noobj.json: no 'objects' array: not a conversion report"
bad_report version "j['report_version'] = 'one'" "$work/version.json: 'report_version' is not a version number"
bad_report uniform "j['budget']['uniform'][0] = 3" "budget.uniform: an entry without format"
bad_report negative "j['objects'][2]['rmse'] = -1" "$work/negative.json: objects[2]: 'rmse' is negative"
bad_report format "j['objects'][0]['format'] = 7" "$work/format.json: objects[0]: 'format' is not a string"
bad_report huge "j['objects'][0]['shape'] = [2**32, 2**32, 2]" "$work/huge.json: objects[0]: 'shape' has more values than 2^64"
bad_report output "j['output'] = ['x']" "$work/output.json: 'output' is not a string"
bad_report unilist "j['budget']['uniform'] = 'x'" "$work/unilist.json: 'budget.uniform' is not an array"
bad_report unineg "j['budget']['uniform'][1]['estimated_error'] = -3" "estimated_error (numbers >= 0)"

# --- charts of awkward figures: errors of 1e-14 on a linear axis have a handful of ticks, all
# on the chart; an error of 0 beside others spanning a log axis is said, not dropped
python3 - "$R" "$work/tiny.json" "$work/zero.json" <<'EOF' || bad "awkward reports"
import json, sys
j = json.load(open(sys.argv[1]))
for k, u in enumerate(j['budget']['uniform']):
    u['estimated_error'] = (1 + k % 3) * 1e-14
j['budget']['estimated_error'] = 2e-14
json.dump(j, open(sys.argv[2], 'w'))
j = json.load(open(sys.argv[1]))
j['budget']['uniform'][0]['estimated_error'] = 0
json.dump(j, open(sys.argv[3], 'w'))
EOF
run 0 "$bin/ninfer-inspect" --report "$work/tiny.json" --html "$work/tiny.html"
python3 - "$work/tiny.html" <<'EOF' && ok || bad "the axis of tiny errors"
import re, sys
svg = re.search(r'<svg class="scatter".*?</svg>', open(sys.argv[1]).read(), re.S).group(0)
ys = [float(y) for y in re.findall(r'<text class="tl" x="[^"]*" y="([^"]*)" text-anchor="end">', svg)]
assert 2 <= len(ys) <= 12 and all(0 <= y <= 390 for y in ys), ys
labels = re.findall(r'text-anchor="end">([^<]*)</text>', svg)
assert len(set(labels)) == len(labels), labels     # no two ticks called the same
EOF
run 0 "$bin/ninfer-inspect" --report "$work/zero.json" --html "$work/zero.html"
contains "$work/zero.html" "1 point of error 0 not on the log axis"
printf '{"objects": [' >"$work/cut.json"
run 1 "$bin/ninfer-inspect" --report "$work/cut.json" --html "$work/keep.html"
contains "$work/err" "$work/cut.json: line 1 column"
same "$work/keep.html" "$work/page.html"
run 3 "$bin/ninfer-inspect" --report "$work/none.json" --html "$work/keep.html"
contains "$work/err" "none.json: not a regular file"
mkdir "$work/dir.html"
run 2 "$bin/ninfer-inspect" --report "$R" --html "$work/dir.html"
check test -d "$work/dir.html"

finish report_page
