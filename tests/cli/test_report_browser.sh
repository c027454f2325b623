#!/usr/bin/env bash
# The report page in a real browser (docs/ninfer-inspect.md, "The report page"): Debian's
# headless Chromium, installed by the test when it is missing and the test runs as root (else
# SKIP, with why), loads the page of the budget report fixture and of a comparison with no
# console message at all (no script error, no resource the page's Content Security Policy had to
# block: a control page with one of each shows the check catching them), with JavaScript off;
# the rendered DOM holds the three charts with their elements and texts; a screenshot is taken
# (kept as build/test-artifacts/report_page.png, the path printed); and the table's CSS sort is
# checked where it happens, in the layout: a copy of the page with the "RMSE, descending" control
# checked and a probe script added (the page itself has none) reads the rows' order on screen.
# Chromium runs headless, one page at a time, each run ending by itself (a timeout kills it).
# usage: test_report_browser.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

skip() { echo "SKIP $*"; exit 0; }
# the sanitized suite (tests/CMakeLists.txt) checks the page's bytes under ASan through
# test_report_page.sh and the golden case; the browser reads the same bytes in the plain run
case "${NINFER_TEST_CFLAGS:-}" in
*-fsanitize*) skip "sanitized suite: the browser sees the bytes test_report_page.sh checks, in the plain run" ;;
esac
chromium=$(command -v chromium || true)
if [ -z "$chromium" ]; then
    [ "$(id -u)" = 0 ] || skip "Chromium is not installed and this is not root: apt-get install chromium to run this test"
    inst() {
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends \
            chromium >"$work/apt.log" 2>&1
    }
    inst || { apt-get -o DPkg::Lock::Timeout=600 update >>"$work/apt.log" 2>&1 && inst; } ||
        skip "apt-get install chromium failed: $(tail -n 3 "$work/apt.log" | tr '\n' ' ')"
    chromium=$(command -v chromium) || skip "apt-get installed no chromium command"
fi
echo "browser: $("$chromium" --version 2>/dev/null | head -1)"

# browse MODE FILE OUT: headless Chromium on file://FILE (MODE dom: the DOM after load into OUT;
# shot: a 1200x2000 screenshot into OUT); its log into OUT.log.  Pages run with JavaScript off (a
# profile whose content setting blocks it: the switch --blink-settings=scriptEnabled=false stops
# --dump-dom and --screenshot too); JS=1 (the control, the probe) turns it on.
mkdir -p "$work/js-off/Default" "$work/js-on"
echo '{"profile":{"default_content_setting_values":{"javascript":2}}}' >"$work/js-off/Default/Preferences"
browse() {
    local mode=$1 file=$2 out=$3 profile=$work/js-off
    [ "${JS:-0}" = 1 ] && profile=$work/js-on
    local args=(--headless --no-sandbox --disable-gpu --no-first-run --disable-extensions
        --user-data-dir="$profile" --enable-logging=stderr --v=0)
    if [ "$mode" = dom ]; then
        timeout 120 "$chromium" "${args[@]}" --dump-dom "file://$file" >"$out" 2>"$out.log"
    else
        timeout 120 "$chromium" "${args[@]}" --hide-scrollbars --window-size=1200,2000 --screenshot="$out" \
            "file://$file" >/dev/null 2>"$out.log"
    fi
}
# console OUT.log: the console messages Chromium logged (any at all is a failure for our pages)
console() { grep ':CONSOLE' "$1" || true; }

"$bin/ninfer-inspect" --report "$data/report/budget.conversion.json" --html "$work/page.html" || bad "page"

# --- the control: a script error and a blocked image under the page's own policy are caught
cat >"$work/control.html" <<'EOF'
<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
</head><body><p>control</p><script>undefined_function();</script><img src="http://192.0.2.1/x.png" alt=""></body></html>
EOF
JS=1 browse dom "$work/control.html" "$work/control.dom"
check test "$(console "$work/control.dom.log" | grep -c 'violates the following Content Security Policy')" -ge 2

