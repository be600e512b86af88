#!/bin/sh
# The relative-path child: `./ours.sh` from a scenario in its own folder.
# Admits everything (a short run).
read hello
echo "ratelab-exec 1 ok"
while read cmd seq n rest; do
  [ "$cmd" = end ] && exit 0
  line=""
  i=0
  while [ $i -lt "$n" ]; do line="$line 1"; i=$((i + 1)); done
  echo $line
done
