#!/bin/bash
# Runs the Array API conformance suite (data-apis/array-api-tests) on one namespace, one test
# file at a time, so JAX and tracejit can be compared under identical settings.
#   tools/array_api.sh SUITE_DIR MODULE OUT_DIR [test_file ...]
#   e.g. tools/array_api.sh ../array-api-tests tracejit.numpy /tmp/aat_tj
#        tools/array_api.sh ../array-api-tests jax.numpy /tmp/aat_jax
# Settings (the same for every module): 10 examples per test, derandomized (fixed examples),
# no deadline (timings on a loaded machine mean nothing), API version 2024.12.
# Summarise with: python tools/array_api_summary.py OUT_DIR [OUT_DIR2]
set -u
suite=$(cd "$1" && pwd); module=$2; out=$(mkdir -p "$3" && cd "$3" && pwd); shift 3
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=($(cd "$suite/array_api_tests" && ls test_*.py))
fi
export ARRAY_API_TESTS_MODULE=$module ARRAY_API_TESTS_VERSION=2024.12
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
cd "$suite"
for f in "${files[@]}"; do
    name=${f%.py}
    timeout "${AAT_TIMEOUT:-3600}" "$python" -m pytest "array_api_tests/$f" -q \
        -p no:cacheprovider -p no:randomly -o addopts="" --disable-warnings \
        --max-examples="${AAT_EXAMPLES:-10}" --derandomize --disable-deadline \
        --json-report --json-report-file="$out/$name.json" > "$out/$name.txt" 2>&1
    echo "$name: $(tail -1 "$out/$name.txt")"
done
