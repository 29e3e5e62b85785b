#!/bin/bash
# usage: run.sh EXPERIMENT-COMMAND...   (starts b1, b2, frontend; runs the command; stops them)
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
HERE=$(cd "$(dirname "$0")" && pwd)
J="$JAVA_HOME/bin/java -Dtrial.run=$HERE/run --add-opens java.base/java.lang=ALL-UNNAMED --enable-native-access=ALL-UNNAMED -cp $HERE/target/classes:$HERE/target/lib/*"
R=$HERE/run
rm -f $R/*.stats $R/*.sessions
B1WORK=${B1WORK:-250}; B2WORK=${B2WORK:-250}; FWORK=${FWORK:-50}
taskset -c 1 $J trial.Backend b1 7101 $B1WORK ${BSLO:-5} > $R/b1.log 2>&1 & P1=$!
taskset -c 1 $J trial.Backend b2 7102 $B2WORK ${BSLO:-5} > $R/b2.log 2>&1 & P2=$!
sleep 2
taskset -c 0 $J $FOPTS trial.Frontend 7000 ${FSLO:-10} localhost:7101,localhost:7102 $FWORK > $R/frontend.log 2>&1 & PF=$!
for i in $(seq 50); do grep -q listening $R/frontend.log 2>/dev/null && break; sleep 0.2; done
echo "pids b1=$P1 b2=$P2 frontend=$PF"
export P1 P2 PF J
bash -c "$*"
kill $PF; sleep 1; kill $P1 $P2; wait $PF $P1 $P2 2>/dev/null
echo "--- logs"; grep -v '^cpu' $R/frontend.log | tail -5; tail -n 3 $R/b1.log $R/b2.log
