#!/bin/bash
export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
HERE=$(cd "$(dirname "$0")" && pwd)
exec taskset -c 0 $JAVA_HOME/bin/java -Dtrial.run=$HERE/run $DOPTS -cp "$HERE/target/classes:$HERE/target/lib/*" trial.Driver "$@"
