# the report page's three charts for a fixed conversion report with budget figures (golden SVGs)
ninfer-inspect --report data/report/budget.conversion.json --html page.html
sed -n '/^<svg/,/^<\/svg>/p' page.html
