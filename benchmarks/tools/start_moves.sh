#!/bin/sh
# benchmarks/tools/start_moves.sh RUN.log: the phase-2 step at which the curriculum's start first reached each demo step
tr '\r' '\n' < "$1" | grep -o "] *[0-9]*/[0-9]* steps.*start *[0-9]*/[0-9]*" | awk '{split($2,a,"/"); for(i=1;i<=NF;i++) if($i=="start"){split($(i+1),b,"/"); s=b[1]}; if(s!=last){print a[1], s; last=s}}'
