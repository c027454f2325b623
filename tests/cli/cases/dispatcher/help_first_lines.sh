# the first line of each command's --help through the dispatcher
for p in convert inspect verify dequant; do ninfer $p --help | head -1 || exit; done
