#!/bin/bash
# Runs the Array API conformance suite (data-apis/array-api-tests) on one namespace, one test
# file at a time, so JAX and tracejit can be compared under identical settings.
#   tools/array_api.sh SUITE_DIR MODULE OUT_DIR [test_file ...]
#   e.g. tools/array_api.sh ../array-api-tests tracejit.numpy /tmp/aat_tj
#        tools/array_api.sh ../array-api-tests jax.numpy /tmp/aat_jax
# Settings (the same for every module): 64-bit dtypes on (JAX_ENABLE_X64=1, as JAX's own CI
# runs the suite: the standard's default integer is int64), $AAT_EXAMPLES (5) examples per
# test, derandomized (fixed examples), no deadline (timings on a loaded machine mean nothing),
# API version 2024.12. Files run in order of test count (most first) unless named.
# Summarise with: python tools/array_api_summary.py OUT_DIR [OUT_DIR2]
set -u
suite=$(cd "$1" && pwd); module=$2; out=$(mkdir -p "$3" && cd "$3" && pwd); shift 3
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python}
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=(test_has_names.py test_signatures.py test_special_cases.py
           test_operators_and_elementwise_functions.py test_data_type_functions.py
           test_linalg.py test_array_object.py test_fft.py test_creation_functions.py
           test_manipulation_functions.py test_statistical_functions.py
           test_searching_functions.py test_set_functions.py test_constants.py
           test_utility_functions.py test_inspection_functions.py test_dlpack.py
           test_sorting_functions.py test_indexing_functions.py)
fi
export ARRAY_API_TESTS_MODULE=$module ARRAY_API_TESTS_VERSION=2024.12 JAX_ENABLE_X64=1
export PYTHONPATH=$repo${PYTHONPATH:+:$PYTHONPATH}
cd "$suite"
for f in "${files[@]}"; do
    name=${f%.py}
    timeout "${AAT_TIMEOUT:-3600}" "$python" -m pytest "array_api_tests/$f" -q \
        -p no:cacheprovider -p no:randomly -o addopts="" --disable-warnings \
        --max-examples="${AAT_EXAMPLES:-5}" --derandomize --disable-deadline \
        --json-report --json-report-file="$out/$name.json" > "$out/$name.txt" 2>&1
    echo "$name: $(tail -1 "$out/$name.txt")"
done
