#!/bin/sh
# Writes a marker file (argv[1]) as soon as it starts, then speaks the
# protocol admitting everything: a scenario refused before any child starts
# leaves no marker.
echo started > "$1"
read hello
echo "ratelab-exec 1 ok"
while read cmd seq n rest; do
  [ "$cmd" = end ] && exit 0
  line=""
  i=0
  while [ $i -lt "$n" ]; do line="$line 1"; i=$((i + 1)); done
  echo $line
done
