# the first line of each command's --help through the dispatcher
for p in convert inspect verify dequant diff; do ninfer $p --help | head -1 || exit; done
