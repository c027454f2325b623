# a report of a newer schema is refused, naming the file and the versions (exit 1, no page)
sed 's/"report_version":1/"report_version":2/' data/report/budget.conversion.json > newer.json
ninfer-inspect --report newer.json --html page.html
echo "exit $?"
test -e page.html && echo "a page was written"
true
