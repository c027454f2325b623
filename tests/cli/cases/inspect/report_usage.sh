# --report and --html go together, alone
ninfer-inspect --report data/report/budget.conversion.json
echo "exit $?"
ninfer-inspect --report data/report/budget.conversion.json --html p.html some.ninfer
echo "exit $?"
ninfer-inspect --report data/report/budget.conversion.json --html p.html --json