# --- the page, JavaScript off: loads without a console message; its charts as rendered
# (a script would not run here: the control above shows what one would log with it on)
browse dom "$work/page.html" "$work/page.dom" || bad "chromium --dump-dom: $(tail -3 "$work/page.dom.log")"
check test -z "$(console "$work/page.dom.log")"
python3 - "$work/page.dom" "$data/report/budget.conversion.json" <<'EOF' && ok || bad "the rendered page"
import json, re, sys
dom = open(sys.argv[1]).read()
uniform = len(json.load(open(sys.argv[2]))['budget']['uniform'])
assert len(re.findall(r'<svg ', dom)) == 3, 'svg count'
assert len(re.findall(r'<rect class="cell"', dom)) == 4 and len(re.findall(r'<rect class="bar', dom)) == 3
assert len(re.findall(r'<circle class="cand"', dom)) == uniform + 1 and len(re.findall(r'<path class="chosen"', dom)) == 2
texts = re.findall(r'<text[^>]*>([^<]*)</text>', dom)
for want in ('layer', 'attn.weight', 'ffn.weight', '22.3', '45.4', '6.2', '24.5', 'chosen allocation',
             'bits per weight (the budget\'s tensors)', 'estimated weighted squared error (log)',
             'the chosen allocation', 'every tensor in one candidate', 'bits per weight', '1e+04'):
    assert want in texts, (want, texts)
assert len(re.findall(r'<tr style=', dom)) == 5
EOF

# --- a screenshot, kept for people to look at
shots=$bin/../test-artifacts
mkdir -p "$shots"
browse shot "$work/page.html" "$shots/report_page.png" || bad "chromium --screenshot: $(tail -3 "$shots/report_page.png.log")"
check test -z "$(console "$shots/report_page.png.log")"
python3 - "$shots/report_page.png" <<'EOF' && ok || bad "the screenshot"
import struct, sys
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'\x89PNG\r\n\x1a\n' and b[12:16] == b'IHDR', 'not a PNG'
w, h = struct.unpack('>II', b[16:24])
assert (w, h) == (1200, 2000), (w, h)
assert len(b) > 20000, len(b)    # a blank page compresses to a few kB
EOF
rm -f "$shots/report_page.png.log"
echo "screenshot: $(cd "$shots" && pwd)/report_page.png"

# --- the table's sort, in the layout: RMSE descending, as Python orders the report
sed -e 's|<meta http-equiv="Content-Security-Policy"[^>]*>||' \
    -e 's|id="k-" checked|id="k-"|' -e 's|id="k4d">|id="k4d" checked>|' \
    -e 's|</body>|<script>document.body.setAttribute("data-order", [...document.querySelectorAll("table.t tbody tr")].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top).map(r => r.cells[0].textContent).join("\|"))</script></body>|' \
    "$work/page.html" >"$work/probe.html"
JS=1 browse dom "$work/probe.html" "$work/probe.dom"
python3 - "$work/probe.dom" "$data/report/budget.conversion.json" <<'EOF' && ok || bad "the CSS sort in the browser"
import json, re, sys
got = re.search(r'data-order="([^"]*)"', open(sys.argv[1]).read()).group(1).split('|')
objs = json.load(open(sys.argv[2]))['objects']
want = [o['object'] for o in sorted(objs, key=lambda o: o['rmse'], reverse=True)]
assert got == want, (got, want)
EOF

# --- a comparison's page loads as cleanly
python3 "$top/tests/cli/gen_diff_sources.py" "$work/d" || bad "gen_diff_sources.py"
"$bin/ninfer-diff" "$work/d/llama/model.gguf" "$work/d/llama/hf" -q --html "$work/diff.html"
browse dom "$work/diff.html" "$work/diff.dom"
check test -z "$(console "$work/diff.dom.log")"
check test "$(grep -c '<svg ' "$work/diff.dom")" = 2
contains "$work/diff.dom" "No budget figures"

finish report_browser
